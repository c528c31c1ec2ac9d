/**
 * @module image_tags (schema: hub/state/schema/image-tags.ts): the tags of the hub's image cache
 * (hub/images/cache.ts), each naming the digest of its manifest.
 */
import { isDigest, type BlobDigest } from '../../core/blobs.js';
import { all, migrateTables, one, run, type SqlDb } from './sql.js';

export interface ImageTagRow {
  repository: string;
  tag: string;
  digest: BlobDigest;
  mediaType: string;
  updatedAt: string;
}

export interface ImageTagTables {
  put(project: string, t: ImageTagRow): void;
  list(project: string): ImageTagRow[];
  /** The manifest a tag or digest names in a repository, if the repository has it. */
  resolve(project: string, repository: string, ref: string): { digest: BlobDigest; mediaType: string } | undefined;
  /** Whether a blob is referenced by an image of this repository (blob_refs of kind `Image`). */
  repositoryHasBlob(project: string, repository: string, digest: BlobDigest): boolean;
}

export function sqlImageTagTables(db: SqlDb): ImageTagTables {
  migrateTables(db, 'images');
  return {
    put(project, t) {
      run(
        db,
        `INSERT INTO image_tags (project, repository, tag, digest, media_type, updated_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(project, repository, tag) DO UPDATE SET digest = excluded.digest, media_type = excluded.media_type, updated_at = excluded.updated_at`,
        project,
        t.repository,
        t.tag,
        t.digest,
        t.mediaType,
        t.updatedAt,
      );
    },
    list: (project) =>
      all<{ repository: string; tag: string; digest: BlobDigest; media_type: string; updated_at: string }>(
        db,
        'SELECT repository, tag, digest, media_type, updated_at FROM image_tags WHERE project = ? ORDER BY repository, tag',
        project,
      ).map((r) => ({
        repository: r.repository,
        tag: r.tag,
        digest: r.digest,
        mediaType: r.media_type,
        updatedAt: r.updated_at,
      })),
    resolve(project, repository, ref) {
      const row = one<{ digest: BlobDigest; media_type: string }>(
        db,
        isDigest(ref)
          ? 'SELECT digest, media_type FROM image_tags WHERE project = ? AND repository = ? AND digest = ? LIMIT 1'
          : 'SELECT digest, media_type FROM image_tags WHERE project = ? AND repository = ? AND tag = ?',
        project,
        repository,
        ref,
      );
      return row ? { digest: row.digest, mediaType: row.media_type } : undefined;
    },
    repositoryHasBlob: (project, repository, digest) =>
      !!one(
        db,
        "SELECT 1 FROM blob_refs WHERE project = ? AND digest = ? AND kind = 'Image' AND name LIKE ? ESCAPE '\\' LIMIT 1",
        project,
        digest,
        `${repository.replace(/[%_\\]/g, (c) => `\\${c}`)}:%`,
      ),
  };
}
