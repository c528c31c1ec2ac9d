/**
 * @module Images pinned to digests per workload revision (issue #19): what an edge runs names
 * `HOST/REPO@sha256:...`, never a tag, so two edges of one revision run the same bytes and a tag
 * moving later never changes a running revision; a new revision resolves its tags again.
 *
 * The hub resolves what it can reach through its image cache (hub/images/cache.ts):
 * - an image on the hub itself (`HUB/PROJECT/REPO:TAG`, PROJECT the workload's own): the cache's tag;
 * - an image on a Registry object's host (`REGISTRY-HOST/REPO:TAG`): pulled through the cache
 *   (the tag asked of the Registry once per revision; manifest, config and layers kept on the hub).
 * Any other image (a local one, a registry the project has no Registry for) is left as written.
 *
 * Resolution is asynchronous (a pull-through may take a while); until an image of a revision is
 * resolved, the edges wait (the images gate, gate.ts). Pins are rows of `image_pins`, written only here.
 */
import { isDigest } from '../../core/blobs.js';
import { IMAGE_RESOLVE_RETRY_MS } from '../../core/durations.js';
import { imagesOf, parseImageRef, pinnedImage, registryHost, withImages } from '../../core/images.js';
import { createLogger } from '../../core/logger.js';
import type { Manifest, Registry } from '../../core/resources.js';
import type { ImagePinTables } from '../state/image-pins.js';
import type { ImageCache } from './cache.js';

const log = createLogger('hub:images');

export interface PinSources {
  /** `HOST:PORT` names of this hub (images on it are in its cache). */
  selfHosts(): string[];
  /** The revision a rollback copied `revision` from (`outpost rollout undo`), if it is such a copy. */
  rolledBackFrom?(project: string, workload: string, revision: number): number | undefined;
}

/** What pinning one revision's manifests gave. */
export interface Pinned {
  manifests: Manifest[];
  /** Images not resolved yet, each with why (`image X: being resolved by the hub`). */
  unresolved: string[];
}

/** Where in the cache an image is looked up, if the hub can resolve it. */
function cacheName(
  project: string,
  image: string,
  src: PinSources,
  registries: readonly Registry[],
): { repository: string; ref: string; refresh: boolean } | undefined {
  const r = parseImageRef(image);
  if (r.digest) return undefined;
  const ref = r.tag ?? 'latest';
  if (src.selfHosts().includes(r.registry)) {
    const slash = r.repository.indexOf('/');
    if (slash < 0 || r.repository.slice(0, slash) !== project) return undefined;
    return { repository: r.repository.slice(slash + 1), ref, refresh: false };
  }
  const reg = registries.find((x) => registryHost(x.spec.url) === r.registry);
  if (!reg) return undefined;
  return { repository: `${reg.metadata.name}/${r.repository}`, ref, refresh: true };
}

export class ImagePins {
  private readonly inflight = new Set<string>();
  /** Key -> the last failure and when (asked again after IMAGE_RESOLVE_RETRY_MS). */
  private readonly failed = new Map<string, { why: string; at: number }>();
  /** Per project: bumped when a resolution ends (targets of its placements are computed again). */
  private readonly versions = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /**
   * Pins read or written, by key: a pin never changes once written, and targets are computed per
   * edge (thousands of times for one revision), so the table is read once per pin.
   */
  private readonly known = new Map<string, string>();

  constructor(
    private readonly pins: ImagePinTables,
    private readonly cache: Pick<ImageCache, 'lookup' | 'tag'>,
    private readonly sources: PinSources,
    /** A resolution of the project ended (pinned or failed): re-plan its placements. */
    private readonly onResolved: (project: string) => void,
  ) {}

  version(project: string): number {
    return this.versions.get(project) ?? 0;
  }

  /** The manifests of `workload` at `revision` with every resolvable image pinned, or what is still missing. */
  pin(
    project: string,
    workload: string,
    revision: number,
    manifests: Manifest[],
    registries: readonly Registry[],
  ): Pinned {
    const map = new Map<string, string>();
    const unresolved: string[] = [];
    for (const image of imagesOf(manifests)) {
      const key = `${project}\0${workload}\0${revision}\0${image}`;
      const known = this.known.get(key);
      if (known) {
        map.set(image, known);
        continue;
      }
      const name = cacheName(project, image, this.sources, registries);
      if (!name) continue;
      const pinned = this.pins.get({ project, workload, revision, image });
      // A rollback runs what the revision it copies ran: that revision's digest, not the tag's now.
      const digest = pinned ?? this.copyFromRollback(project, workload, revision, image);
      if (digest) {
        this.known.set(key, pinnedImage(image, digest));
        map.set(image, pinnedImage(image, digest));
        continue;
      }
      const failure = this.failed.get(key);
      unresolved.push(
        failure
          ? `image ${image} resolved to a digest by the hub (${failure.why}; asked again every ${IMAGE_RESOLVE_RETRY_MS / 1000}s)`
          : `image ${image} resolved to a digest by the hub (under way)`,
      );
      this.resolve(key, project, workload, revision, image, name);
    }
    return { manifests: withImages(manifests, map), unresolved };
  }

  private copyFromRollback(project: string, workload: string, revision: number, image: string): string | undefined {
    const from = this.sources.rolledBackFrom?.(project, workload, revision);
    if (from === undefined) return undefined;
    const old = this.pins.get({ project, workload, revision: from, image });
    if (!old) return undefined;
    this.save(project, workload, revision, image, old);
    log.info({ project, workload, revision, image, digest: old, from }, 'image pinned as the revision rolled back to');
    return old;
  }

  stop(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private resolve(
    key: string,
    project: string,
    workload: string,
    revision: number,
    image: string,
    name: { repository: string; ref: string; refresh: boolean },
  ): void {
    if (this.inflight.has(key)) return;
    const failure = this.failed.get(key);
    if (failure && Date.now() - failure.at < IMAGE_RESOLVE_RETRY_MS) return;
    this.inflight.add(key);
    void (async () => {
      try {
        const found = await this.cache.lookup(project, name.repository, name.ref, { refresh: name.refresh });
        if (!found || !isDigest(found.digest))
          throw new Error(
            `the hub's image cache has no ${name.repository}:${name.ref} (push it, or check the Registry)`,
          );
        // Tagged by its digest too (as a pull by digest is): the tag may move on, the pinned
        // manifest stays in the cache (pullable by digest, its blobs referenced) for this revision.
        await this.cache.tag(project, name.repository, found.digest.replace(':', '-'), found.digest);
        this.save(project, workload, revision, image, found.digest);
        this.failed.delete(key);
        log.info({ project, workload, revision, image, digest: found.digest }, 'image pinned');
      } catch (err) {
        const why = (err as Error).message;
        this.failed.set(key, { why, at: Date.now() });
        log.warn({ project, workload, revision, image, err: why }, 'image not resolved; the edges wait');
        const t = setTimeout(() => {
          this.timers.delete(t);
          this.bump(project);
        }, IMAGE_RESOLVE_RETRY_MS);
        t.unref();
        this.timers.add(t);
      } finally {
        this.inflight.delete(key);
        this.bump(project);
      }
    })();
  }

  /** Records what a revision's image resolved to; the first answer for a revision stays. */
  private save(project: string, workload: string, revision: number, image: string, digest: string): void {
    this.pins.put({ project, workload, revision, image }, digest, new Date().toISOString());
  }

  private bump(project: string): void {
    this.versions.set(project, this.version(project) + 1);
    this.onResolved(project);
  }
}
