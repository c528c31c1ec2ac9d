/**
 * @module AgentUpgrade rollouts in tables (the only SQL about them; docs/operations.md, "Upgrading
 * edges from the hub"): `agent_upgrade_orders`, the order the rollout planner gave each edge
 * (hub/upgrades/controller.ts: the planning replica writes it, the replica serving the edge copies
 * it into the edge's spec document), and `agent_upgrade_progress`, what each edge last reported of
 * its upgrade, projected at report time (hub/controllers/status.ts projectReport). With hub
 * replicas the documents of an edge are on the replica that serves it; these tables are what the
 * planner and every replica's API read, so `maxUnavailable` counts the whole fleet.
 */
import { AgentUpgradeOrder, AgentUpgradeProgress } from '../../core/mailbox.js';
import type { z } from 'zod';
import { type SqlDb, all, allOf, forgetWritten, keyed, pgInJsonList, projectEdgeBody, read, run } from './sql.js';

export interface AgentUpgradeRollouts {
  /** Every edge's order, by edge. */
  orders(): Map<string, AgentUpgradeOrder>;
  /** One edge's order. */
  order(edge: string): AgentUpgradeOrder | undefined;
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

export function sqlAgentUpgradeRollouts(db: SqlDb): AgentUpgradeRollouts {
  return {
    orders() {
      return parsed(all<Row>(db, 'SELECT edge, body FROM agent_upgrade_orders'), AgentUpgradeOrder);
    },
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
    },
  };
}
