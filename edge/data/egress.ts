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
 *
 * Where the parts are: this file keeps each workload's export rules (from the manifests the
 * reconciler applies, which it decorates with the directories), the scan loop and the Degraded
 * reasons; egress-scan.ts scans one export directory into the queue; egress-record.ts records
 * uploaded files on the hub; egress-ledger.ts is the ledger, the only SQL on `egress_files`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { EGRESS_QUEUE_METRICS, EXPORT_DIR_ENV, egressOf, exportDirEnv, type EgressRule } from '../../core/data.js';
import type { DriverName } from '../../core/driver-kinds.js';
import { createLogger } from '../../core/logger.js';
import type { Manifest } from '../../core/resources.js';
import type { SqliteDatabase } from '../../sync/sqlite.js';
import type { OpenStream } from '../../sync/transfer.js';
import type { EdgeBlobStore } from '../blobs/store.js';
import type { EdgeTransfers } from '../blobs/transfers.js';
import { EgressLedger, type EgressFileRow } from './egress-ledger.js';
import { EgressRecorder } from './egress-record.js';
import { scanExport, type EgressScanDeps } from './egress-scan.js';
import { withPodAdditions } from './pod-additions.js';

export { EGRESS_SETTLE_MS } from './egress-scan.js';

const log = createLogger('edge:data');

/** How often export directories are scanned. */
export const EGRESS_SCAN_MS = 2_000;

/** A workload's upload state as the local API shows it (`outpost edge local status`). */
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
  /** The ledger of exported files (egress-ledger.ts). */
  private readonly exported: EgressLedger;
  private readonly recorder: EgressRecorder;
  private readonly scanDeps: EgressScanDeps;
  private readonly root: string;
  /** Rules per workload, from the manifests the reconciler last applied. */
  private readonly rules = new Map<string, EgressRule[]>();
  private readonly degradedBy = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private stopped = false;
  /** Completed scans since start: what a test or an operator waits on instead of a fixed time. */
  scans = 0;

  constructor(private readonly o: EdgeEgressOptions) {
    this.exported = new EgressLedger(o.db, o.blobs);
    this.root = path.join(o.dataDir, 'data', 'export');
    const exportDir = (workload: string, target: string) => this.exportDir(workload, target);
    this.scanDeps = { ledger: this.exported, blobs: o.blobs, transfers: o.transfers, exportDir, settleMs: o.settleMs };
    this.recorder = new EgressRecorder({
      ledger: this.exported,
      blobs: o.blobs,
      transfers: o.transfers,
      open: o.open,
      connected: o.connected,
      stopped: () => this.stopped,
      exportDir,
    });
    o.transfers.on('sent', () => this.record());
  }

  start(): void {
    this.timer = setInterval(() => void this.scan(), this.o.scanMs ?? EGRESS_SCAN_MS);
    this.timer.unref();
    void this.exported.releaseDone().then(() => this.scan());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.scanning;
    await this.recorder.idle();
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
    const rows = this.exported.countsByWorkload();
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
    const r = this.exported.queueTotals();
    return { [EGRESS_QUEUE_METRICS.files]: r.n, [EGRESS_QUEUE_METRICS.bytes]: r.b };
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
            const reason = await scanExport(this.scanDeps, workload, r).catch((err: unknown) => {
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

  /** Records on the hub every queued file whose blob has left the outbox (egress-record.ts). */
  record(): void {
    this.recorder.record();
  }
}
