/**
 * @module The edge's side of image pre-staging (issue #19; docs/drivers.md, "Pre-staging"): when
 * its spec carries a staging order (core/staging.ts), the agent brings the blobs of each image it
 * lacks over its own connection (the wanted queue, edge/blobs/: resumable, checked by digest, each
 * blob once), assembles an OCI archive of the image (oci-layout, index.json naming it
 * `HOST/REPO@sha256:...`, the blobs) and `podman load`s it: the image is then in podman's storage
 * exactly as a pull by digest would have left it, so the switch needs no registry. The blobs stay
 * in the edge's blob store, so a layer shared by a later image does not cross the link again. It reports per
 * image Present, Staging (bytes so far), OverBudget or Failed (with the reason), or Skipped (a
 * driver that pulls at update time or uses no images).
 *
 * Why `podman load` and not an edge-local registry: it needs nothing running on the edge, the
 * image lands under the very name the workload uses, and podman finds it by digest.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import type { BlobDigest } from '../../core/blobs.js';
import { mailboxDocId, type EdgeName } from '../../core/ids.js';
import { IMAGE_GC_RETRY_MS } from '../../core/durations.js';
import { imagesOf } from '../../core/images.js';
import { createLogger } from '../../core/logger.js';
import { readSpec, type ReportDoc, type SpecDoc } from '../../core/mailbox.js';
import type { DriverName } from '../../core/driver-kinds.js';
import {
  readReportStaging,
  readSpecStaging,
  setReportStaging,
  stagingImageSize,
  type StagedImage,
  type StagingImage,
} from '../../core/staging.js';
import type { ReplicaStore } from '../../sync/store.js';
import type { EdgeBlobStore } from '../blobs/store.js';
import type { EdgeTransfers } from '../blobs/transfers.js';
import type { Podman } from '../drivers/podman/cli.js';
import { StagedImages } from './gc.js';
import { OnePassAtATime } from '../orders/one-pass.js';

const log = createLogger('edge:images');

export interface EdgeStagingDeps {
  edge: EdgeName;
  dataDir: string;
  driver: DriverName;
  store: ReplicaStore;
  blobs: EdgeBlobStore;
  transfers: EdgeTransfers;
  /** The podman CLI (podman driver only). */
  podman?: Podman;
}

export class EdgeImageStaging {
  private readonly passes = new OnePassAtATime(
    () => this.run(),
    (err) => log.warn({ err: (err as Error).message }, 'image staging pass failed'),
  );
  private readonly specId;
  private readonly reportId;
  /** Images loaded by this process or found present: not asked of podman again. */
  private readonly present = new Set<string>();
  /** Images whose staging failed in this process, with why: tried again when the order changes. */
  private readonly failed = new Map<string, string>();
  private lastOrder = '';
  private readonly staged: StagedImages;
  private gcTimer: NodeJS.Timeout | undefined;

  constructor(private readonly d: EdgeStagingDeps) {
    this.specId = mailboxDocId(d.edge, 'spec');
    this.reportId = mailboxDocId(d.edge, 'report');
    this.staged = new StagedImages(d.dataDir);
  }

  stop(): void {
    clearTimeout(this.gcTimer);
  }

  /** Looks at the spec's staging order and works on it; call at start, on every spec change and connect. */
  check(): void {
    this.passes.check();
  }

  private async run(): Promise<void> {
    await this.stageOrdered();
    await this.collect();
  }

  /** Removes the staged images neither a workload of the spec nor the staging order names (gc.ts). */
  private async collect(): Promise<void> {
    const podman = this.d.podman;
    if (!podman) return;
    const spec = this.d.store.get<SpecDoc>(this.specId);
    if (!spec) return;
    const inUse = new Set<string>();
    for (const w of Object.values(readSpec(spec).workloads)) for (const i of imagesOf(w.manifests)) inUse.add(i);
    for (const g of readSpecStaging(spec)?.groups ?? []) for (const i of g.images) inUse.add(i.image);
    const left = await this.staged.collect(inUse, podman, this.d.blobs);
    clearTimeout(this.gcTimer);
    if (left) {
      this.gcTimer = setTimeout(() => this.check(), IMAGE_GC_RETRY_MS);
      this.gcTimer.unref();
    }
  }

