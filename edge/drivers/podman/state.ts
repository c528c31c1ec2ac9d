/**
 * @module What the podman driver remembers per workload in its data directory
 * (`podman/workloads/NAME.json`): the parts of the last applied unit that podman does not keep
 * (declared ports, readiness probes, stop grace, claims) and what podman cannot show because no
 * pod exists (a failed apply's message, a stop on request). Pod labels stay the source of truth
 * for what runs; a lost state file only loses those extras. Written atomically (tmp + rename).
 * No Secret data is stored here.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Probe } from './plan.js';

export interface PodmanWorkloadState {
  name: string;
  generation: number;
  hash: string;
  /** Set when the last apply of `hash` failed; the message users see. */
  error?: string;
  /** Wall clock of the last apply attempt, to pace retries of a failed one. */
  attemptedAt: number;
  /** Set by stopWorkload, cleared by startWorkload and by an apply that (re)creates pods. */
  stopped?: boolean;
  templates: { kind: string; name: string; replicas: number }[];
  ports: number[];
  graceSeconds: number;
  probes: Record<string, Probe>;
  claims: string[];
}

export class StateStore {
  constructor(readonly root: string) {}

  private file(name: string): string {
    return join(this.root, 'workloads', `${name}.json`);
  }

  volumeRoot(name: string, hash: string): string {
    return join(this.root, 'volumes', name, hash.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64));
  }

  volumesOf(name: string): string {
    return join(this.root, 'volumes', name);
  }

  /** A random id made once per data directory: the `outpost.dev/owner` label of our pods. */
  async owner(): Promise<string> {
    const file = join(this.root, 'owner');
    try {
      const id = (await readFile(file, 'utf8')).trim();
      if (/^[a-z0-9]{8,32}$/.test(id)) return id;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`reading ${file}`, { cause: err });
    }
    await mkdir(this.root, { recursive: true, mode: 0o700 });
    const id = randomBytes(6).toString('hex');
    await this.atomicWrite(file, `${id}\n`);
    return id;
  }

  async read(name: string): Promise<PodmanWorkloadState | undefined> {
    try {
      return JSON.parse(await readFile(this.file(name), 'utf8')) as PodmanWorkloadState;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(
        `reading podman driver state ${this.file(name)}; delete it to let the driver rebuild it from pod labels`,
        { cause: err },
      );
    }
  }

  async all(): Promise<PodmanWorkloadState[]> {
    let names: string[];
    try {
      names = await readdir(join(this.root, 'workloads'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: PodmanWorkloadState[] = [];
    for (const n of names) {
      if (!n.endsWith('.json')) continue;
      const s = await this.read(n.slice(0, -5));
      if (s) out.push(s);
    }
    return out;
  }

  async write(state: PodmanWorkloadState): Promise<void> {
    await mkdir(join(this.root, 'workloads'), { recursive: true, mode: 0o700 });
    await this.atomicWrite(this.file(state.name), JSON.stringify(state));
  }

  async delete(name: string): Promise<void> {
    await rm(this.file(name), { force: true });
    await rm(this.volumesOf(name), { recursive: true, force: true });
  }

  private async atomicWrite(file: string, text: string): Promise<void> {
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      await writeFile(tmp, text, { mode: 0o600 });
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true });
      throw new Error(`writing ${file}`, { cause: err });
    }
  }
}
