/**
 * @module Files the workloads export (docs/data.md): each workload that declares
 * `data.outpost.dev/egress` gets an export directory per target in `DATA/data/export/<workload>/<target>`
 * (process driver: named by `OUTPOST_EXPORT_DIR`; podman and kubernetes: a hostPath volume mounted
 * at `source`). The agent scans them, copies each new or changed file into the blob store's
 * outbox (edge/blobs/: the existing transfer loop uploads it, resumable and deduplicated by
 * digest), and once the blob is on the hub records the file there (a `data-file` stream).
 *
 * A per-file ledger in the replica's SQLite (table `egress_files`, one transaction per write)
 * remembers what was queued and what the hub holds, by size and modification time: after a
 * restart nothing is uploaded twice and nothing is forgotten.
 *
 * Bound: the files of one target not yet on the hub may hold at most `maxBytes` on the edge.
 * A file that would pass it is refused (refuse-new): it stays in the export directory, untouched,
 * and is queued once the queue has drained, while the workload is reported Degraded with the reason.
 * Oldest-first was not chosen: it would drop data the workload meant to send, silently.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BlobDigest } from '../../core/blobs.js';
import { EGRESS_QUEUE_METRICS, EXPORT_DIR_ENV, egressOf, exportDirEnv, type EgressRule } from '../../core/data.js';
import type { DriverName } from '../../core/driver-kinds.js';
import { createLogger } from '../../core/logger.js';
import type { Manifest } from '../../core/resources.js';
import { cachedStatement, inTransaction, migrate, type SqliteDatabase } from '../../sync/sqlite.js';
import { nextMeta, type OpenStream } from '../../sync/transfer.js';
import { TunnelError } from '../../sync/tunnel.js';
import { buildInfo } from '../../core/version.js';
import { BlobBudgetError, type EdgeBlobStore } from '../blobs/store.js';
import type { EdgeTransfers } from '../blobs/transfers.js';
import { withPodAdditions } from './pod-additions.js';

const log = createLogger('edge:data');

/** How often export directories are scanned. */
export const EGRESS_SCAN_MS = 2_000;
/**
 * A file is taken once it has not been modified for this long: a workload writing a large file
 * is not caught half-way. (Writing to a dot-file and renaming it is instant and always safe:
 * names starting with `.` are never taken.)
 */
export const EGRESS_SETTLE_MS = 1_000;
const MEDIA_TYPE = 'application/octet-stream';

const MIGRATIONS = [
  {
    version: 1,
    sql: `
      CREATE TABLE egress_files (
        workload TEXT NOT NULL,
        target TEXT NOT NULL,
        -- TARGET/relative/path, as the hub lists it
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ms INTEGER NOT NULL,
        digest TEXT NOT NULL,
        -- queued: in the outbox or waiting to be recorded on the hub; done: the hub holds it
        state TEXT NOT NULL,
        mode TEXT NOT NULL,
        queued_at INTEGER NOT NULL,
        done_at INTEGER,
        PRIMARY KEY (workload, path)
      );
      CREATE INDEX egress_files_by_state ON egress_files (state, digest);
    `,
  },
];

interface Row {
  workload: string;
  target: string;
  path: string;
  size: number;
  mtime_ms: number;
  digest: BlobDigest;
  state: 'queued' | 'done';
  mode: 'copy' | 'move';
  queued_at: number;
  done_at: number | null;
}

/** A workload's upload state as the local API and the report show it. */
export interface EgressState {
  workload: string;
  queuedFiles: number;
  queuedBytes: number;
  doneFiles: number;
  /** Why the workload is Degraded (the bound reached, no room), if it is. */
  degraded?: string;
}

export interface EdgeEgressOptions {
  db: SqliteDatabase;
  dataDir: string;
  driver: DriverName;
  blobs: EdgeBlobStore;
  transfers: EdgeTransfers;
  open: OpenStream;
  connected: () => boolean;
  /** Called when a workload's Degraded reason appears or goes (the reconciler reports it). */
  onDegradedChange?: () => void;
  scanMs?: number;
  settleMs?: number;
}

export class EdgeEgress {
  private readonly db: SqliteDatabase;
  private readonly root: string;
  /** Rules per workload, from the manifests the reconciler last applied. */
  private readonly rules = new Map<string, EgressRule[]>();
  private readonly degradedBy = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private recording: Promise<void> | undefined;
  private recordAgain = false;
  private stopped = false;
  /** Completed scans since start: what a test or an operator waits on instead of a fixed time. */
  scans = 0;

  constructor(private readonly o: EdgeEgressOptions) {
    this.db = o.db;
    migrate(o.db, 'egress', MIGRATIONS, buildInfo().version);
    this.root = path.join(o.dataDir, 'data', 'export');
    o.transfers.on('sent', () => this.record());
  }

