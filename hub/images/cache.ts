/**
 * @module The hub's image cache (docs/drivers.md, "The hub's image cache"): container images kept
 * in the blob store (manifest, config and layers are blobs of the project, deduplicated by digest)
 * and tags in the `image_tags` table, the only code that writes it. A tag is made by `tag` (a
 * manifest whose blobs were pushed) or by a pull-through from a project's Registry (`lookup`).
 * routes.ts serves the cache over HTTP: the OCI distribution pull API and the images API.
 *
 * A tag holds references on its manifest, config and layers (blob_refs, kind `Image`), so blob
 * garbage collection keeps them while tagged.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { isDigest, type BlobDigest } from '../../core/blobs.js';
import { OutpostError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import type { ImageTagRow } from '../state/image-tags.js';
import type { HubState } from '../state/index.js';
import type { HubBlobs } from '../blobs/index.js';
import type { Registry } from '../../core/resources.js';
import type { SecretBox } from '../secrets.js';
import { UpstreamRegistry } from './upstream.js';

const log = createLogger('hub:images');

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
const MANIFEST_TYPES = [OCI_MANIFEST, DOCKER_MANIFEST];
/** A manifest is small JSON; bigger is not a manifest. */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
/** Repository names as the distribution spec allows them (lower case path components). */
export const REPOSITORY = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

export type ImageTag = ImageTagRow;

interface Manifest {
  mediaType?: string;
  config?: { digest?: unknown };
  layers?: { digest?: unknown }[];
}

/** The digests a manifest names (config, then layers); throws when it is not an image manifest. */
export function manifestBlobs(text: string): BlobDigest[] {
  let m: Manifest;
  try {
    m = JSON.parse(text) as Manifest;
  } catch {
    throw new OutpostError('invalid', 'the manifest is not JSON');
  }
  const digests = [m.config?.digest, ...(Array.isArray(m.layers) ? m.layers.map((l) => l?.digest) : [])];
  if (!m.config || !Array.isArray(m.layers) || digests.some((d) => typeof d !== 'string' || !isDigest(d)))
    throw new OutpostError(
      'invalid',
      'not an image manifest (config and layers with sha256 digests): push one image, not an index (podman save --format oci-archive IMAGE)',
    );
  return digests as BlobDigest[];
}

/** Where pull-through finds a project's Registry objects (and the key that opens their passwords). */
export interface PullThrough {
  registry(project: string, name: string): Registry | undefined;
  box: SecretBox;
}

export class ImageCache {
  /** Pull-throughs under way, by project/repository:ref: concurrent pulls of one tag fetch it once. */
  private readonly inflight = new Map<string, Promise<{ digest: BlobDigest; mediaType: string } | undefined>>();

  constructor(
    private readonly state: Pick<HubState, 'imageTags' | 'transaction'>,
    private readonly blobs: HubBlobs,
    private readonly upstream?: PullThrough,
  ) {}

  /**
   * The manifest `repository:ref` names: from the cache, else, when the repository's first
   * component names a Registry of the project (`REGISTRY/upstream/repo`), pulled through from it
   * once: manifest, config and layers stored as blobs, the tag recorded with the digest it had then.
   * `refresh` asks the Registry again for a tag it has cached (a new workload revision resolving
   * its images, hub/images/pins.ts); when the Registry cannot answer, the cached digest is used.
   */
  async lookup(
    project: string,
    repository: string,
    ref: string,
    opts: { refresh?: boolean } = {},
  ): Promise<{ digest: BlobDigest; mediaType: string } | undefined> {
    const cached = this.resolve(project, repository, ref);
    if (cached && !(opts.refresh && !isDigest(ref))) return cached;
    const slash = repository.indexOf('/');
    if (!this.upstream || slash < 0) return cached;
    const registry = this.upstream.registry(project, repository.slice(0, slash));
    if (!registry) return cached;
    const key = `${project}/${repository}:${ref}`;
    let p = this.inflight.get(key);
    if (!p) {
      p = this.pullThrough(project, registry, repository, repository.slice(slash + 1), ref).finally(() =>
        this.inflight.delete(key),
      );
      this.inflight.set(key, p);
    }
    if (!cached) return p;
    return p.catch((err: unknown) => {
      log.warn(
        { project, repository, ref, err: (err as Error).message },
        'registry not answering: the cached digest is used',
      );
      return cached;
    });
  }

