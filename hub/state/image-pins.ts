/**
 * @module image_pins (schema: hub/state/schema/image-pins.ts): the digest each image of a workload
 * revision resolved to (hub/images/pins.ts). A pin never changes once written.
 */
import { migrateTables, one, run, type SqlDb } from './sql.js';

export interface ImagePinKey {
  project: string;
  workload: string;
  revision: number;
  image: string;
}

export interface ImagePinTables {
  get(k: ImagePinKey): string | undefined;
  /** Records a pin; the first answer for a revision's image stays. */
  put(k: ImagePinKey, digest: string, resolvedAt: string): void;
}

export function sqlImagePinTables(db: SqlDb): ImagePinTables {
  migrateTables(db, 'image-pins');
  return {
    get: (k) =>
      one<{ digest: string }>(
        db,
        'SELECT digest FROM image_pins WHERE project = ? AND workload = ? AND revision = ? AND image = ?',
        k.project,
        k.workload,
        k.revision,
        k.image,
      )?.digest,
    put(k, digest, resolvedAt) {
      run(
        db,
        `INSERT INTO image_pins (project, workload, revision, image, digest, resolved_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(project, workload, revision, image) DO NOTHING`,
        k.project,
        k.workload,
        k.revision,
        k.image,
        digest,
        resolvedAt,
      );
    },
  };
}
