/**
 * @module An edge's runtime facts and connection history (tables `edge_runtime` and, through
 * connections.ts, `connections`): the only SQL about them. Runtime facts change without an operator (enrollment, approval, the
 * last heartbeat, connections, the reported inventory) and are not part of the Edge object's
 * resourceVersion; heartbeats land here and never in a document. What an edge's life means
 * (events, coalescing, when it counts as offline) lives in hub/edges/; this module only stores.
 *
 * `EdgeState` is the seam for a second implementation (PostgreSQL, issue #22); `sqlEdgeState`
 * is the one used today, synchronous like the rest of the hub's SQLite access.
 */
import { createHash } from 'node:crypto';
import { inventoryLabels } from '../../core/inventory.js';
import type { Inventory } from '../../core/resources.js';
import {
  type SqlDb,
  all,
  allOf,
  alreadyWritten,
  forgetWritten,
  json,
  inJsonList,
  keyed,
  one,
  oneOf,
  pgInJsonList,
  read,
  run,
  write,
} from './sql.js';
import { connectionRows, type ConnectionRecord, type ConnectionStart } from './connections.js';

export type { ConnectionRecord, ConnectionStart };

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
  /** The hub replica of its current (or last) connection, and that connection's id. */
  replica?: string;
  connection?: string;
}

/** What scheduling and the online/offline view need, without parsing inventories: one light scan. */
export type EdgeLiveness = Pick<EdgeRuntime, 'approved' | 'connectedSince' | 'lastSeen' | 'enrolledAt'> & {
  /** The labels derived from its inventory (docs/inventory.md). */
  inventoryLabels?: Record<string, string>;
};

/** A connection of an approved edge of a project, with what its edge's runtime says now. */
export interface ConnectionSpan {
  edge: string;
  connectedAt: number;
  disconnectedAt?: number;
  /** The edge's current connection start (undefined when it is disconnected). */
  edgeConnectedSince?: number;
  edgeLastSeen?: number;
}

export interface EdgeState {
  get(name: string): EdgeRuntime | undefined;
  /** The project of an enrolled edge (edge names are unique across projects). */
  projectOf(name: string): string | undefined;
  /** Every enrolled edge's project, by edge. */
  projectsByEdge(): Map<string, string>;
  /** The edge is enrolled (it has a runtime row). */
  exists(name: string): boolean;
  /**
   * Which of `names` are enrolled, with the Edge object's labels as stored (JSON; undefined without
   * one), in one read: the spec writer's, once per slice of edges.
   */
  enrolledLabels(names: readonly string[]): Map<string, string | undefined>;
  /** Names of every enrolled edge. */
  names(): string[];
  /** Liveness of every edge of a project (`*`: all projects), by name. */
  liveness(project: string): Map<string, EdgeLiveness>;
  count(): number;
  /** Projects that hold at least one edge. */
  projects(): string[];
  /** Edges with an open connection whose last heartbeat is older than `cutoff`. */
  quietSince(cutoff: number): string[];
  /** Every edge that was ever heard from, with when. */
  lastSeenAll(): { name: string; project: string; lastSeen: number }[];

  enroll(e: { name: string; project: string; approved: boolean; at: number }): void;
  approve(name: string): void;
  /** Forgets the runtime row of a decommissioned edge (its connection history ages out as usual). */
  remove(name: string): void;
  /** Moves an edge to another project (its project's deletion, hub/projects/deletion.ts). */
  moveProject(name: string, project: string): void;
  /** Records the inventory and its derived labels; true when those labels changed. */
  storeInventory(name: string, inv: Inventory): boolean;
  /** Records the last heartbeat of each edge (the caller batches them in one transaction). */
  touch(seen: Iterable<readonly [string, number]>): void;