  start(): void {
    this.timer = setInterval(() => void this.scan(), this.o.scanMs ?? EGRESS_SCAN_MS);
    this.timer.unref();
    void this.releaseDone().then(() => this.scan());
  }

  /**
   * Blobs of files the hub already holds that are still in the store: an agent killed between
   * marking a file done and dropping its blob left them (release is the step after the commit).
   */
  private async releaseDone(): Promise<void> {
    const done = cachedStatement(
      this.db,
      "SELECT DISTINCT digest FROM egress_files WHERE state = 'done' AND digest NOT IN (SELECT digest FROM egress_files WHERE state = 'queued')",
    ).all() as { digest: BlobDigest }[];
    const outbox = new Set(this.o.blobs.outbox().map((o) => o.digest));
    for (const { digest } of done)
      if (!outbox.has(digest) && this.o.blobs.files.has(digest))
        await this.release(digest).catch((err: unknown) =>
          log.warn({ err, digest }, 'could not drop an uploaded blob'),
        );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.scanning;
    await this.recording;
  }

  exportDir(workload: string, target: string): string {
    return path.join(this.root, workload, target);
  }

  /**
   * The manifests the driver runs: each container gets `OUTPOST_EXPORT_DIR` (and one variable per
   * target); podman and kubernetes also get the directory as a hostPath volume at `source`. Called
   * by the reconciler for every desired workload on every pass (the result is deterministic, so
   * the content hash is stable and nothing restarts).
   */
  decorate(workload: string, manifests: Manifest[]): Manifest[] {
    const e = egressOf(manifests);
    if ('error' in e) {
      // The hub refuses these at apply; an override on site could still produce one.
      this.degradedBy.set(workload, e.error);
      this.rules.delete(workload);
      return manifests;
    }
    if (e.rules.length === 0) {
      this.rules.delete(workload);
      return manifests;
    }
    this.rules.set(workload, e.rules);
    for (const r of e.rules) fs.mkdirSync(this.exportDir(workload, r.target), { recursive: true, mode: 0o755 });
    return manifests.map((m) => this.decorateOne(workload, e.rules, m));
  }

  private decorateOne(workload: string, rules: EgressRule[], m: Manifest): Manifest {
    const process = this.o.driver === 'process';
    const dirOf = (r: EgressRule) => (process ? this.exportDir(workload, r.target) : r.source);
    return withPodAdditions(m, {
      env: [
        { name: EXPORT_DIR_ENV, value: dirOf(rules[0]!) },
        ...rules.map((r) => ({ name: exportDirEnv(r.target), value: dirOf(r) })),
      ],
      ...(process
        ? {}
        : {
            mounts: rules.map((r) => ({ name: `outpost-export-${r.target}`, mountPath: r.source })),
            volumes: rules.map((r) => ({
              name: `outpost-export-${r.target}`,
              hostPath: { path: this.exportDir(workload, r.target), type: 'DirectoryOrCreate' },
            })),
          }),
    });
  }

  /** The workloads now desired (after a reconcile pass): exports of others are no longer scanned. */
  desired(names: Iterable<string>): void {
    const keep = new Set(names);
    for (const w of [...this.rules.keys()]) if (!keep.has(w)) this.rules.delete(w);
    for (const w of [...this.degradedBy.keys()]) if (!keep.has(w)) this.degradedBy.delete(w);
  }

  /** Why a workload should be reported Degraded, if it should. */
  degraded(workload: string): string | undefined {
    return this.degradedBy.get(workload);
  }

  states(): EgressState[] {
    const rows = cachedStatement(
      this.db,
      `SELECT workload, SUM(state = 'queued') qf, COALESCE(SUM(CASE WHEN state = 'queued' THEN size END), 0) qb,
              SUM(state = 'done') df FROM egress_files GROUP BY workload ORDER BY workload`,
    ).all() as { workload: string; qf: number; qb: number; df: number }[];
    const out = new Map<string, EgressState>(
      rows.map((r) => [r.workload, { workload: r.workload, queuedFiles: r.qf, queuedBytes: r.qb, doneFiles: r.df }]),
    );
    for (const w of this.rules.keys())
      if (!out.has(w)) out.set(w, { workload: w, queuedFiles: 0, queuedBytes: 0, doneFiles: 0 });
    for (const [w, reason] of this.degradedBy) {
      const s = out.get(w) ?? { workload: w, queuedFiles: 0, queuedBytes: 0, doneFiles: 0 };
      out.set(w, { ...s, degraded: reason });
    }
    return [...out.values()];
  }

  /** The heartbeat gauges of the upload queue (core/data.ts EGRESS_QUEUE_METRICS): files and bytes not yet on the hub. */
  queueMetrics(): Record<string, number> {
    const r = cachedStatement(
      this.db,
      "SELECT COUNT(*) n, COALESCE(SUM(size), 0) b FROM egress_files WHERE state = 'queued'",
    ).get() as { n: number; b: number };
    return { [EGRESS_QUEUE_METRICS.files]: r.n, [EGRESS_QUEUE_METRICS.bytes]: r.b };
  }

