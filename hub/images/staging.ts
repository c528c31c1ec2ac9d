/**
 * @module The hub's side of image pre-staging (issue #19; docs/drivers.md, "Pre-staging"): for
 * each placement whose rollout has `prestage: true`, the images gate (gate.ts) hands over, per edge
 * not yet switched, the pinned images of its new version; this module describes each image from the
 * hub's image cache (manifest, config and layers with their sizes: blobs of the project, which the
 * edge may fetch over its own connection, hub/blobs/transfers.ts) and writes the union of what
 * every placement asks of an edge into that edge's spec document (core/staging.ts
 * `setSpecStaging`, the one writer). It reads the edge's report of what is staged.
 */
import fs from 'node:fs';
import { isDigest, type BlobDigest } from '../../core/blobs.js';
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { parseImageRef } from '../../core/images.js';
import { createLogger } from '../../core/logger.js';
import type { ReportDoc, SpecDoc } from '../../core/mailbox.js';
import {
  readReportStaging,
  setSpecStaging,
  type StagedImage,
  type StagingGroup,
  type StagingImage,
} from '../../core/staging.js';
import type { PlacementStagingView } from '../../core/api/views.js';
import type { ReplicaStore } from '../../sync/store.js';
import type { HubBlobs } from '../blobs/index.js';
import { manifestBlobs } from './cache.js';

const log = createLogger('hub:images');

/** A manifest is small JSON (as the cache's limit). */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

export class HubStaging {
  /** Placement `project/name` -> edge -> what it asks to stage there. */
  private readonly wants = new Map<string, Map<string, StagingGroup>>();
  /** `project image` -> its description (content-addressed: never changes), or null when not in the cache. */
  private readonly described = new Map<string, StagingImage>();
  private readonly dirty = new Set<string>();
  /** Placement `project/name` -> how many of the edges it stages to have every image. */
  private readonly counts = new Map<string, { staged: number; edges: number }>();
  private flushing = false;

  constructor(
    private readonly store: ReplicaStore,
    private readonly blobs: Pick<HubBlobs, 'get' | 'files'>,
  ) {}

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

  /** What the edge reports of the images it staged, by image. */
  reported(edge: string): Map<string, StagedImage> {
    const doc = this.store.get<ReportDoc>(mailboxDocId(edgeName(edge), 'report'));
    const r = doc ? readReportStaging(doc) : undefined;
    return new Map((r?.images ?? []).map((i) => [i.image, i]));
  }

  /** `images staged on 3/5 edges` while placement `project/name` stages images to edges not switched yet. */
  progress(project: string, name: string): PlacementStagingView | undefined {
    const c = this.counts.get(`${project}/${name}`);
    return c ? { ...c, summary: `images staged on ${c.staged}/${c.edges} edges` } : undefined;
  }

  /**
   * Replaces what placement `key` asks each edge to stage (edges left out ask nothing of it any
   * more); `staged` of those edges have every image.
   */
  setPlacement(key: string, groups: Map<string, StagingGroup>, staged = 0): void {
    if (groups.size) this.counts.set(key, { staged, edges: groups.size });
    else this.counts.delete(key);
    const before = this.wants.get(key) ?? new Map<string, StagingGroup>();
    for (const [edge, g] of groups) if (JSON.stringify(before.get(edge)) !== JSON.stringify(g)) this.dirty.add(edge);
    for (const edge of before.keys()) if (!groups.has(edge)) this.dirty.add(edge);
    if (groups.size) this.wants.set(key, groups);
    else this.wants.delete(key);
    if (this.dirty.size && !this.flushing) {
      // Written after the scheduler's pass, not inside it.
      this.flushing = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushing = false;
    const edges = [...this.dirty];
    this.dirty.clear();
    for (const edge of edges) {
      const groups: StagingGroup[] = [];
      for (const [, byEdge] of [...this.wants].sort(([a], [b]) => a.localeCompare(b))) {
        const g = byEdge.get(edge);
        if (g) groups.push(g);
      }
      const id = mailboxDocId(edgeName(edge), 'spec');
      if (!this.store.has(id)) continue;
      if (this.store.change<SpecDoc>(id, (d) => setSpecStaging(d, { groups }), 'image staging'))
        log.info({ edge, images: groups.reduce((n, g) => n + g.images.length, 0) }, 'image staging ordered');
    }
  }
}