  /** A connection opened: the runtime facts and a new history row. */
  connected(name: string, c: ConnectionStart): void;
  /**
   * Connection `connection` of the edge closed with `reason`: its history row ends, and the runtime
   * facts say disconnected if they still describe that connection (not a newer one, on this
   * replica or another).
   */
  disconnected(name: string, at: number, reason: string, connection: string): void;
  /** Ends every open history row of the edge at `at` (before a new one starts: rows never overlap). */
  endOpen(name: string, at: number, reason: string): void;
  /**
   * A hub replica stopped, or died: its open connections end, in the history and the runtime facts
   * (`null`: those recorded before hubs named themselves). At `at`, or without it at each edge's
   * last heartbeat. Returns how many edges were connected through it.
   */
  replicaGone(replica: string | null, at: number | undefined, reason: string): number;
  /** The replicas that have open connections in the history (`null`: rows without a replica). */
  openReplicas(): (string | null)[];
  /** How many edges each replica serves now (connected through it), of a project (`*`: all). */
  servedCounts(project: string): Map<string, number>;
  /** The edges the runtime facts say are connected through `replica` now. */
  connectedVia(replica: string): string[];
  /** The latest `limit` connections of an edge, newest first. */
  connections(name: string, limit: number): ConnectionRecord[];
  /** Connections of a project's approved edges that overlap [from, to]. */
  connectionSpans(project: string, from: number, to: number): ConnectionSpan[];
  /** Deletes closed connections older than `before` and all but the newest `perEdge` per edge. */
  pruneConnections(before: number, perEdge: number): number;
}

interface RuntimeRow {
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
  replica: string | null;
  connection: string | null;
}

interface LivenessRow {
  name: string;
  approved: number;
  connected_since: number | null;
  last_seen: number | null;
  enrolled_at: number;
  inventory_labels: string | null;
}

const LIVENESS = 'SELECT name, approved, connected_since, last_seen, enrolled_at, inventory_labels FROM edge_runtime';

function toRuntime(r: RuntimeRow): EdgeRuntime {
  // storeInventory takes a checked Inventory (both writers parse it against the schema first).
  const inventory = r.inventory ? json<Inventory>(r.inventory, `edge_runtime.inventory of ${r.name}`) : undefined;
  return {
    name: r.name,
    project: r.project,
    approved: r.approved === 1,
    enrolledAt: r.enrolled_at,
    lastSeen: r.last_seen ?? undefined,
    connectedSince: r.connected_since ?? undefined,
    disconnectedAt: r.disconnected_at ?? undefined,
    agentVersion: r.agent_version ?? undefined,
    remoteAddress: r.remote_address ?? undefined,
    inventory,
    replica: r.replica ?? undefined,
    connection: r.connection ?? undefined,
  };
}

/** Liveness of every edge of a project (`*`: all) by name: the SQLite implementation's function. */
export function edgeLiveness(db: SqlDb, project: string): Map<string, EdgeLiveness> {
  const rows =
    project === '*' ? all<LivenessRow>(db, LIVENESS) : all<LivenessRow>(db, `${LIVENESS} WHERE project = ?`, project);
  const out = new Map<string, EdgeLiveness>();
  for (const r of rows)
    out.set(r.name, {
      approved: r.approved === 1,
      connectedSince: r.connected_since ?? undefined,
      lastSeen: r.last_seen ?? undefined,
      enrolledAt: r.enrolled_at,
      ...(r.inventory_labels
        ? { inventoryLabels: json<Record<string, string>>(r.inventory_labels, 'edge_runtime.inventory_labels') }
        : {}),
    });
  return out;
}

/**
 * The agent version each edge of a project reported at its last handshake, by name (absent: never
 * connected): what the AgentUpgrade planner measures a downgrade from, in one read.
 */
export function edgeAgentVersions(db: SqlDb, project: string): Map<string, string> {
  const rows = all<{ name: string; agent_version: string | null }>(
    db,
    'SELECT name, agent_version FROM edge_runtime WHERE project = ?',
    project,
  );
  const out = new Map<string, string>();
  for (const r of rows) if (r.agent_version) out.set(r.name, r.agent_version);
  return out;
}

