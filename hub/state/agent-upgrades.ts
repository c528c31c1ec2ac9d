/**
 * @module AgentUpgrade rollouts in tables (the only SQL about them; docs/operations.md, "Upgrading
 * edges from the hub"): `agent_upgrade_orders`, the order the rollout planner gave each edge
 * (hub/upgrades/controller.ts: the planning replica writes it, the replica serving the edge copies
 * it into the edge's spec document), and `agent_upgrade_progress`, what each edge last reported of
 * its upgrade, projected at report time (hub/controllers/status.ts projectReport). With hub
 * replicas the documents of an edge are on the replica that serves it; these tables are what the
 * planner and every replica's API read, so `maxUnavailable` counts the whole fleet.
 *
 * `agent_upgrade_outcomes` is each AgentUpgrade's history per edge: how its part there ended (the
 * edge ran its release, or rolled it back, or a later AgentUpgrade ordered the edge first). The
 * progress table holds only an edge's latest report; this one keeps what an upgrade did after
 * the edge moved on, and an upgrade with an outcome on an edge never orders it again
 * (hub/upgrades/claims.ts). Its own schema component, so it migrates apart from the `hub` component (hub/state/schema/).
 */
import { z } from 'zod';
import { AgentUpgradeOrder, AgentUpgradeProgress } from '../../core/mailbox.js';
import {
  type Read,
  type SqlDb,
  all,
  allOf,
  forgetWritten,
  keyed,
  migrateTables,
  pgInJsonList,
  projectEdgeBody,
  read,
  run,
} from './sql.js';
import { edgeAgentVersions } from './edges.js';

/** How an AgentUpgrade's part on one edge ended (written by the planner, hub/upgrades/controller.ts). */
export const AgentUpgradeOutcome = z.object({
  /** The release it was about: an outcome of another digest than the object's now is stale. */
  digest: z.string(),
  version: z.string(),
  /**
   * `Running`: the edge ran the release; `RolledBack`: it tried and rolled back (it never tries
   * the same binary again); `Superseded`: a later AgentUpgrade ordered the edge before this one
   * got there or finished there.
   */
  state: z.enum(['Running', 'RolledBack', 'Superseded']),
  /** Why it rolled back, as the edge said. */
  reason: z.string().optional(),
  /** Superseded: the state the edge last reported for this upgrade, if any. */
  last: z.string().optional(),
  /** The AgentUpgrade that ordered the edge after this one (undefined: none yet). */
  by: z.string().optional(),
  /** When the hub recorded it (milliseconds since epoch, the hub's clock). */
  at: z.number(),
});
export type AgentUpgradeOutcome = z.infer<typeof AgentUpgradeOutcome>;

export interface AgentUpgradeRollouts {
  /** Every edge's order, by edge. */
  orders(): Map<string, AgentUpgradeOrder>;
  /** One edge's order. */
  order(edge: string): AgentUpgradeOrder | undefined;
  /** What `order` reads, given ahead on PostgreSQL for a turn's handshakes (hub/state/index.ts `prefetchHandshakes`). */
  handshakeReads(edge: string): Read[];
  /** The agent version each edge of a project last connected with (the rollout planner's "Newer"). */
  agentVersions(project: string): Map<string, string>;
  /** Sets (or with undefined removes) an edge's order; true when it changed. */
  setOrder(edge: string, order: AgentUpgradeOrder | undefined): boolean;
  /** Removes the orders of `upgrade` from these edges (an edge holding another's order keeps it). */
  withdraw(upgrade: string, edges: string[]): void;
  /** Every edge's reported upgrade progress, by edge. */
  progress(): Map<string, AgentUpgradeProgress>;
  /** Replaces what an edge reported of its upgrade (undefined: nothing). */
  projectProgress(edge: string, progress: AgentUpgradeProgress | undefined): void;
  /** Forgets an edge (decommission). */
  forgetEdge(edge: string): void;
  /** A project's outcomes: upgrade -> edge -> outcome. */
  outcomes(project: string): Map<string, Map<string, AgentUpgradeOutcome>>;
  /** Records (replaces) how an upgrade's part on an edge ended; true when it changed. */
  recordOutcome(project: string, upgrade: string, edge: string, outcome: AgentUpgradeOutcome): boolean;
  /** Forgets an upgrade's outcomes (the object is gone, or its release changed: a new one starts over). */
  forgetUpgrade(project: string, upgrade: string): void;
}

