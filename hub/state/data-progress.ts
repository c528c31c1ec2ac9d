/**
 * @module The data delivery projection (table `data_progress`): what each edge last reported about
 * each DataObject it was ordered to hold (core/delivery.ts DeliveryProgress), written inside the
 * transaction that applied the report document (hub/controllers/status.ts projectReport). The only
 * SQL about it. With hub replicas the report documents of an edge are on the replica that serves
 * it; this table is what every replica reads `delivered x/y` from (hub/data/delivery.ts).
 */
import { DeliveryProgress } from '../../core/delivery.js';
import { type SqlDb, all, alreadyWritten, forgetWritten, jsonListParam, run, write } from './sql.js';

export interface DataProgressState {
  /** Replaces what an edge reported: its DataObjects not in `progress` are forgotten. */
  project(edge: string, progress: Record<string, DeliveryProgress>): void;
  /** Forgets everything an edge reported (decommission). */
  forgetEdge(edge: string): void;
  /** What each edge reported about DataObject `name`, by edge (edges of other projects included: filter by selection). */
  byObject(name: string): Map<string, DeliveryProgress>;
  /** What one edge reported about each DataObject it was ordered to hold, by name, in name order. */
  byEdge(edge: string): Map<string, DeliveryProgress>;
}

interface Row {
  /** The edge (byObject) or the object's name (byEdge). */
  key: string;
  progress: string;
}

export function sqlDataProgressState(db: SqlDb): DataProgressState {
  return {
    project(edge, progress) {
      const entries = Object.entries(progress);
      // Most reports repeat it (most edges hold no DataObject): skipped when written so before.
      if (alreadyWritten(db, edge, 'data', () => JSON.stringify(entries))) return;
      // Queued (sql.ts write), as the workload status: with the next round trip on PostgreSQL.
      // An edge holding no DataObject (most reports) costs one DELETE on its key.
      for (const [name, p] of entries)
        write(
          db,
          `INSERT INTO data_progress (edge, name, progress) VALUES (?, ?, ?)
           ON CONFLICT(edge, name) DO UPDATE SET progress = excluded.progress`,
          edge,
          name,
          JSON.stringify(p),
        );
      if (entries.length)
        write(
          db,
          `DELETE FROM data_progress WHERE edge = ? AND name NOT IN (${jsonListParam(db)})`,
          edge,
          JSON.stringify(entries.map(([name]) => name)),
        );
      else write(db, 'DELETE FROM data_progress WHERE edge = ?', edge);
    },
    forgetEdge(edge) {
      forgetWritten(db, edge, 'data');
      run(db, 'DELETE FROM data_progress WHERE edge = ?', edge);
    },
    byObject(name) {
      return parsed(all<Row>(db, 'SELECT edge AS key, progress FROM data_progress WHERE name = ?', name));
    },
    byEdge(edge) {
      return parsed(all<Row>(db, 'SELECT name AS key, progress FROM data_progress WHERE edge = ? ORDER BY name', edge));
    },
  };
}

/** Rows written from a checked report; a row that no longer parses (a damaged or older row) is left out. */
function parsed(rows: Row[]): Map<string, DeliveryProgress> {
  const out = new Map<string, DeliveryProgress>();
  for (const r of rows) {
    let v: unknown;
    try {
      v = JSON.parse(r.progress);
    } catch {
      continue;
    }
    const p = DeliveryProgress.safeParse(v);
    if (p.success) out.set(r.key, p.data);
  }
  return out;
}