/** Reads of edge_runtime other code gives ahead (hub/state/index.ts `handshakeReads`). */
export const edgeReads = {
  runtime: (name: string) =>
    keyed(read('SELECT * FROM edge_runtime WHERE name = ?', name), 'name', name, (names) =>
      read(`SELECT * FROM edge_runtime WHERE ${pgInJsonList('name')}`, JSON.stringify(names)),
    ),
  project: (name: string) =>
    keyed(read('SELECT project FROM edge_runtime WHERE name = ?', name), 'name', name, (names) =>
      read(`SELECT name, project FROM edge_runtime WHERE ${pgInJsonList('name')}`, JSON.stringify(names)),
    ),
  enrolledLabels: (db: SqlDb, names: readonly string[]) => {
    const labels = (list: readonly string[], where: string) =>
      read(
        `SELECT r.name, o.labels FROM edge_runtime r LEFT JOIN objects o ON o.kind = 'Edge' AND o.name = r.name
         WHERE ${where}`,
        JSON.stringify(list),
      );
    const one = labels(names, inJsonList(db, 'r.name'));
    // One edge's (a handshake's): read with the other handshakes' at once.
    return names.length === 1 ? keyed(one, 'name', names[0]!, (all) => labels(all, pgInJsonList('r.name'))) : one;
  },
};

