/**
 * @module Workloads held stopped by a remote `stop` (`outpost edge action NAME stop W`) until a
 * remote `start`, kept in `DATA/held-stopped.json` so the order survives an agent restart (even a
 * kill -9): without it a restarted agent would start the workload again on its first pass.
 *
 * Why a file of its own and not the replica: the order comes from the hub, over the tunnel, and is
 * not a local intent. The spec document is the hub's to write (an edge change there is a write
 * violation), and the report document syncs to the hub, where an entry would read as a site's own
 * pause and be merged as one. A small local file, written atomically (temp file, fsync, rename),
 * says exactly what it is.
 *
 * @example
 * const held = await HeldStopped.load(path.join(dataDir, 'held-stopped.json'));
 * await held.add('web'); // persisted before it resolves
 */
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { isValidName } from '../core/ids.js';
import { createLogger } from '../core/logger.js';

const log = createLogger('edge:reconciler');

const FileSchema = z.object({
  version: z.literal(1),
  workloads: z.array(z.string().refine(isValidName, 'not a workload name')),
});

export class HeldStopped {
  private readonly names: Set<string>;
  private writes: Promise<void> = Promise.resolve();

  /** `file` undefined: in memory only (tests of the reconciler alone). */
  private constructor(
    private readonly file: string | undefined,
    names: Iterable<string> = [],
  ) {
    this.names = new Set(names);
  }

  static inMemory(): HeldStopped {
    return new HeldStopped(undefined);
  }

  /**
   * Reads the file; a missing one is an empty set. An unreadable one is logged and treated as
   * empty: refusing to start the agent would be worse than starting a workload someone stopped.
   */
  static async load(file: string): Promise<HeldStopped> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        log.error({ err, file }, 'cannot read the workloads held stopped by remote actions; they may start again');
      return new HeldStopped(file);
    }
    try {
      const parsed = FileSchema.parse(JSON.parse(text));
      return new HeldStopped(file, parsed.workloads);
    } catch (err) {
      log.error(
        { err, file },
        'the file of workloads held stopped by remote actions is malformed; ignoring it (remove it, then stop them again)',
      );
      return new HeldStopped(file);
    }
  }

  has(name: string): boolean {
    return this.names.has(name);
  }

  get size(): number {
    return this.names.size;
  }

  [Symbol.iterator](): IterableIterator<string> {
    return this.names.values();
  }

  /** Holds `name` stopped; resolves once that is on disk. If it cannot be written, nothing changed. */
  async add(name: string): Promise<void> {
    if (this.names.has(name)) return this.writes;
    this.names.add(name);
    try {
      await this.persist();
    } catch (err) {
      this.names.delete(name);
      throw err;
    }
  }

  /** Lifts the hold; resolves once that is on disk. If it cannot be written, the hold stays. */
  async delete(name: string): Promise<void> {
    if (!this.names.delete(name)) return this.writes;
    try {
      await this.persist();
    } catch (err) {
      this.names.add(name);
      throw err;
    }
  }

  /** Writes are chained, each of the then-current set, so the last one on disk is the latest. */
  private persist(): Promise<void> {
    if (!this.file) return Promise.resolve();
    const file = this.file;
    const body = JSON.stringify({ version: 1, workloads: [...this.names].sort() }) + '\n';
    const next = this.writes.then(() => writeAtomically(file, body));
    // A failed write fails this caller; the chain goes on for the next one.
    this.writes = next.catch(() => undefined);
    return next;
  }
}

async function writeAtomically(file: string, body: string): Promise<void> {
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(body);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
    // The rename is durable only once the directory entry is on disk too (power loss, not just a crash).
    const dir = await open(dirname(file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  } catch (err) {
    await rm(tmp, { force: true });
    throw new Error(
      `writing ${file} (workloads held stopped by remote actions); check that the data directory is writable`,
      { cause: err },
    );
  }
}
