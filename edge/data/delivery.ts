/**
 * @module Data to the sites, the edge's side (docs/data.md, "Data to the sites"): for each
 * DataObject order in its spec (core/delivery.ts, written by hub/data/delivery.ts) the agent
 * brings the blob over its own connection (the wanted queue, edge/blobs/: resumable, checked by
 * digest), then writes it to `DATA/data/objects/PATH` atomically: a hidden temporary file in the
 * same directory, flushed, renamed over the old one. A reader sees the previous version or the
 * new one, never a mix, and the previous version stays until the new one is complete.
 *
 * Activation and expiry are kept on the edge's clock, so they hold while the hub is away: an
 * object may download before `activateAt` (it then waits, reported `Waiting`) and is removed at
 * `expiresAt`. An order that leaves the spec (the object deleted, the edge no longer selected)
 * takes its file with it. Each step is reported in the report document (`setReportData`), once
 * per state or tenth of a download.
 *
 * Workloads read the directory: a manifest annotated `data.outpost.dev/objects: /objects` gets it
 * read-only at that path (podman, kubernetes) and `OUTPOST_DATA_OBJECTS_DIR` naming it (every driver;
 * for process workloads the host directory).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BlobDigest } from '../../core/blobs.js';
import {
  byClaim,
  isDelivered,
  OBJECTS_DIR_ENV,
  OBJECTS_MOUNT_ANNOTATION,
  pathHolders,
  type DeliveryOrder,
  type DeliveryProgress,
} from '../../core/delivery.js';
import type { DriverName } from '../../core/driver-kinds.js';
import { mailboxDocId, type EdgeName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { readReportData, readSpecData, setReportData, type ReportDoc, type SpecDoc } from '../../core/mailbox.js';
import { isObjectPath, type Manifest } from '../../core/resources.js';
import type { ReplicaStore } from '../../sync/store.js';
import type { WorkloadDecorator } from '../reconciler.js';
import type { EdgeBlobStore } from '../blobs/store.js';
import type { EdgeTransfers } from '../blobs/transfers.js';
import { withPodAdditions } from './pod-additions.js';
import { OnePassAtATime, PassStopped } from '../orders/one-pass.js';

const log = createLogger('edge:delivery');

/** The longest wait between two looks at activation and expiry times (a clock may jump). */
const RECHECK_MS = 60_000;

export interface EdgeDeliveriesDeps {
  dataDir: string;
  edge: EdgeName;
  driver: DriverName;
  store: ReplicaStore;
  blobs: EdgeBlobStore;
  transfers: EdgeTransfers;
}

export class EdgeDeliveries implements WorkloadDecorator {
  readonly root: string;
  private readonly passes = new OnePassAtATime(
    () => this.pass(),
    (err) => log.warn({ err }, 'data delivery pass failed; retried on the next change'),
  );
  /** `name@digest` of deliveries that failed in this process (no room): not retried until the order changes. */
  private readonly failed = new Set<string>();
  private readonly specId;
  private readonly reportId;

  constructor(private readonly d: EdgeDeliveriesDeps) {
    this.root = path.join(d.dataDir, 'data', 'objects');
    fs.mkdirSync(this.root, { recursive: true, mode: 0o755 });
    this.specId = mailboxDocId(d.edge, 'spec');
    this.reportId = mailboxDocId(d.edge, 'report');
  }

  /** Looks at the orders and acts on them; call at start and on every spec change. */
  check(): void {
    this.passes.check();
  }

  stop(): Promise<void> {
    return this.passes.stop();
  }

  /** The file of an object on this edge. */
  file(p: string): string {
    return path.join(this.root, ...p.split('/'));
  }

