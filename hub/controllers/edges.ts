/**
 * @module What the hub knows about edges at run time, read from SQLite: labels and schedulability
 * (the Edge object), approval and connection facts (edge_runtime). Heartbeats update last_seen
 * here and nowhere else: they never touch a document.
 */
import { inventoryLabels } from '../../core/inventory.js';
import { cachedStatement } from '../../sync/sqlite.js';
import { OFFLINE_AFTER_MS } from '../../core/durations.js';
import type { Edge, Inventory } from '../../core/resources.js';
import type { SqliteDatabase } from '../../sync/sqlite.js';

export interface EdgeRuntime {
  name: string;
  project: string;
  approved: boolean;
  enrolledAt: number;
  lastSeen?: number;
  connectedSince?: number;
  disconnectedAt?: number;
  agentVersion?: string;
  remoteAddress?: string;
  inventory?: Inventory;
}

interface Row {
  name: string;
  project: string;
  approved: number;
  enrolled_at: number;
  last_seen: number | null;
  connected_since: number | null;
  disconnected_at: number | null;
  agent_version: string | null;
  remote_address: string | null;
  inventory: string | null;
}

const toRuntime = (r: Row): EdgeRuntime => ({
  name: r.name,
  project: r.project,
  approved: r.approved === 1,
  enrolledAt: r.enrolled_at,
  lastSeen: r.last_seen ?? undefined,
  connectedSince: r.connected_since ?? undefined,
  disconnectedAt: r.disconnected_at ?? undefined,
  agentVersion: r.agent_version ?? undefined,
  remoteAddress: r.remote_address ?? undefined,
  inventory: r.inventory ? (JSON.parse(r.inventory) as Inventory) : undefined,
});

export function edgeRuntime(db: SqliteDatabase, name: string): EdgeRuntime | undefined {
  const r = cachedStatement(db, 'SELECT * FROM edge_runtime WHERE name = ?').get(name) as Row | undefined;
  return r && toRuntime(r);
}

/** What scheduling and the online/offline view need, without parsing inventories: one light scan. */
export type EdgeLiveness = Pick<EdgeRuntime, 'approved' | 'connectedSince' | 'lastSeen' | 'enrolledAt'> & {
  /** The labels derived from its inventory (docs/inventory.md). */
  inventoryLabels?: Record<string, string>;
};

/**
 * Records an edge's inventory and the labels derived from it (the one writer of both columns);
 * true when the labels changed, so placements must select again.
 */
export function storeInventory(db: SqliteDatabase, edge: string, inv: Inventory): boolean {
  const labels = JSON.stringify(inventoryLabels(inv));
  const before = cachedStatement(db, 'SELECT inventory_labels FROM edge_runtime WHERE name = ?').get(edge) as
    { inventory_labels: string | null } | undefined;
  cachedStatement(db, 'UPDATE edge_runtime SET inventory = ?, inventory_labels = ? WHERE name = ?').run(
    JSON.stringify(inv),
    labels,
    edge,
  );
  return before !== undefined && before.inventory_labels !== labels;
}

export function edgeLiveness(db: SqliteDatabase, project: string): Map<string, EdgeLiveness> {
  const rows = (
    project === '*'
      ? cachedStatement(
          db,
          'SELECT name, approved, connected_since, last_seen, enrolled_at, inventory_labels FROM edge_runtime',
        ).all()
      : cachedStatement(
          db,
          'SELECT name, approved, connected_since, last_seen, enrolled_at, inventory_labels FROM edge_runtime WHERE project = ?',
        ).all(project)
  ) as {
    name: string;
    approved: number;
    connected_since: number | null;
    last_seen: number | null;
    enrolled_at: number;
    inventory_labels: string | null;
  }[];
  const out = new Map<string, EdgeLiveness>();
  for (const r of rows)
    out.set(r.name, {
      approved: r.approved === 1,
      connectedSince: r.connected_since ?? undefined,
      lastSeen: r.last_seen ?? undefined,
      enrolledAt: r.enrolled_at,
      ...(r.inventory_labels ? { inventoryLabels: JSON.parse(r.inventory_labels) as Record<string, string> } : {}),
    });
  return out;
}

export function isOnline(rt: EdgeLiveness | undefined, now = Date.now()): boolean {
  return !!rt?.connectedSince && rt.lastSeen !== undefined && now - rt.lastSeen < OFFLINE_AFTER_MS;
}

export type EdgePhaseView = 'Pending' | 'Online' | 'Offline';

export function edgePhase(rt: EdgeLiveness | undefined, now = Date.now()): EdgePhaseView {
  if (!rt?.approved) return 'Pending';
  return isOnline(rt, now) ? 'Online' : 'Offline';
}

/** Edges a placement may schedule to: approved and not drained. */
export function schedulableEdges(
  edges: Edge[],
  runtimes: Map<string, EdgeLiveness>,
): { name: string; labels: Record<string, string>; annotations: Record<string, string>; unschedulable: boolean }[] {
  return edges
    .filter((e) => runtimes.get(e.metadata.name)?.approved)
    .map((e) => ({
      name: e.metadata.name,
      // The edge's own labels plus those derived from its inventory (docs/inventory.md).
      labels: { ...runtimes.get(e.metadata.name)?.inventoryLabels, ...e.metadata.labels },
      annotations: e.metadata.annotations,
      unschedulable: e.spec.unschedulable,
    }));
}
