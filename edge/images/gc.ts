/**
 * @module Garbage collection of staged images (issue #19): the images this edge loaded for a
 * rollout (edge/images/staging.ts records them in `DATA/images/staged.json`) are removed
 * (`podman rmi`, never forced) once no workload of the edge's spec names them and no staging order
 * asks for them; their blobs leave the edge's blob store unless another staged image shares them.
 * An image a container still uses (the old version's pod going away) is kept and tried again later.
 * Images the edge did not stage (pulled, loaded by hand) are never touched.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BlobDigest } from '../../core/blobs.js';
import { createLogger } from '../../core/logger.js';
import type { EdgeBlobStore } from '../blobs/store.js';
import type { Podman } from '../drivers/podman/cli.js';

const log = createLogger('edge:images');

export interface StagedRecord {
  image: string;
  /** The manifest, config and layers: the blobs it holds in the edge's blob store. */
  blobs: string[];
  at: number;
}

/** The images this edge staged, kept in one small JSON file (written whole, atomically). */
export class StagedImages {
  private readonly file: string;

  constructor(dataDir: string) {
    this.file = path.join(dataDir, 'images', 'staged.json');
  }

  list(): StagedRecord[] {
    try {
      const j = JSON.parse(fs.readFileSync(this.file, 'utf8')) as unknown;
      return Array.isArray(j)
        ? j.filter(
            (r): r is StagedRecord =>
              typeof r === 'object' && r !== null && typeof r.image === 'string' && Array.isArray(r.blobs),
          )
        : [];
    } catch {
      return [];
    }
  }

  add(r: StagedRecord): void {
    this.save([...this.list().filter((x) => x.image !== r.image), r]);
  }

  private save(records: StagedRecord[]): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(records));
    fs.renameSync(tmp, this.file);
  }

  /**
   * Removes every staged image `inUse` does not name; returns how many could not be removed yet
   * (a container still uses them: ask again later).
   */
  async collect(inUse: ReadonlySet<string>, podman: Podman, blobs: EdgeBlobStore): Promise<number> {
    const records = this.list();
    const keep = records.filter((r) => inUse.has(r.image));
    let left = 0;
    for (const r of records) {
      if (inUse.has(r.image)) continue;
      const exists = (await podman.run(['image', 'exists', r.image])).code === 0;
      if (exists) {
        const rm = await podman.run(['rmi', r.image]);
        if (rm.code !== 0) {
          left++;
          keep.push(r);
          log.debug({ image: r.image, err: rm.stderr.trim() }, 'staged image still in use; kept for now');
          continue;
        }
      }
      const needed = new Set(keep.flatMap((k) => k.blobs));
      for (const d of r.blobs) if (!needed.has(d)) await blobs.remove(d as BlobDigest);
      log.info({ image: r.image }, 'staged image removed: no workload on this edge uses it');
    }
    if (keep.length !== records.length) this.save(keep);
    return left;
  }
}