  private async pass(): Promise<void> {
    const spec = this.d.store.get<SpecDoc>(this.specId);
    const report = this.d.store.get<ReportDoc>(this.reportId);
    const orders = spec ? readSpecData(spec) : {};
    const reports = report ? readReportData(report) : {};
    // Two orders for one path (or a path and a directory of it): the hub never writes both, but a
    // spec changed in two steps may show both for a moment. The one this edge holds or fetches
    // keeps the path, by the hub's own rule (core/delivery.ts); the other waits, touching nothing,
    // until the hub's next write settles it.
    const blocked = pathHolders(
      byClaim(
        Object.entries(orders).map(([name, o]) => ({ name, path: o.path })),
        (c) => reports[c.name],
      ),
    );
    const kept = Object.entries(orders).filter(([name]) => !blocked.has(name));
    const keptPaths = new Set(kept.map(([, o]) => o.path));
    // Orders that left the spec take their files with them; a file at the path of an order kept
    // stays (it is that order's, or serves until that order's bytes replace it).
    for (const [name, p] of Object.entries(reports)) {
      if (orders[name]) continue;
      if (!keptPaths.has(p.path)) this.removeFile(p.path);
      this.report(name, undefined);
      log.info({ object: name, path: p.path }, 'data object withdrawn by the hub: file removed');
    }
    let next = Date.now() + RECHECK_MS;
    for (const [name, holder] of blocked)
      // No report: one would rank it above a holder that has not reported yet, at the hub too.
      log.warn(
        { object: name, path: orders[name]!.path, holder: holder.name },
        'data object order waits: another order holds its path on this edge',
      );
    for (const [name, o] of kept) {
      if (this.passes.isStopped) return;
      const at = await this.deliver(name, o, reports[name]);
      if (at !== undefined) next = Math.min(next, at);
    }
    this.passes.later(Math.max(100, next - Date.now()));
  }

  /** Brings one order as far as it can go now; returns when to look again (activation, expiry). */
  private async deliver(name: string, o: DeliveryOrder, p: DeliveryProgress | undefined): Promise<number | undefined> {
    const now = Date.now();
    const base = { version: o.version, digest: o.digest, path: o.path };
    if (o.expiresAt !== undefined && o.expiresAt <= now) {
      if (p?.state !== 'Expired' || p.version !== o.version) {
        if (p) this.removeFile(p.path);
        this.removeFile(o.path);
        this.report(name, { ...base, state: 'Expired' });
        log.info({ object: name, version: o.version }, 'data object expired: file removed');
      }
      return undefined;
    }
    if (isDelivered(o, p) && p!.path === o.path && fs.existsSync(this.file(o.path))) return o.expiresAt;
    const key = `${name}@${o.digest}`;
    if (this.failed.has(key)) return undefined;
    const holds = p?.state === 'Delivered' ? p.version : p?.previous;
    const withPrevious = { ...base, ...(holds && holds !== o.version ? { previous: holds } : {}) };
    const digest = o.digest as BlobDigest;
    try {
      if (!this.d.blobs.files.has(digest)) {
        this.d.blobs.checkRoom(o.size - this.d.blobs.files.partialSize(digest), `data object ${name} ${o.version}`);
        this.report(name, { ...withPrevious, state: 'Downloading', percent: 0 });
        let tenth = 0;
        // Left when the agent stops (the fetch waits for the blob across reconnects).
        await this.passes.untilStopped(
          this.d.transfers.fetch(digest, (t) => {
            const x = Math.min(9, Math.floor((t.done / Math.max(1, t.size)) * 10));
            if (x > tenth) {
              tenth = x;
              this.report(name, { ...withPrevious, state: 'Downloading', percent: x * 10 });
            }
          }),
        );
      }
      if (o.activateAt !== undefined && o.activateAt > Date.now()) {
        this.report(name, {
          ...withPrevious,
          state: 'Waiting',
          reason: `downloaded; activates at ${new Date(o.activateAt).toISOString()}`,
        });
        return o.activateAt;
      }
      await this.install(o);
    } catch (err) {
      if (err instanceof PassStopped) throw err;
      this.failed.add(key);
      const reason = (err as Error).message.slice(0, 1024);
      log.error({ object: name, version: o.version, err: reason }, 'data object not delivered');
      this.report(name, { ...withPrevious, state: 'Failed', reason });
      return undefined;
    }
    if (p && p.path !== o.path) this.removeFile(p.path);
    this.report(name, { ...base, state: 'Delivered' });
    log.info({ object: name, version: o.version, path: o.path }, 'data object delivered');
    await this.dropBlobUnlessWanted(digest);
    return o.expiresAt;
  }

