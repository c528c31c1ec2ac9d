/**
 * @module Image pre-staging in tables (the only SQL about them; docs/drivers.md, "Pre-staging"):
 * `staging_orders`, what each placement asks each edge to stage (written by the images gate in
 * the planning replica's pass, hub/images/gate.ts; the replica serving the edge copies the union
 * into its spec document, hub/images/staging.ts; `over_budget` remembers the version an
 * OverBudget event was recorded for), and `staging_reports`, what each edge last
 * reported of the images it staged, projected at report time (hub/controllers/status.ts
 * projectReport). With hub replicas the documents of an edge are on the replica that serves it;
 * these tables are what the planner and every replica's API read.
 */
import { StagingGroup, StagingReport } from '../../core/staging.js';
import type { z } from 'zod';
import {
  type Read,
  type SqlDb,
  all,
  allOf,
  forgetWritten,
  keyed,
  pgInJsonList,
  projectEdgeBody,
  read,
  run,
} from './sql.js';

export interface ImageStagingState {
  /**
   * Replaces what placement `key` (`project/name`) asks each edge to stage (edges left out ask
   * nothing of it any more); returns the edges whose orders changed.
   */
  setPlacement(key: string, groups: Map<string, StagingGroup>): string[];
  /** Every edge's groups, ordered by placement. */
  orders(): Map<string, StagingGroup[]>;
  /** One edge's groups, ordered by placement. */
  ordersOf(edge: string): StagingGroup[];
  /** What `ordersOf` reads, given ahead on PostgreSQL for a turn's handshakes (hub/state/index.ts `prefetchHandshakes`). */
  handshakeReads(edge: string): Read[];
  /** Placement `key`'s group on each edge, with what that edge last reported. */
  placement(key: string): { edge: string; group: StagingGroup; report?: StagingReport }[];
  /** What an edge last reported of the images it staged. */
  reported(edge: string): StagingReport | undefined;
  /** Replaces what an edge reported (undefined: nothing). */
  projectReport(edge: string, report: StagingReport | undefined): void;
  /**
   * Marks that placement `key`'s order to `edge` was reported over its budget for `version`; true
   * when it was not marked so yet (the caller records the one event). An order that goes forgets it.
   */
  noteOverBudget(edge: string, key: string, version: string): boolean;
  /** Forgets an edge (decommission). */
  forgetEdge(edge: string): void;
}

/** A row written from a checked value; one that no longer parses (a damaged row) is undefined. */
function parsed<T>(body: string | null | undefined, schema: z.ZodType<T>): T | undefined {
  if (!body) return undefined;
  try {
    const p = schema.safeParse(JSON.parse(body));
    return p.success ? p.data : undefined;
  } catch {
    return undefined;
  }
}

interface OrderRow {
  edge: string;
  placement: string;
  body: string;
}

/** The read of one edge's staging orders, given ahead at its handshake (hub/state/index.ts `handshakeReads`). */
export const stagingOrdersRead = (edge: string) =>
  keyed(
    read('SELECT edge, placement, body FROM staging_orders WHERE edge = ? ORDER BY placement', edge),
    'edge',
    edge,
    (edges) =>
      read(
        `SELECT edge, placement, body FROM staging_orders WHERE ${pgInJsonList('edge')} ORDER BY edge, placement`,
        JSON.stringify(edges),
      ),
  );

export function sqlImageStagingState(db: SqlDb): ImageStagingState {
  return {
    setPlacement(key, groups) {
      const before = new Map(
        all<OrderRow>(db, 'SELECT edge, placement, body FROM staging_orders WHERE placement = ?', key).map((r) => [
          r.edge,
          r.body,
        ]),
      );
      const changed: string[] = [];
      for (const [edge, g] of groups) {
        const body = JSON.stringify(g);
        if (before.get(edge) === body) continue;
        run(
          db,
          `INSERT INTO staging_orders (edge, placement, body) VALUES (?, ?, ?)
           ON CONFLICT(edge, placement) DO UPDATE SET body = excluded.body`,
          edge,
          key,
          body,
        );
        changed.push(edge);
      }
      for (const edge of before.keys())
        if (!groups.has(edge)) {
          run(db, 'DELETE FROM staging_orders WHERE edge = ? AND placement = ?', edge, key);
          changed.push(edge);
        }
      return changed;
    },
    orders() {
      const out = new Map<string, StagingGroup[]>();
      for (const r of all<OrderRow>(db, 'SELECT edge, placement, body FROM staging_orders ORDER BY edge, placement')) {
        const g = parsed(r.body, StagingGroup);
        if (!g) continue;
        const list = out.get(r.edge) ?? [];
        list.push(g);
        out.set(r.edge, list);
      }
      return out;
    },
    handshakeReads: (edge) => [stagingOrdersRead(edge)],
    ordersOf(edge) {
      return allOf<OrderRow>(db, stagingOrdersRead(edge)).flatMap((r) => parsed(r.body, StagingGroup) ?? []);
    },
    placement(key) {
      return all<OrderRow & { report: string | null }>(
        db,
        `SELECT o.edge, o.placement, o.body, r.body AS report FROM staging_orders o
         LEFT JOIN staging_reports r ON r.edge = o.edge WHERE o.placement = ? ORDER BY o.edge`,
        key,
      ).flatMap((r) => {
        const group = parsed(r.body, StagingGroup);
        const report = parsed(r.report, StagingReport);
        return group ? [{ edge: r.edge, group, ...(report ? { report } : {}) }] : [];
      });
    },
    reported(edge) {
      return parsed(
        all<{ body: string }>(db, 'SELECT body FROM staging_reports WHERE edge = ?', edge)[0]?.body,
        StagingReport,
      );
    },
    projectReport(edge, report) {
      projectEdgeBody(db, 'staging_reports', 'staging', edge, report);
    },
    noteOverBudget(edge, key, version) {
      return (
        run(
          db,
          `UPDATE staging_orders SET over_budget = ?
           WHERE edge = ? AND placement = ? AND (over_budget IS NULL OR over_budget <> ?)`,
          version,
          edge,
          key,
          version,
        ) === 1
      );
    },
    forgetEdge(edge) {
      forgetWritten(db, edge, 'staging');
      run(db, 'DELETE FROM staging_orders WHERE edge = ?', edge);
      run(db, 'DELETE FROM staging_reports WHERE edge = ?', edge);
    },
  };
}
