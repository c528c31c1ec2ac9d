/**
 * @module An edge's connection history: one `connections` row per connection and the Connected /
 * Disconnected / Reconnected events (stored by hub/state/edges.ts and events.ts), with retention
 * for both.
 *
 * One edge on a flapping link, or a hostile one in a reconnect loop, once wrote ~440 rows a second
 * here. Three bounds keep that in check: the sync server rate-limits reconnects per edge
 * (RECONNECT_BURST, sync/admission.ts); repeated reconnects within RECONNECT_COALESCE_MS update one
 * event instead of adding two each; `pruneHistory` deletes rows past their age and count
 * (docs/operations.md, "Retention").
 *
 * Each row says why its connection ended (issue #42): who closed it (the edge, saying why: an agent
 * upgrade, a stop; the hub: a newer connection, its lease lost; nobody: the link was lost), or that
 * its hub replica stopped, or died and the edge failed over to another one. Rows never overlap: a
 * new connection ends the edge's rows still open first (its replica died, or an older connection
 * closes late), and a replica that died leaves none open (`recordReplicaGone`).
 */
import type { EdgeRuntime } from '../state/edges.js';
import type { HubState } from '../state/index.js';

const DAY = 86_400_000;
/** Events are kept this long, and at most EVENTS_MAX_ROWS of them (the oldest go first). */
export const EVENTS_MAX_AGE_MS = 30 * DAY;
export const EVENTS_MAX_ROWS = 100_000;
/** Connection rows are kept this long, and at most CONNECTIONS_PER_EDGE per edge. */
export const CONNECTIONS_MAX_AGE_MS = 30 * DAY;
export const CONNECTIONS_PER_EDGE = 100;
/** A reconnect this soon after the edge's last connection event updates that event. */
export const RECONNECT_COALESCE_MS = 60_000;

export interface ConnectionFacts {
  edge: string;
  remoteAddress: string;
  agentVersion: string;
  /** The hub replica serving it (this process). */
  replica: string;
  /** Unique among all connections: names it when it ends (sync/server.ts). */
  connection: string;
}

/** Another hub replica as the connection history names it: alive now or not, and its URL. */
export interface PeerFacts {
  alive: boolean;
  url?: string;
}

/** What one replica knows of another (hub/replicas/directory.ts); undefined: it has no row (long gone). */
export type PeerLookup = (replica: string) => PeerFacts | undefined;

const replicaText = (id: string, url?: string) => `hub replica ${id}${url ? ` (${url})` : ''}`;

/**
 * Why the edge's rows still open end as `conn` begins: its last connection, as the runtime facts
 * name it, was on another replica that died (a failover), or that is alive (the edge moved), or on
 * this one (a newer connection replaced it before the older one's close came).
 */
function supersededReason(prev: EdgeRuntime | undefined, conn: ConnectionFacts, peer?: PeerLookup): string {
  if (prev?.connectedSince === undefined) return 'superseded by a newer connection of the edge';
  if (!prev.replica || prev.replica === conn.replica)
    return `replaced by a newer connection of the edge (from ${conn.remoteAddress})`;
  const p = peer?.(prev.replica);
  return p?.alive
    ? `the edge moved to ${replicaText(conn.replica)}`
    : `failover: ${replicaText(prev.replica, p?.url)} stopped answering; the edge connected to ${replicaText(conn.replica)}`;
}

/**
 * A connection's end in words (its close code and reason as the socket gave them): who closed it
 * and why. The hub's own closes carry what it told the edge; 1006 means no close came at all.
 */
export function closeReason(code: number, reason: string, byHub = false): string {
  if (byHub) return `closed by the hub (${code}): ${reason}`;
  if (code === 1006 && !reason)
    return 'connection lost (1006: no close from the edge: a network cut, or its process ended)';
  return `closed by the edge (${code}${reason ? `: ${reason}` : ''})`;
}

/** Reconnect counts of the edges whose last connection event is a coalesced one, by event id. */
const flaps = new Map<number, { count: number; since: number }>();

const iso = (t: number) => new Date(t).toISOString();

/** Records a connection: the runtime row, a connections row and an event (one transaction). */
export function recordConnect(state: HubState, conn: ConnectionFacts, now = Date.now(), peer?: PeerLookup): void {
  recordConnects(state, [conn], now, peer);
}

/**
 * Records connections made together (one turn's handshakes, sync/server.ts `answerHellos`) in one
 * transaction. Every read comes before every write: on PostgreSQL the reads were given ahead
 * (hub/state/index.ts `prefetchHandshakes`) and a write to a table forgets what was read of it.
 * `peer` says whether a replica an edge comes from is alive (the reason its last row ends).
 */
export function recordConnects(state: HubState, conns: ConnectionFacts[], now = Date.now(), peer?: PeerLookup): void {
  state.transaction(() => inRuns(conns, (run) => connectRun(state, run, now, peer)));
}

/**
 * Calls `record` for runs of `list` in which no edge comes twice, in order: an edge that comes
 * again (two of its connections in one batch) is read and recorded after its first was written.
 */
function inRuns<T extends { edge: string }>(list: T[], record: (run: T[]) => void): void {
  for (let start = 0; start < list.length;) {
    const seen = new Set<string>();
    let end = start;
    while (end < list.length && !seen.has(list[end]!.edge)) seen.add(list[end++]!.edge);
    record(list.slice(start, end));
    start = end;
  }
}