  /** The ledger's rows (tests, the local API). */
  ledger(workload?: string): Row[] {
    return (
      workload === undefined
        ? cachedStatement(this.db, 'SELECT * FROM egress_files ORDER BY workload, path').all()
        : cachedStatement(this.db, 'SELECT * FROM egress_files WHERE workload = ? ORDER BY path').all(workload)
    ) as Row[];
  }

  /** One scan of every export directory; then records what the hub now holds. */
  scan(): Promise<void> {
    if (this.scanning || this.stopped) return this.scanning ?? Promise.resolve();
    const run = async () => {
      await Promise.resolve(); // this.scanning is set before the body runs
      try {
        let changed = false;
        for (const [workload, rules] of this.rules) {
          const before = this.degradedBy.get(workload);
          const reasons: string[] = [];
          for (const r of rules) {
            const reason = await this.scanTarget(workload, r).catch((err: unknown) => {
              log.warn({ err, workload, target: r.target }, 'scanning an export directory failed');
              return undefined;
            });
            if (reason) reasons.push(reason);
          }
          const now = reasons.length ? reasons.join('; ') : undefined;
          if (now) this.degradedBy.set(workload, now);
          else this.degradedBy.delete(workload);
          if (now !== before) {
            changed = true;
            if (now) log.warn({ workload, reason: now }, 'export queue bound reached');
          }
        }
        if (changed) this.o.onDegradedChange?.();
      } finally {
        this.scanning = undefined;
        this.scans++;
      }
      this.record();
    };
    this.scanning = run();
    return this.scanning;
  }

  /** Queues new and changed files of one export; returns why some could not be queued. */
  private async scanTarget(workload: string, rule: EgressRule): Promise<string | undefined> {
    const dir = this.exportDir(workload, rule.target);
    const files = listFiles(dir);
    const settle = this.o.settleMs ?? EGRESS_SETTLE_MS;
    const now = Date.now();
    const known = new Map(
      (
        cachedStatement(this.db, 'SELECT * FROM egress_files WHERE workload = ? AND target = ?').all(
          workload,
          rule.target,
        ) as Row[]
      ).map((r) => [r.path, r]),
    );
    const seen = new Set<string>();
    let refused: { files: number; bytes: number; first?: string } | undefined;
    let budget: string | undefined;
    // Oldest first: the order the workload wrote them in is the order they leave.
    files.sort((a, b) => a.mtimeMs - b.mtimeMs || a.rel.localeCompare(b.rel));
    for (const f of files) {
      const p = `${rule.target}/${f.rel}`;
      seen.add(p);
      const row = known.get(p);
      const mtime = Math.floor(f.mtimeMs);
      if (row && row.size === f.size && row.mtime_ms === mtime) continue;
      if (now - f.mtimeMs < settle) continue;
      const queued = this.queuedBytes(workload, rule.target);
      if (queued + f.size > rule.maxBytes) {
        refused ??= { files: 0, bytes: queued };
        refused.files++;
        refused.first ??= p;
        continue;
      }
      let r: { digest: BlobDigest; size: number };
      try {
        r = await this.o.blobs.queueUpload(f.abs, MEDIA_TYPE);
      } catch (err) {
        if (err instanceof BlobBudgetError) {
          budget = err.message;
          break;
        }
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // removed meanwhile
        throw err;
      }
      const old = row?.state === 'queued' ? row.digest : undefined;
      inTransaction(this.db, () => {
        cachedStatement(
          this.db,
          `INSERT INTO egress_files (workload, target, path, size, mtime_ms, digest, state, mode, queued_at, done_at)
           VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?, NULL)
           ON CONFLICT (workload, path) DO UPDATE SET size = excluded.size, mtime_ms = excluded.mtime_ms,
             digest = excluded.digest, state = 'queued', mode = excluded.mode, queued_at = excluded.queued_at, done_at = NULL`,
        ).run(workload, rule.target, p, r.size, mtime, r.digest, rule.mode, Date.now());
      });
      // A newer version replaced one still queued: the old bytes need not leave.
      if (old && old !== r.digest) await this.release(old);
      this.o.transfers.kick();
    }
    // Files gone from the directory (moved, or deleted by the workload) need no ledger row once on the hub.
    inTransaction(this.db, () => {
      for (const [p, row] of known)
        if (!seen.has(p) && row.state === 'done')
          cachedStatement(this.db, 'DELETE FROM egress_files WHERE workload = ? AND path = ?').run(workload, p);
    });
    if (budget) return `export "${rule.target}": ${budget}`;
    if (refused)
      return `export "${rule.target}": the upload queue holds ${refused.bytes} bytes of its ${rule.maxBytes}-byte bound (maxBytes); ${refused.files} newer file(s) wait in the export directory (first ${refused.first}) until the hub takes the queue: reconnect the edge or raise maxBytes`;
    return undefined;
  }