  private async stageOrdered(): Promise<void> {
    const spec = this.d.store.get<SpecDoc>(this.specId);
    const order = spec ? readSpecStaging(spec) : undefined;
    const text = JSON.stringify(order ?? null);
    if (text !== this.lastOrder) this.failed.clear();
    this.lastOrder = text;
    if (!order) return;
    const images = new Map<string, StagingImage>();
    for (const g of order.groups) for (const i of g.images) images.set(i.image, i);
    // What was reported before, for the images still ordered: updated image by image below.
    const before = this.d.store.get<ReportDoc>(this.reportId);
    const states = new Map<string, StagedImage>(
      ((before && readReportStaging(before)?.images) ?? []).filter((s) => images.has(s.image)).map((s) => [s.image, s]),
    );
    const set = (i: StagingImage, s: Omit<StagedImage, 'image' | 'size'>) => {
      states.set(i.image, { image: i.image, size: stagingImageSize(i), ...s });
      this.report(states);
    };
    const podman = this.d.podman;
    if (this.d.driver !== 'podman' || !podman) {
      const reason =
        this.d.driver === 'process'
          ? 'the process driver runs no images'
          : `the ${this.d.driver} driver pulls images through its node's runtime at update time; not staged`;
      for (const i of images.values()) set(i, { state: 'Skipped', done: 0, reason });
      return;
    }
    for (const i of images.values()) {
      if (!this.present.has(i.image) && (await podman.run(['image', 'exists', i.image])).code === 0)
        this.present.add(i.image);
      if (this.present.has(i.image)) set(i, { state: 'Present', done: stagingImageSize(i) });
    }
    // Per placement: what crosses the link for its missing images must fit its budget.
    const overBudget = new Map<string, string>();
    for (const g of order.groups) {
      if (g.budgetBytes === undefined) continue;
      const missing = g.images.filter((i) => !this.present.has(i.image));
      const need = this.bytesToFetch(missing);
      if (need > g.budgetBytes)
        for (const i of missing)
          overBudget.set(
            i.image,
            `needs ${need} bytes over this edge's link, more than placement ${g.placement}'s prestageBudget (${g.budgetBytes}): raise the budget; the edge keeps its current version`,
          );
    }
    for (const i of images.values()) {
      if (this.present.has(i.image)) continue;
      const over = overBudget.get(i.image);
      if (over) {
        set(i, { state: 'OverBudget', done: 0, reason: over });
        continue;
      }
      const failure = this.failed.get(i.image);
      if (failure) {
        set(i, { state: 'Failed', done: 0, reason: failure });
        continue;
      }
      try {
        await this.stage(i, (done) => set(i, { state: 'Staging', done }));
        this.present.add(i.image);
        set(i, { state: 'Present', done: stagingImageSize(i) });
      } catch (err) {
        const why = (err as Error).message.slice(0, 1000);
        this.failed.set(i.image, why);
        log.warn({ image: i.image, err: why }, 'image staging failed');
        set(i, { state: 'Failed', done: 0, reason: why });
      }
    }
  }

  /** Bytes still to cross the link for these images (blobs shared between them counted once). */
  private bytesToFetch(images: StagingImage[]): number {
    const seen = new Map<string, number>();
    for (const i of images)
      for (const b of [i.manifest, ...i.blobs])
        if (!this.d.blobs.files.has(b.digest as BlobDigest))
          seen.set(b.digest, b.size - this.d.blobs.files.partialSize(b.digest as BlobDigest));
    return [...seen.values()].reduce((n, s) => n + Math.max(0, s), 0);
  }

  /** Fetches the image's blobs (resuming what is on disk), loads it into podman, then drops the blobs. */
  private async stage(i: StagingImage, progress: (done: number) => void): Promise<void> {
    const all = [i.manifest, ...i.blobs];
    const unique = [...new Map(all.map((b) => [b.digest, b])).values()];
    log.info({ image: i.image, bytes: stagingImageSize(i) }, 'staging image');
    let done = 0;
    let shown = -1;
    const show = (n: number) => {
      // A report per tenth at most: the report document keeps its history.
      const tenth = Math.floor((n / Math.max(1, stagingImageSize(i))) * 10);
      if (tenth > shown) {
        shown = tenth;
        progress(n);
      }
    };
    for (const b of unique) {
      const d = b.digest as BlobDigest;
      await this.d.transfers.fetch(d, (p) => show(done + p.done));
      done += b.size;
      show(done);
    }
    const dir = path.join(this.d.dataDir, 'images', 'staging', randomBytes(6).toString('hex'));
    const archive = `${dir}.tar`;
    try {
      fs.mkdirSync(path.join(dir, 'blobs', 'sha256'), { recursive: true, mode: 0o700 });
      fs.writeFileSync(path.join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
      fs.writeFileSync(
        path.join(dir, 'index.json'),
        JSON.stringify({
          schemaVersion: 2,
          manifests: [
            {
              mediaType: i.manifest.mediaType,
              digest: i.manifest.digest,
              size: i.manifest.size,
              // The name podman gives the loaded image: the one a pull by digest gives it.
              annotations: { 'org.opencontainers.image.ref.name': i.image },
            },
          ],
        }),
      );
      for (const b of unique) {
        const target = path.join(dir, 'blobs', 'sha256', b.digest.slice('sha256:'.length));
        const source = this.d.blobs.files.path(b.digest as BlobDigest);
        try {
          fs.linkSync(source, target);
        } catch {
          fs.copyFileSync(source, target);
        }
      }
      await tar.c({ file: archive, cwd: dir, portable: true }, ['oci-layout', 'index.json', 'blobs']);
      await this.d.podman!.ok(['load', '--quiet', '--input', archive], `podman load of ${i.image}`);
      if ((await this.d.podman!.run(['image', 'exists', i.image])).code !== 0)
        throw new Error(`podman loaded ${i.image} but does not find it by that name`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(archive, { force: true });
    }
    // The blobs stay in the edge's blob store (its budget counts them): a layer another image
    // shares is not fetched again. Garbage collection removes them with the image.
    this.staged.add({ image: i.image, blobs: unique.map((b) => b.digest), at: Date.now() });
    log.info({ image: i.image }, 'image staged');
  }

  /** Writes the report's staging state when an image's state changed (not on every byte). */
  private report(states: Map<string, StagedImage>): void {
    const images = [...states.values()];
    const doc = this.d.store.get<ReportDoc>(this.reportId);
    const cur = doc ? readReportStaging(doc) : undefined;
    if (cur && JSON.stringify(cur.images) === JSON.stringify(images)) return;
    this.d.store.change<ReportDoc>(this.reportId, (r) => setReportStaging(r, { images, at: Date.now() }));
  }
}
