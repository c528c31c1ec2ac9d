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
 */
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
}

/** Reconnect counts of the edges whose last connection event is a coalesced one, by event id. */
const flaps = new Map<number, { count: number; since: number }>();

const iso = (t: number) => new Date(t).toISOString();

/** Records a connection: the runtime row, a connections row and an event (one transaction). */
export function recordConnect(state: HubState, conn: ConnectionFacts, now = Date.now()): void {
  recordConnects(state, [conn], now);
}

/**
 * Records connections made together (one turn's handshakes, sync/server.ts `answerHellos`) in one
 * transaction. Every read comes before every write: on PostgreSQL the reads were given ahead
 * (hub/state/index.ts `prefetchHandshakes`) and a write to a table forgets what was read of it.
 */
export function recordConnects(state: HubState, conns: ConnectionFacts[], now = Date.now()): void {
  state.transaction(() => inRuns(conns, (run) => connectRun(state, run, now)));
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

function connectRun(state: HubState, conns: ConnectionFacts[], now: number): void {
  const facts = conns.map((conn) => ({ conn, ...historyOf(state, conn.edge) }));
  for (const { conn, project, last } of facts) {
    state.edges.connected(conn.edge, { at: now, agentVersion: conn.agentVersion, remoteAddress: conn.remoteAddress });
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
  code: number;
  reason: string;
}

/** Records a disconnection (one transaction). */
export function recordDisconnect(state: HubState, edge: string, code: number, reason: string, now = Date.now()): void {
  recordDisconnects(state, [{ edge, code, reason }], now);
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
  { edge, code, reason }: DisconnectionFacts,
  project: string | undefined,
  last: ReturnType<HubState['events']['last']>,
  now: number,
): void {
  state.edges.disconnected(edge, now, `${code} ${reason}`.trim());
  if (project === undefined) return;
  const why = `${code}${reason ? `: ${reason}` : ''}`;
  const f = last && flaps.get(last.id);
  if (last && f && last.reason === 'Reconnected' && now - last.at < RECONNECT_COALESCE_MS) {
    state.events.update(last.id, {
      at: now,
      reason: 'Disconnected',
      message: `edge ${edge} disconnected (${why}) after ${f.count} reconnect${f.count === 1 ? '' : 's'} since ${iso(f.since)}`,
    });
    return;
  }
  state.events.record({
    project,
    kind: 'Edge',
    name: edge,
    reason: 'Disconnected',
    message: `edge ${edge} disconnected (${why})`,
    at: now,
  });
}

/** Every connected edge is disconnected by a hub stop: one statement each, not one event per edge. */
export function recordHubStop(state: HubState, now = Date.now()): number {
  return state.transaction(() => state.edges.allDisconnected(now, 'hub stopped'));
}

/** Deletes events and connection rows past their age and count bounds; returns how many went. */
export function pruneHistory(state: HubState, now = Date.now()): { events: number; connections: number } {
  return state.transaction(() => ({
    events: state.events.prune(now - EVENTS_MAX_AGE_MS, EVENTS_MAX_ROWS),
    connections: state.edges.pruneConnections(now - CONNECTIONS_MAX_AGE_MS, CONNECTIONS_PER_EDGE),
  }));
}