  private async pullThrough(
    project: string,
    registry: Registry,
    repository: string,
    upstreamRepo: string,
    ref: string,
  ): Promise<{ digest: BlobDigest; mediaType: string }> {
    const up = new UpstreamRegistry(registry, this.upstream!.box);
    const by = `registry:${registry.metadata.name}`;
    const m = await up.manifest(upstreamRepo, ref);
    const digest = `sha256:${createHash('sha256').update(m.bytes).digest('hex')}` as BlobDigest;
    if (isDigest(ref) && ref !== digest)
      throw new OutpostError(
        'invalid',
        `registry ${registry.metadata.name} answered ${ref} with a manifest of digest ${digest}`,
      );
    for (const d of manifestBlobs(m.bytes.toString('utf8'))) {
      if (this.blobs.get(project, d)) continue;
      const b = await up.blob(upstreamRepo, d);
      await this.blobs.upload(b.body, {
        project,
        uploadedBy: by,
        expected: d,
        ...(b.size !== undefined ? { size: b.size } : {}),
      });
    }
    if (!this.blobs.get(project, digest))
      await this.blobs.upload(Readable.from([m.bytes]), {
        project,
        uploadedBy: by,
        mediaType: m.mediaType,
        expected: digest,
      });
    // A pull by digest is recorded under a tag named after it (sha256-HEX), so its blobs stay referenced.
    const tag = isDigest(ref) ? ref.replace(':', '-') : ref;
    await this.tag(project, repository, tag, digest);
    log.info(
      { project, registry: registry.metadata.name, image: `${upstreamRepo}:${ref}`, digest },
      'image pulled through',
    );
    return { digest, mediaType: m.mediaType };
  }

  /** Tags `repository:tag` with a manifest the project holds, whose blobs it all holds. */
  async tag(project: string, repository: string, tag: string, manifest: BlobDigest): Promise<ImageTag> {
    if (!REPOSITORY.test(repository))
      throw new OutpostError(
        'invalid',
        `repository "${repository.slice(0, 80)}": use lower-case path components like team/app`,
      );
    if (!TAG.test(tag)) throw new OutpostError('invalid', `tag "${tag.slice(0, 80)}": use letters, digits, . _ -`);
    const info = this.blobs.get(project, manifest);
    if (!info)
      throw new OutpostError('not_found', `manifest ${manifest} is not a blob of project ${project}: push it first`);
    if (info.size > MAX_MANIFEST_BYTES)
      throw new OutpostError('invalid', `blob ${manifest} is too big to be a manifest`);
    const text = await fs.promises.readFile(this.blobs.files.path(manifest), 'utf8');
    const named = manifestBlobs(text);
    const missing = named.filter((d) => !this.blobs.get(project, d));
    if (missing.length)
      throw new OutpostError(
        'invalid',
        `the manifest names blobs project ${project} does not hold: ${missing.join(', ')}; push them first (outpost image push does)`,
      );
    const mediaType = MANIFEST_TYPES.includes(info.mediaType)
      ? info.mediaType
      : ((JSON.parse(text) as Manifest).mediaType ?? OCI_MANIFEST);
    const now = new Date().toISOString();
    this.state.transaction(() => {
      this.state.imageTags.put(project, { repository, tag, digest: manifest, mediaType, updatedAt: now });
      this.blobs.setReferences(project, 'Image', `${repository}:${tag}`, [manifest, ...named]);
    });
    log.info({ project, repository, tag, digest: manifest }, 'image tagged');
    return { repository, tag, digest: manifest, mediaType, updatedAt: now };
  }

  list(project: string): ImageTag[] {
    return this.state.imageTags.list(project);
  }

  /** The manifest a tag or digest names in a repository, if the repository has it. */
  resolve(project: string, repository: string, ref: string): { digest: BlobDigest; mediaType: string } | undefined {
    return this.state.imageTags.resolve(project, repository, ref);
  }

  /** Whether a blob belongs to an image of this repository (a pull names only those). */
  repositoryHasBlob(project: string, repository: string, digest: BlobDigest): boolean {
    return this.state.imageTags.repositoryHasBlob(project, repository, digest);
  }
}