/** An edge's project and last event (read before any write: hub/state/index.ts reads them ahead). */
function historyOf(state: HubState, edge: string) {
  const project = state.edges.projectOf(edge);
  return { project, last: project === undefined ? undefined : state.events.last(project, 'Edge', edge) };
}

function connectRun(state: HubState, conns: ConnectionFacts[], now: number, peer?: PeerLookup): void {
  const facts = conns.map((conn) => {
    const prev = state.edges.get(conn.edge);
    return { conn, ended: supersededReason(prev, conn, peer), ...historyOf(state, conn.edge) };
  });
  // All of the run's ends before its starts: each kind is then one statement on PostgreSQL
  // (hub/state/pg/merge-writes.ts), and no row of an edge overlaps its next.
  for (const { conn, ended } of facts) state.edges.endOpen(conn.edge, now, ended);
  for (const { conn, project, last } of facts) {
    state.edges.connected(conn.edge, {
      at: now,
      agentVersion: conn.agentVersion,
      remoteAddress: conn.remoteAddress,
      replica: conn.replica,
      connection: conn.connection,
    });
    if (project === undefined) continue;
    if (last && last.reason === 'Disconnected' && now - last.at < RECONNECT_COALESCE_MS) {
      const f = flaps.get(last.id) ?? { count: 0, since: last.at };
      f.count++;
      if (flaps.size > 10_000) flaps.clear();
      flaps.set(last.id, f);
      state.events.update(last.id, {
        at: now,
        reason: 'Reconnected',
        message: `edge ${conn.edge} reconnected from ${conn.remoteAddress} (${f.count} reconnect${f.count === 1 ? '' : 's'} since ${iso(f.since)})`,
      });
      continue;
    }
    state.events.record({
      project,
      kind: 'Edge',
      name: conn.edge,
      reason: 'Connected',
      message: `edge ${conn.edge} connected from ${conn.remoteAddress}`,
      at: now,
    });
  }
}

export interface DisconnectionFacts {
  edge: string;
  /** The connection that ended (ConnectionFacts `connection`). */
  connection: string;
  code: number;
  reason: string;
  /** The hub closed it, having told the edge `reason` (else the edge closed it, or the link was lost). */
  byHub?: boolean;
}

/** Records a disconnection (one transaction). */
export function recordDisconnect(state: HubState, d: DisconnectionFacts, now = Date.now()): void {
  recordDisconnects(state, [d], now);
}

/**
 * Records disconnections that came together (one turn's closed sockets: a replica or a link going
 * down closes thousands) in one transaction, reads before writes as `recordConnects`. An edge that
 * comes twice (two of its connections closed in that turn) is recorded in order, its second
 * disconnection after the first was written.
 */
export function recordDisconnects(state: HubState, list: DisconnectionFacts[], now = Date.now()): void {
  state.transaction(() =>
    inRuns(list, (run) => {
      const facts = run.map((d) => ({ d, ...historyOf(state, d.edge) }));
      for (const { d, project, last } of facts) recordOne(state, d, project, last, now);
    }),
  );
}

function recordOne(
  state: HubState,
  { edge, connection, code, reason, byHub }: DisconnectionFacts,
  project: string | undefined,
  last: ReturnType<HubState['events']['last']>,
  now: number,
): void {
  const why = closeReason(code, reason, byHub);
  state.edges.disconnected(edge, now, why, connection);
  if (project === undefined) return;
  const f = last && flaps.get(last.id);
  if (last && f && last.reason === 'Reconnected' && now - last.at < RECONNECT_COALESCE_MS) {
    state.events.update(last.id, {
      at: now,
      reason: 'Disconnected',
      message: `edge ${edge} disconnected after ${f.count} reconnect${f.count === 1 ? '' : 's'} since ${iso(f.since)}: ${why}`,
    });
    return;
  }
  state.events.record({
    project,
    kind: 'Edge',
    name: edge,
    reason: 'Disconnected',
    message: `edge ${edge} disconnected: ${why}`,
    at: now,
  });
}

/**
 * The edges connected through hub replica `replica` are disconnected by its stop (`why`: e.g. the
 * signal): one statement each, not one event per edge. Those of other replicas stay connected.
 */
export function recordHubStop(state: HubState, replica: string, why?: string, now = Date.now()): number {
  const reason = `${replicaText(replica)} stopped${why ? ` (${why})` : ''}`;
  return state.transaction(() => state.edges.replicaGone(replica, now, reason));
}

/**
 * Hub replica `replica` died (killed, or cut off: its session and its row are gone) and left its
 * connections open: they end at `at`, when its lease expired (the edges that reconnected elsewhere
 * before were ended then), or without it at each edge's last heartbeat (`null`: rows recorded
 * before hubs named themselves, which only a SQLite hub, the only one of its file, ends at start).
 */
export function recordReplicaGone(
  state: HubState,
  replica: string | null,
  at: number | undefined,
  reason: string,
): number {
  return state.transaction(() => state.edges.replicaGone(replica, at, reason));
}

/** The reason of `recordReplicaGone` for a replica that stopped answering. */
export function replicaDiedReason(replica: string, url?: string): string {
  return `${replicaText(replica, url)} stopped answering (its lease expired)`;
}

/** Deletes events and connection rows past their age and count bounds; returns how many went. */
export function pruneHistory(state: HubState, now = Date.now()): { events: number; connections: number } {
  return state.transaction(() => ({
    events: state.events.prune(now - EVENTS_MAX_AGE_MS, EVENTS_MAX_ROWS),
    connections: state.edges.pruneConnections(now - CONNECTIONS_MAX_AGE_MS, CONNECTIONS_PER_EDGE),
  }));
}
