/**
 * @module interconnect_reports (schema: hub/state/schema/interconnect.ts): what each consuming
 * edge last reported of its ServiceImport listeners (core/orders/interconnect.ts ImportReport),
 * one JSON body per edge, projected inside the transaction that applied the report document. Every
 * hub replica reads a ServiceImport's status from it (hub/interconnect/status.ts).
 */
import { z } from 'zod';
import { ImportReport } from '../../core/orders/interconnect.js';
import { all, migrateTables, projectEdgeBody, forgetWritten, run, type SqlDb } from './sql.js';

export interface InterconnectTables {
  /** Replaces what an edge reported of its listeners (none: its row goes). */
  project(edge: string, reports: Record<string, ImportReport> | undefined): void;
  forgetEdge(edge: string): void;
  /** What each of these edges reported of import `name`, by edge (edges that said nothing are absent). */
  ofImport(name: string, edges: readonly string[]): Map<string, ImportReport>;
}

const Body = z.record(z.string(), ImportReport);

export function sqlInterconnectTables(db: SqlDb): InterconnectTables {
  migrateTables(db, 'interconnect');
  return {
    project: (edge, reports) => projectEdgeBody(db, 'interconnect_reports', 'interconnect', edge, reports),
    forgetEdge(edge) {
      forgetWritten(db, edge, 'interconnect');
      run(db, 'DELETE FROM interconnect_reports WHERE edge = ?', edge);
    },
    ofImport(name, edges) {
      const out = new Map<string, ImportReport>();
      if (!edges.length) return out;
      const want = new Set(edges);
      // One row per consuming edge: the table holds only edges that listen for some import.
      for (const r of all<{ edge: string; body: string }>(db, 'SELECT edge, body FROM interconnect_reports')) {
        if (!want.has(r.edge)) continue;
        let v: unknown;
        try {
          v = JSON.parse(r.body);
        } catch {
          continue;
        }
        const p = Body.safeParse(v);
        const one = p.success ? p.data[name] : undefined;
        if (one) out.set(r.edge, one);
      }
      return out;
    },
  };
}
