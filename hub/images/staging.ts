/**
 * @module The hub's side of image pre-staging (issue #19; docs/drivers.md, "Pre-staging"): for
 * each placement whose rollout has `prestage: true`, the images gate (gate.ts) hands over, per edge
 * not yet switched, the pinned images of its new version; this module describes each image from the
 * hub's image cache (manifest, config and layers with their sizes: blobs of the project, which the
 * edge may fetch over its own connection, hub/blobs/transfers.ts), records what each placement asks
 * of each edge (table `staging_orders`, hub/state/image-staging.ts) and writes the union for an
 * edge into its spec document (core/staging.ts `setSpecStaging`, the one writer). It reads the
 * edges' reports of what is staged from their projection (`staging_reports`).
 *
 * Hub replicas (docs/architecture.md, "Hub replicas"): the gate runs in the planning replica's
 * pass, which records the orders; each replica copies the orders of the edges it serves into their
 * documents through the order engine (hub/orders/engine.ts, kind `image-staging`; at once on the
 * planning replica, within STAGING_COPY_MS on the others), and an edge that connects gets them
 * before its handshake is answered (the engine's `writeEdge`).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { isDigest, type BlobDigest } from '../../core/blobs.js';
import { parseImageRef } from '../../core/images.js';
import { createLogger } from '../../core/logger.js';
import { STAGING_COPY_MS } from '../../core/durations.js';
import { IMAGE_STAGING_ORDER } from '../../core/orders/kinds.js';
import {
  STAGED_STATES,
  formatMB,
  stagingImageSize,
  type StagedImage,
  type StagingGroup,
  type StagingImage,
} from '../../core/staging.js';
import type { PlacementStagingView } from '../../core/api/views.js';
import type { HubBlobs } from '../blobs/index.js';
import type { OrderEngine } from '../orders/engine.js';
import type { HubState } from '../state/index.js';
import { manifestBlobs } from './cache.js';

const log = createLogger('hub:images');

/** A manifest is small JSON (as the cache's limit). */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
/** A placement's status names this many edges whose staging stopped (the counts say how many in all). */
export const STAGING_PROBLEMS_SHOWN = 10;

