/**
 * @module What the kubernetes driver keeps in its data dir, one JSON file per workload. The live
 * objects and their labels are the truth for what runs and with which hash; this file only holds
 * what the cluster cannot: the last unit (to start a stopped workload again or recreate a
 * restarted Pod), the stop flag, the error of a unit that could not be applied, the newest
 * generation of an unchanged hash, and the extra kinds to look at when pruning.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { WorkloadUnit } from '../driver.js';

export interface WorkloadRecord {
  unit: WorkloadUnit;
  stopped: boolean;
  /** Why the last apply of `unit` failed; cleared by a successful apply. */
  error?: string;
  /** `apiVersion/Kind` of applied objects outside BASE_KINDS (CRDs, StatefulSets...). */
  extraKinds: string[];
}

export class StateDir {
  constructor(private readonly dir: string) {}

  private file(name: string): string {
    return join(this.dir, `${name}.json`);
  }

  async read(name: string): Promise<WorkloadRecord | undefined> {
    try {
      return JSON.parse(await readFile(this.file(name), 'utf8')) as WorkloadRecord;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(
        `reading driver state ${this.file(name)}; delete the file to let the driver rebuild it from the cluster`,
        { cause: err },
      );
    }
  }

  async all(): Promise<WorkloadRecord[]> {
    let names: string[];
    try {
      names = (await readdir(this.dir)).filter((f) => f.endsWith('.json'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: WorkloadRecord[] = [];
    for (const f of names) {
      const r = await this.read(f.slice(0, -5));
      if (r) out.push(r);
    }
    return out;
  }

  /** Write-then-rename so a crash mid-write leaves the old record, never half a file. */
  async write(rec: WorkloadRecord): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const tmp = `${this.file(rec.unit.name)}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(rec));
    await rename(tmp, this.file(rec.unit.name));
  }

  async delete(name: string): Promise<void> {
    await rm(this.file(name), { force: true });
  }
}
