/**
 * @module The simulated fleet: worker processes (bench/edge-worker.ts), each holding a share of the
 * edges, driven over IPC. Edge names are `e-00001`...; edge i lives in worker i mod W.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './hub-process.js';
import { cpuMs, rssBytes } from './sys.js';

const WORKER = path.join(ROOT, 'bench/edge-worker.ts');

/**
 * Scheduling priority (nice) of the simulator workers: 10 by default, `BENCH_WORKER_NICE=0` to
 * run them at the hub's. Real edges run on their own machines; here they share two cores with the
 * hub under test, and at equal priority the kernel gave the hub about 1/9 of the CPU whenever the
 * 8 workers were busy (it showed 78 % of a core in a 10,000-edge fan-out while it alone was the
 * critical path). With the workers niced the hub runs whenever it has work, and the workers use
 * what is left; the CPU each side used is reported either way.
 */
const WORKER_NICE = Number(process.env.BENCH_WORKER_NICE ?? 10);

export function edgeNames(n: number, prefix = 'e'): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i + 1).padStart(5, '0')}`);
}

/** A bench child process driven over IPC: it sends `{ ready }`, then answers `{ op, rid }` with `{ rid, result | error }`. */
export class Worker {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  private rid = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  constructor(
    index: number,
    dir: string,
    env: Record<string, string>,
    logFile: string,
    script = WORKER,
    nice = WORKER_NICE,
  ) {
    const log = fs.openSync(logFile, 'a');
    this.child = fork(script, [], {
      // BENCH_WORKER_PROF_DIR: a V8 CPU profile of every simulator worker, written at its exit.
      execArgv: [
        '--import',
        'tsx',
        ...(process.env.BENCH_WORKER_PROF_DIR
          ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_WORKER_PROF_DIR]
          : []),
      ],
      env: {
        ...process.env,
        OUTPOST_LOG_LEVEL: 'warn',
        BENCH_WORKER_INDEX: String(index),
        BENCH_WORKER_DIR: dir,
        ...env,
      },
      stdio: ['ignore', log, log, 'ipc'],
    });
    fs.closeSync(log);
    if (nice && this.child.pid) {
      try {
        os.setPriority(this.child.pid, nice);
      } catch {
        /* not permitted here: the workers keep the hub's priority */
      }
    }
    this.ready = new Promise((resolve, reject) => {
      this.child.on('message', (m: { ready?: boolean; rid?: number; result?: unknown; error?: string }) => {
        if (m.ready) return resolve();
        const p = m.rid !== undefined ? this.pending.get(m.rid) : undefined;
        if (!p) return;
        this.pending.delete(m.rid!);
        if (m.error !== undefined) p.reject(new Error(`worker ${index}: ${m.error}`));
        else p.resolve(m.result);
      });
      this.child.once('exit', (code, sig) => {
        const err = new Error(`${path.basename(script)} ${index} exited (${code ?? sig}); its log: ${logFile}`);
        reject(err);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
      });
    });
  }

  call<T>(op: string, args: Record<string, unknown> = {}): Promise<T> {
    const rid = ++this.rid;
    return new Promise<T>((resolve, reject) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null)
        return reject(new Error('edge worker is not running'));
      this.pending.set(rid, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ ...args, op, rid });
    });
  }
}

export interface FleetOptions {
  edges: number;
  workers: number;
  dir: string;
  readyDelayMs: number;
  simStore?: 'memory' | 'file';
}

export interface SyncStatus {
  edges: number;
  connected: number;
  synced: number;
  syncedAt?: number[];
  session?: number[];
  socket?: number[];
}

export class Fleet {
  readonly names: string[];
  private readonly workers: Worker[] = [];

  constructor(private readonly opts: FleetOptions) {
    this.names = edgeNames(opts.edges);
    const perWorker = Math.ceil(opts.edges / opts.workers);
    // Estimated resident cost the store budgets per loaded document (sync/doc-cache.ts): keep every
    // edge's two documents loaded, as a real agent keeps its own.
    const budget = Math.max(256 * 1024 ** 2, perWorker * 2 * 110 * 1024);
    for (let i = 0; i < opts.workers; i++) {
      this.workers.push(
        new Worker(
          i,
          opts.dir,
          {
            BENCH_READY_DELAY_MS: String(opts.readyDelayMs),
            BENCH_STORE_BUDGET: String(budget),
            BENCH_WORKER_STORE: opts.simStore ?? 'file',
          },
          path.join(opts.dir, `worker-${i}.log`),
        ),
      );
    }
  }

  get pids(): number[] {
    return this.workers.map((w) => w.child.pid!);
  }

  workerOf(name: string): Worker {
    const i = Number(name.slice(name.lastIndexOf('-') + 1)) - 1;
    return this.workers[i % this.workers.length];
  }

  private byWorker(names: string[]): Map<Worker, string[]> {
    const m = new Map<Worker, string[]>();
    for (const n of names) {
      const w = this.workerOf(n);
      (m.get(w) ?? m.set(w, []).get(w)!).push(n);
    }
    return m;
  }

  /** Several hub URLs (replicas): edge k uses URL (k-1) mod R first and the others after it. */
  async start(hubUrls: string[]): Promise<void> {
    await Promise.all(this.workers.map((w) => w.ready));
    await this.all('init', { hubs: hubUrls });
  }

  all<T>(op: string, args: Record<string, unknown> = {}): Promise<T[]> {
    return Promise.all(this.workers.map((w) => w.call<T>(op, args)));
  }

  /** Runs `op` in each worker for its share of `names`. */
  each<T>(op: string, names: string[], args: Record<string, unknown> = {}): Promise<T[]> {
    return Promise.all([...this.byWorker(names)].map(([w, ns]) => w.call<T>(op, { ...args, names: ns })));
  }

  one<T>(name: string, op: string, args: Record<string, unknown> = {}): Promise<T> {
    return this.workerOf(name).call<T>(op, { ...args, name });
  }

  async enroll(joinToken: string, names = this.names): Promise<void> {
    const r = await this.each<{ enrolled: number; failed: { name: string; error: string }[] }>('enroll', names, {
      joinToken,
      concurrency: 4,
    });
    const failed = r.flatMap((x) => x.failed);
    if (failed.length)
      throw new Error(`enrollment failed for ${failed.length}+ edges, e.g. ${failed[0].name}: ${failed[0].error}`);
  }

  /** Connected and in-sync counts of every edge, or of `only` those. */
  async syncStatus(details = false, only?: string[]): Promise<SyncStatus> {
    const r = only
      ? await this.each<SyncStatus>('syncStatus', only, { details })
      : await this.all<SyncStatus>('syncStatus', { details });
    const out: SyncStatus = {
      edges: 0,
      connected: 0,
      synced: 0,
      ...(details ? { syncedAt: [], session: [], socket: [] } : {}),
    };
    for (const s of r) {
      out.edges += s.edges;
      out.connected += s.connected;
      out.synced += s.synced;
      if (details) {
        out.syncedAt!.push(...s.syncedAt!);
        out.session!.push(...s.session!);
        out.socket!.push(...s.socket!);
      }
    }
    return out;
  }

  /** The hub URL (ws://HOST:PORT/api/v1/sync) each connected edge's session runs on. */
  async servedBy(): Promise<Map<string, string>> {
    const m = new Map<string, string>();
    for (const part of await this.all<Record<string, string[]>>('servedBy'))
      for (const [url, names] of Object.entries(part)) for (const n of names) m.set(n, url);
    return m;
  }

  /** CPU time and RSS of every worker, from /proc. */
  usage(): { cpuMs: number[]; rss: number[] } {
    return { cpuMs: this.pids.map((p) => cpuMs(p) ?? 0), rss: this.pids.map((p) => rssBytes(p) ?? 0) };
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.workers.map(async (w) => {
        if (w.child.exitCode !== null || w.child.signalCode !== null) return;
        const exited = new Promise((r) => w.child.once('exit', r));
        await Promise.race([w.call('stop').catch(() => undefined), new Promise((r) => setTimeout(r, 8_000))]);
        const t = setTimeout(() => w.child.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(t);
      }),
    );
  }
}