  private queuedBytes(workload: string, target: string): number {
    return (
      cachedStatement(
        this.db,
        "SELECT COALESCE(SUM(size), 0) n FROM egress_files WHERE workload = ? AND target = ? AND state = 'queued'",
      ).get(workload, target) as { n: number }
    ).n;
  }

  /** Drops a blob from the edge's store once no queued file needs it. */
  private async release(digest: BlobDigest): Promise<void> {
    if (cachedStatement(this.db, "SELECT 1 FROM egress_files WHERE digest = ? AND state = 'queued'").get(digest))
      return;
    await this.o.blobs.remove(digest);
  }

  /** Records on the hub every queued file whose blob has left the outbox. */
  record(): void {
    if (this.stopped) return;
    if (this.recording) {
      this.recordAgain = true;
      return;
    }
    const run = async () => {
      await Promise.resolve(); // this.recording is set before the body runs
      try {
        do {
          this.recordAgain = false;
          await this.recordPass();
        } while (this.recordAgain && !this.stopped);
      } catch (err) {
        if (this.o.connected()) log.warn({ err: (err as Error).message }, 'recording exported files failed; retried');
      } finally {
        this.recording = undefined;
      }
    };
    this.recording = run();
  }

  private async recordPass(): Promise<void> {
    if (!this.o.connected()) return;
    const inOutbox = new Set(this.o.blobs.outbox().map((o) => o.digest));
    const rows = cachedStatement(
      this.db,
      "SELECT * FROM egress_files WHERE state = 'queued' ORDER BY queued_at",
    ).all() as Row[];
    for (const row of rows) {
      if (this.stopped || !this.o.connected()) return;
      if (inOutbox.has(row.digest)) continue;
      try {
        await this.recordOne(row);
      } catch (err) {
        if (err instanceof TunnelError && err.code === 'not_found') {
          // The hub does not hold the bytes (lost, or collected): send them again, or take the file again.
          if (this.o.blobs.files.has(row.digest)) this.o.blobs.requeue(row.digest, MEDIA_TYPE);
          else
            inTransaction(this.db, () =>
              cachedStatement(this.db, 'DELETE FROM egress_files WHERE workload = ? AND path = ?').run(
                row.workload,
                row.path,
              ),
            );
          this.o.transfers.kick();
          continue;
        }
        throw err;
      }
    }
  }

  private async recordOne(row: Row): Promise<void> {
    const s = this.o.open({
      type: 'data-file',
      workload: row.workload,
      path: row.path,
      digest: row.digest,
      size: row.size,
      modifiedAt: row.mtime_ms,
    });
    s.on('error', () => undefined);
    s.end();
    const m = await nextMeta(s);
    s.resume();
    if (m.ok !== true) throw new TunnelError('protocol', `bad data-file answer ${JSON.stringify(m).slice(0, 200)}`);
    const changed = inTransaction(this.db, () =>
      cachedStatement(
        this.db,
        "UPDATE egress_files SET state = 'done', done_at = ? WHERE workload = ? AND path = ? AND digest = ? AND state = 'queued'",
      ).run(Date.now(), row.workload, row.path, row.digest),
    ).changes;
    if (changed === 0) return; // a newer version was queued meanwhile
    if (row.mode === 'move') {
      const abs = path.join(this.exportDir(row.workload, row.target), row.path.slice(row.target.length + 1));
      try {
        const st = fs.statSync(abs);
        // Only the version the hub holds: a file rewritten since stays for the next scan.
        if (st.size === row.size && Math.floor(st.mtimeMs) === row.mtime_ms) fs.rmSync(abs);
      } catch {
        // already gone
      }
    }
    await this.release(row.digest);
    log.info({ workload: row.workload, path: row.path, size: row.size }, 'exported file is on the hub');
  }
}

/** Regular files under `dir` (recursively), skipping names that start with `.` and symbolic links. */
function listFiles(dir: string): { rel: string; abs: string; size: number; mtimeMs: number }[] {
  const out: { rel: string; abs: string; size: number; mtimeMs: number }[] = [];
  const walk = (d: string, rel: string) => {
    let ents: fs.Dirent[];
    try {
      ents = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of ents) {
      if (e.name.startsWith('.')) continue;
      const abs = path.join(d, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(abs, r);
      else if (e.isFile()) {
        try {
          const st = fs.statSync(abs);
          out.push({ rel: r, abs, size: st.size, mtimeMs: st.mtimeMs });
        } catch {
          // removed meanwhile
        }
      }
    }
  };
  walk(dir, '');
  return out;
}