interface Row {
  edge: string;
  body: string;
}

/** Rows written from checked values; one that no longer parses (a damaged row) is left out. */
function parsed<T>(rows: Row[], schema: z.ZodType<T>): Map<string, T> {
  const out = new Map<string, T>();
  for (const r of rows) {
    let v: unknown;
    try {
      v = JSON.parse(r.body);
    } catch {
      continue;
    }
    const p = schema.safeParse(v);
    if (p.success) out.set(r.edge, p.data);
  }
  return out;
}

/** The read of one edge's order, given ahead at its handshake (hub/state/index.ts `handshakeReads`). */
export const upgradeOrderRead = (edge: string) =>
  keyed(read('SELECT edge, body FROM agent_upgrade_orders WHERE edge = ?', edge), 'edge', edge, (edges) =>
    read(`SELECT edge, body FROM agent_upgrade_orders WHERE ${pgInJsonList('edge')}`, JSON.stringify(edges)),
  );

interface OutcomeRow {
  upgrade: string;
  edge: string;
  body: string;
}

export function sqlAgentUpgradeRollouts(db: SqlDb): AgentUpgradeRollouts {
  migrateTables(db, 'agent-upgrades');
  return {
    orders() {
      return parsed(all<Row>(db, 'SELECT edge, body FROM agent_upgrade_orders'), AgentUpgradeOrder);
    },
    handshakeReads: (edge) => [upgradeOrderRead(edge)],
    agentVersions: (project) => edgeAgentVersions(db, project),
    order(edge) {
      return parsed(allOf<Row>(db, upgradeOrderRead(edge)), AgentUpgradeOrder).get(edge);
    },
    setOrder(edge, order) {
      if (!order) return run(db, 'DELETE FROM agent_upgrade_orders WHERE edge = ?', edge) > 0;
      const body = JSON.stringify(order);
      return (
        run(
          db,
          `INSERT INTO agent_upgrade_orders (edge, upgrade, body) VALUES (?, ?, ?)
           ON CONFLICT(edge) DO UPDATE SET upgrade = excluded.upgrade, body = excluded.body
           WHERE agent_upgrade_orders.body != excluded.body`,
          edge,
          order.upgrade,
          body,
        ) > 0
      );
    },
    withdraw(upgrade, edges) {
      for (const e of edges) run(db, 'DELETE FROM agent_upgrade_orders WHERE edge = ? AND upgrade = ?', e, upgrade);
    },
    progress() {
      return parsed(all<Row>(db, 'SELECT edge, body FROM agent_upgrade_progress'), AgentUpgradeProgress);
    },
    projectProgress(edge, progress) {
      projectEdgeBody(db, 'agent_upgrade_progress', 'upgrade', edge, progress);
    },
    forgetEdge(edge) {
      forgetWritten(db, edge, 'upgrade');
      run(db, 'DELETE FROM agent_upgrade_orders WHERE edge = ?', edge);
      run(db, 'DELETE FROM agent_upgrade_progress WHERE edge = ?', edge);
      run(db, 'DELETE FROM agent_upgrade_outcomes WHERE edge = ?', edge);
    },
    outcomes(project) {
      const out = new Map<string, Map<string, AgentUpgradeOutcome>>();
      const rows = all<OutcomeRow>(
        db,
        'SELECT upgrade, edge, body FROM agent_upgrade_outcomes WHERE project = ?',
        project,
      );
      for (const r of rows) {
        const o = parsed([{ edge: r.edge, body: r.body }], AgentUpgradeOutcome).get(r.edge);
        if (!o) continue;
        if (!out.has(r.upgrade)) out.set(r.upgrade, new Map());
        out.get(r.upgrade)!.set(r.edge, o);
      }
      return out;
    },
    recordOutcome(project, upgrade, edge, outcome) {
      return (
        run(
          db,
          `INSERT INTO agent_upgrade_outcomes (project, upgrade, edge, body) VALUES (?, ?, ?, ?)
           ON CONFLICT(project, upgrade, edge) DO UPDATE SET body = excluded.body
           WHERE agent_upgrade_outcomes.body != excluded.body`,
          project,
          upgrade,
          edge,
          JSON.stringify(outcome),
        ) > 0
      );
    },
    forgetUpgrade(project, upgrade) {
      run(db, 'DELETE FROM agent_upgrade_outcomes WHERE project = ? AND upgrade = ?', project, upgrade);
    },
  };
}