  /** Copies the blob next to the destination, flushes it, and renames it over the old file. */
  private async install(o: DeliveryOrder): Promise<void> {
    if (!isObjectPath(o.path)) throw new Error(`refused path ${JSON.stringify(o.path)}: not a relative object path`);
    const dest = this.file(o.path);
    const dir = path.dirname(dest);
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o755 });
    const tmp = path.join(dir, `.${path.basename(dest)}.${o.digest.slice(7, 19)}.tmp`);
    try {
      await fs.promises.copyFile(this.d.blobs.files.path(o.digest as BlobDigest), tmp);
      await fs.promises.chmod(tmp, 0o644);
      const fh = await fs.promises.open(tmp, 'r+');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fs.promises.rename(tmp, dest);
    } catch (err) {
      await fs.promises.rm(tmp, { force: true });
      throw err;
    }
    // The rename itself survives a power cut once the directory is flushed.
    const dh = await fs.promises.open(dir, 'r');
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
  }

  /** The blob served its purpose once its bytes are in place, unless another order still waits for it. */
  private async dropBlobUnlessWanted(digest: BlobDigest): Promise<void> {
    const spec = this.d.store.get<SpecDoc>(this.specId);
    const report = this.d.store.get<ReportDoc>(this.reportId);
    const reports = report ? readReportData(report) : {};
    const waiting = Object.entries(spec ? readSpecData(spec) : {}).some(
      ([n, o]) => o.digest === digest && !isDelivered(o, reports[n]),
    );
    if (!waiting) await this.d.blobs.remove(digest);
  }

  /** Removes an object's file, and the directories it leaves empty (another object may need one as its file). */
  private removeFile(p: string): void {
    if (!isObjectPath(p)) return;
    try {
      fs.rmSync(this.file(p), { force: true });
    } catch (err) {
      // A directory (or a path under a file) is no object's file: nothing of this object to remove.
      log.warn({ path: p, err: (err as Error).message }, 'data object file not removed');
      return;
    }
    for (let dir = path.posix.dirname(p); dir !== '.'; dir = path.posix.dirname(dir)) {
      try {
        fs.rmdirSync(this.file(dir));
      } catch {
        return; // not empty (or gone): the directories above it are not empty either
      }
    }
  }

  private report(name: string, p: Omit<DeliveryProgress, 'at'> | undefined): void {
    const report = this.d.store.get<ReportDoc>(this.reportId);
    const cur = report ? readReportData(report)[name] : undefined;
    // The same state again is no change: history grows only on transitions.
    if (
      p &&
      cur &&
      cur.version === p.version &&
      cur.digest === p.digest &&
      cur.path === p.path &&
      cur.state === p.state &&
      cur.percent === p.percent &&
      cur.reason === p.reason &&
      cur.previous === p.previous
    )
      return;
    if (!p && !cur) return;
    this.d.store.change<ReportDoc>(this.reportId, (d) =>
      setReportData(d, name, p ? { ...p, at: Date.now() } : undefined),
    );
  }

  // WorkloadDecorator: the objects directory in the manifests that ask for it.

  decorate(_workload: string, manifests: Manifest[]): Manifest[] {
    return manifests.map((m) => this.decorateOne(m));
  }

  private decorateOne(m: Manifest): Manifest {
    const mount = (m.metadata as { annotations?: Record<string, unknown> } | undefined)?.annotations?.[
      OBJECTS_MOUNT_ANNOTATION
    ];
    if (typeof mount !== 'string' || !mount.startsWith('/')) return m;
    const process = this.d.driver === 'process';
    return withPodAdditions(m, {
      env: [{ name: OBJECTS_DIR_ENV, value: process ? this.root : mount }],
      ...(process
        ? {}
        : {
            mounts: [{ name: 'outpost-objects', mountPath: mount, readOnly: true }],
            volumes: [{ name: 'outpost-objects', hostPath: { path: this.root, type: 'Directory' } }],
          }),
    });
  }

  desired(): void {}

  degraded(): string | undefined {
    return undefined;
  }
}