export class HubStaging {
  /** `project image` -> its description (content-addressed: never changes), or null when not in the cache. */
  private readonly described = new Map<string, StagingImage>();
  private copying = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly engine: OrderEngine,
    private readonly blobs: Pick<HubBlobs, 'get' | 'files'>,
    /** Its tables, and the events and transactions an over-budget event is recorded with. */
    private readonly state: Pick<HubState, 'imageStaging' | 'events' | 'transaction'>,
  ) {
    engine.register<StagingGroup[]>({
      kind: IMAGE_STAGING_ORDER,
      all: () => this.state.imageStaging.orders(),
      of: (edge) => {
        const groups = this.state.imageStaging.ordersOf(edge);
        return groups.length ? groups : undefined;
      },
      written: (edges) => log.info({ edges: edges.length }, 'image staging ordered'),
      forgetEdge: (edge) => this.state.imageStaging.forgetEdge(edge),
      // The images gate waits on what is staged, whichever replica plans (the scheduler's status marks wake it).
      project: (edge, report) => {
        this.state.imageStaging.projectReport(edge, report.imageStaging);
        return false;
      },
      // A deleted placement's staging orders go from its edges' specs (the gate no longer sees it).
      onObjectChange: (c) => {
        if (c.kind === 'Placement' && !c.after) this.setPlacement(`${c.project}/${c.name}`, new Map());
      },
      handshakeReads: { edge: (edge) => this.state.imageStaging.handshakeReads(edge) },
    });
  }

  /** Copies the recorded orders every STAGING_COPY_MS (another replica may have recorded them). */
  start(): void {
    this.timer = setInterval(() => this.copySoon(), STAGING_COPY_MS);
    this.timer.unref();
    this.copySoon();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** The image as staging moves it, if it is pinned (`@sha256:`) and its manifest and blobs are in the project's cache. */
  describe(project: string, image: string): StagingImage | undefined {
    const key = `${project} ${image}`;
    const hit = this.described.get(key);
    if (hit) return hit;
    const ref = parseImageRef(image).digest;
    const d = ref && isDigest(ref) ? (ref as BlobDigest) : undefined;
    let out: StagingImage | null = null;
    const info = d ? this.blobs.get(project, d) : undefined;
    if (d && info && info.size <= MAX_MANIFEST_BYTES) {
      try {
        const text = fs.readFileSync(this.blobs.files.path(d), 'utf8');
        const parts = manifestBlobs(text);
        const sizes = parts.map((p) => this.blobs.get(project, p)?.size);
        if (sizes.every((s) => s !== undefined)) {
          const mediaType =
            (JSON.parse(text) as { mediaType?: string }).mediaType ?? 'application/vnd.oci.image.manifest.v1+json';
          out = {
            image,
            manifest: { digest: d, size: info.size, mediaType },
            blobs: parts.map((p, i) => ({ digest: p, size: sizes[i]! })),
          };
        }
      } catch (err) {
        log.warn({ project, image, err: (err as Error).message }, 'image cannot be staged: its manifest is unreadable');
      }
    }
    // Only a description is kept: an image not in the cache yet may be pushed later.
    if (out) this.described.set(key, out);
    return out ?? undefined;
  }

  /** What the edge reports of the images it staged, by image (the projection of its reports). */
  reported(edge: string): Map<string, StagedImage> {
    return new Map((this.state.imageStaging.reported(edge)?.images ?? []).map((i) => [i.image, i]));
  }

  /**
   * `images staged on 3/5 edges, 412 MB of 690 MB` while placement `project/name` stages images to
   * edges not switched yet, with the edges whose staging stopped (over budget, failed) and why.
   */
  progress(project: string, name: string): PlacementStagingView | undefined {
    const rows = this.state.imageStaging.placement(`${project}/${name}`);
    if (!rows.length) return undefined;
    let staged = 0;
    let bytes = 0;
    let totalBytes = 0;
    const stopped = { OverBudget: 0, Failed: 0 };
    const problems: PlacementStagingView['problems'] = [];
    for (const r of rows) {
      const reported = new Map((r.report?.images ?? []).map((i) => [i.image, i]));
      let all = true;
      let problem: PlacementStagingView['problems'][number] | undefined;
      for (const i of r.group.images) {
        const size = stagingImageSize(i);
        const got = reported.get(i.image);
        // Skipped: the edge's driver pulls at update time (or runs no images); nothing moves now.
        if (got?.state !== 'Skipped') {
          totalBytes += size;
          bytes += got?.state === 'Present' ? size : Math.min(got?.done ?? 0, size);
        }
        if (!got || !STAGED_STATES.includes(got.state)) all = false;
        if (!problem && (got?.state === 'OverBudget' || got?.state === 'Failed'))
          problem = { edge: r.edge, state: got.state, reason: got.reason ?? got.state };
      }
      if (all) staged++;
      if (problem) {
        stopped[problem.state]++;
        if (problems.length < STAGING_PROBLEMS_SHOWN) problems.push(problem);
      }
    }
    const notes = [
      ...(stopped.OverBudget ? [`${stopped.OverBudget} over budget`] : []),
      ...(stopped.Failed ? [`${stopped.Failed} failed`] : []),
    ];
    return {
      staged,
      edges: rows.length,
      bytes,
      totalBytes,
      overBudget: stopped.OverBudget,
      failed: stopped.Failed,
      problems,
      summary: `images staged on ${staged}/${rows.length} edges${totalBytes ? `, ${formatMB(bytes)} of ${formatMB(totalBytes)}` : ''}${notes.length ? `, ${notes.join(', ')}` : ''}`,
    };
  }

  /**
   * An `OverBudget` event of the placement when `edge` reports its images over the placement's
   * prestageBudget: once per edge, placement and version (the set of images staged), however
   * often the edge reports it or the planner passes; a new version over budget is told again.
   */
  noteOverBudget(project: string, name: string, edge: string, images: StagingImage[], reason: string): void {
    const version = createHash('sha256')
      .update(
        images
          .map((i) => i.image)
          .sort()
          .join('\n'),
      )
      .digest('hex')
      .slice(0, 32);
    this.state.transaction(() => {
      if (!this.state.imageStaging.noteOverBudget(edge, `${project}/${name}`, version)) return;
      this.state.events.record({
        project,
        kind: 'Placement',
        name,
        edge,
        reason: 'OverBudget',
        message: `edge ${edge} does not stage the new version's images: ${reason}`,
      });
      log.warn({ project, placement: name, edge }, 'image staging over the placement budget');
    });
  }

  /**
   * Replaces what placement `key` asks each edge to stage (edges left out ask nothing of it any
   * more): recorded, then written into the documents of the edges this process serves.
   */
  setPlacement(key: string, groups: Map<string, StagingGroup>): void {
    if (this.state.imageStaging.setPlacement(key, groups).length) this.copySoon();
  }

  /** Copies the recorded orders into the documents of the edges this process serves, after the current pass. */
  private copySoon(): void {
    if (this.copying) return;
    this.copying = true;
    setImmediate(() => {
      this.copying = false;
      try {
        this.copy();
      } catch (err) {
        log.warn({ err }, 'copying image staging orders failed; copied again shortly');
      }
    });
  }

  private copy(): void {
    this.engine.copy(IMAGE_STAGING_ORDER.name);
  }
}