export function sqlEdgeState(db: SqlDb): EdgeState {
  const rows = connectionRows(db);
  return {
    get(name) {
      const r = oneOf<RuntimeRow>(db, edgeReads.runtime(name));
      return r && toRuntime(r);
    },
    projectOf(name) {
      return oneOf<{ project: string }>(db, edgeReads.project(name))?.project;
    },
    exists(name) {
      return one<{ name: string }>(db, 'SELECT name FROM edge_runtime WHERE name = ?', name) !== undefined;
    },
    enrolledLabels(names) {
      if (!names.length) return new Map();
      return new Map(
        allOf<{ name: string; labels: string | null }>(db, edgeReads.enrolledLabels(db, names)).map((r) => [
          r.name,
          r.labels ?? undefined,
        ]),
      );
    },
    names() {
      return all<{ name: string }>(db, 'SELECT name FROM edge_runtime').map((r) => r.name);
    },
    liveness: (project) => edgeLiveness(db, project),
    count() {
      return one<{ c: number }>(db, 'SELECT COUNT(*) c FROM edge_runtime')?.c ?? 0;
    },
    projects() {
      return all<{ project: string }>(db, 'SELECT DISTINCT project FROM edge_runtime ORDER BY 1').map((r) => r.project);
    },
    quietSince(cutoff) {
      return all<{ name: string }>(
        db,
        'SELECT name FROM edge_runtime WHERE connected_since IS NOT NULL AND last_seen < ?',
        cutoff,
      ).map((r) => r.name);
    },
    projectsByEdge() {
      return new Map(
        all<{ name: string; project: string }>(db, 'SELECT name, project FROM edge_runtime').map((r) => [
          r.name,
          r.project,
        ]),
      );
    },
    lastSeenAll() {
      return all<{ name: string; project: string; last_seen: number }>(
        db,
        'SELECT name, project, last_seen FROM edge_runtime WHERE last_seen IS NOT NULL',
      ).map((r) => ({ name: r.name, project: r.project, lastSeen: r.last_seen }));
    },

    enroll(e) {
      run(
        db,
        'INSERT INTO edge_runtime (name, project, approved, enrolled_at) VALUES (?, ?, ?, ?)',
        e.name,
        e.project,
        e.approved ? 1 : 0,
        e.at,
      );
    },
    approve(name) {
      run(db, 'UPDATE edge_runtime SET approved = 1 WHERE name = ?', name);
    },
    remove(name) {
      forgetWritten(db, name);
      run(db, 'DELETE FROM edge_runtime WHERE name = ?', name);
    },
    moveProject(name, project) {
      forgetWritten(db, name);
      run(db, 'UPDATE edge_runtime SET project = ? WHERE name = ?', project, name);
    },
    storeInventory(name, inv) {
      const stored = JSON.stringify(inv);
      // Every report change carries the inventory, almost always unchanged: on PostgreSQL, where
      // reading the row back to compare is a round trip, a digest of the last one stored here.
      if (alreadyWritten(db, name, 'inventory', () => createHash('sha256').update(stored).digest('base64url')))
        return false;
      const labels = JSON.stringify(inventoryLabels(inv));
      const before = one<{ inventory: string | null; inventory_labels: string | null }>(
        db,
        'SELECT inventory, inventory_labels FROM edge_runtime WHERE name = ?',
        name,
      );
      if (!before) return false;
      if (before.inventory !== stored)
        write(db, 'UPDATE edge_runtime SET inventory = ?, inventory_labels = ? WHERE name = ?', stored, labels, name);
      return before.inventory_labels !== labels;
    },
    touch(seen) {
      for (const [name, at] of seen) write(db, 'UPDATE edge_runtime SET last_seen = ? WHERE name = ?', at, name);
    },

    connected(name, c) {
      // What this process projected for the edge: another replica may have written since.
      forgetWritten(db, name);
      // In the connection history's transaction (hub/edges/history.ts): with its next statement.
      write(
        db,
        'UPDATE edge_runtime SET connected_since = ?, last_seen = ?, agent_version = ?, remote_address = ?, replica = ?, connection = ? WHERE name = ?',
        c.at,
        c.at,
        c.agentVersion,
        c.remoteAddress,
        c.replica,
        c.connection,
        name,
      );
      rows.open(name, c);
    },
    disconnected(name, at, reason, connection) {
      // In the connection history's transaction (hub/edges/history.ts): with its next statement.
      // Both name the connection: a newer one of the edge (an older one's close can come seconds
      // after, from another replica) keeps its row open and the edge connected.
      write(
        db,
        'UPDATE edge_runtime SET connected_since = NULL, disconnected_at = ? WHERE name = ? AND connection = ?',
        at,
        name,
        connection,
      );
      rows.close(name, at, reason, connection);
    },
    endOpen: (name, at, reason) => rows.endOpen(name, at, reason),
    replicaGone(replica, at, reason) {
      const which = replica === null ? 'replica IS NULL' : 'replica = ?';
      const who = replica === null ? [] : [replica];
      if (at === undefined)
        // Each edge's row ends at its last heartbeat, read first (the row's edge may be gone).
        for (const r of all<{ edge: string; last_seen: number | null }>(
          db,
          `SELECT c.edge, r.last_seen FROM connections c LEFT JOIN edge_runtime r ON r.name = c.edge
           WHERE c.${which} AND c.disconnected_at IS NULL`,
          ...who,
        ))
          rows.endEdgeOf(r.edge, replica, r.last_seen === null ? null : Number(r.last_seen), reason);
      else rows.endReplica(replica, at, reason);
      return run(
        db,
        `UPDATE edge_runtime SET connected_since = NULL, disconnected_at = ${at === undefined ? 'COALESCE(last_seen, connected_since)' : '?'}
         WHERE ${which} AND connected_since IS NOT NULL`,
        ...(at === undefined ? [] : [at]),
        ...who,
      );
    },
    openReplicas: () => rows.openReplicas(),
    servedCounts(project) {
      const rows = all<{ replica: string; n: number }>(
        db,
        `SELECT replica, COUNT(*) AS n FROM edge_runtime WHERE connected_since IS NOT NULL AND replica IS NOT NULL${project === '*' ? '' : ' AND project = ?'} GROUP BY replica`,
        ...(project === '*' ? [] : [project]),
      );
      return new Map(rows.map((r) => [r.replica, Number(r.n)]));
    },
    connectedVia(replica) {
      return all<{ name: string }>(
        db,
        'SELECT name FROM edge_runtime WHERE replica = ? AND connected_since IS NOT NULL',
        replica,
      ).map((r) => r.name);
    },
    connections: (name, limit) => rows.list(name, limit),
    connectionSpans(project, from, to) {
      return all<{
        edge: string;
        connected_at: number;
        disconnected_at: number | null;
        connected_since: number | null;
        last_seen: number | null;
      }>(
        db,
        `SELECT c.edge, c.connected_at, c.disconnected_at, r.connected_since, r.last_seen
         FROM connections c JOIN edge_runtime r ON r.name = c.edge
         WHERE r.project = ? AND r.approved = 1 AND c.connected_at <= ? AND (c.disconnected_at IS NULL OR c.disconnected_at >= ?)`,
        project,
        to,
        from,
      ).map((r) => ({
        edge: r.edge,
        connectedAt: r.connected_at,
        disconnectedAt: r.disconnected_at ?? undefined,
        edgeConnectedSince: r.connected_since ?? undefined,
        edgeLastSeen: r.last_seen ?? undefined,
      }));
    },
    pruneConnections: (before, perEdge) => rows.prune(before, perEdge),
  };
}
