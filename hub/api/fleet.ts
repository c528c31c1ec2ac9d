/**
 * @module Fleet views the web UI needs and the object API does not give cheaply: the projects a
 * token can see, edge counts by phase, edges online over time, and one edge's connection history.
 * All read-only and computed in SQL or one pass, so they stay fast with 10,000 edges.
 */
import { Hono } from 'hono';
import { OutpostError } from '../../core/errors.js';
import type { ConnectionView, FleetView, OnlineHistoryView } from '../../core/api/views.js';
import type { Kind } from '../../core/resources.js';
import { edgePhase } from '../edges/phase.js';
import type { EdgeState } from '../state/edges.js';
import type { ObjectApi } from './context.js';
import { authorize, principal, type Env } from '../auth/middleware.js';

/** The chart has this many points whatever the span: enough to see a dip, small to send. */
export const HISTORY_POINTS = 60;
export const MAX_HISTORY_HOURS = 24 * 7;

export type EdgeCounts = FleetView['edges'];

export function edgeCounts(edges: EdgeState, project: string, now = Date.now()): EdgeCounts {
  const all = edges.liveness(project);
  const out: EdgeCounts = { total: all.size, Online: 0, Offline: 0, Pending: 0 };
  // The same rule the edge list and its ?state= filter use.
  for (const rt of all.values()) out[edgePhase(rt, now)]++;
  return out;
}

export type OnlinePoint = OnlineHistoryView['points'][number];

/**
 * Approved edges of a project with an open connection at each of `points` instants ending now,
 * from the `connections` table (a pending edge may be connected but is not part of the fleet yet). A connection with no end is open while its edge still counts as connected;
 * otherwise (the hub stopped without closing it) it ends at the edge's last heartbeat.
 */
export function edgesOnline(
  edges: EdgeState,
  project: string,
  hours: number,
  points = HISTORY_POINTS,
  now = Date.now(),
): OnlineHistoryView {
  const from = now - hours * 3_600_000;
  const step = (now - from) / (points - 1);
  const rows = edges.connectionSpans(project, from, now);
  // Sweep: +1 when a connection opens, -1 when it closes; an edge counts once however many rows overlap.
  const marks: { at: number; edge: string; d: 1 | -1 }[] = [];
  for (const r of rows) {
    const open =
      r.disconnectedAt === undefined && r.edgeConnectedSince !== undefined && r.edgeConnectedSince <= r.connectedAt;
    const end = r.disconnectedAt ?? (open ? Infinity : (r.edgeLastSeen ?? r.connectedAt));
    if (end < from) continue;
    marks.push({ at: r.connectedAt, edge: r.edge, d: 1 });
    if (end !== Infinity) marks.push({ at: end, edge: r.edge, d: -1 });
  }
  marks.sort((a, b) => a.at - b.at || a.d - b.d);
  const open = new Map<string, number>();
  const out: OnlinePoint[] = [];
  let i = 0;
  for (let p = 0; p < points; p++) {
    const t = p === points - 1 ? now : from + p * step;
    for (; i < marks.length && marks[i].at <= t; i++) {
      const m = marks[i];
      const n = (open.get(m.edge) ?? 0) + m.d;
      if (n > 0) open.set(m.edge, n);
      else open.delete(m.edge);
    }
    out.push({ t: new Date(t).toISOString(), online: open.size });
  }
  return {
    from: new Date(from).toISOString(),
    to: new Date(now).toISOString(),
    stepSeconds: Math.round(step / 1000),
    points: out,
  };
}

export function fleetRoutes(deps: Pick<ObjectApi, 'state' | 'replicas'>): Hono<Env> {
  const app = new Hono<Env>();
  const { state } = deps;

  app.get('/projects/:project/fleet', (c) => {
    const project = c.req.param('project');
    authorize(c, 'read', project);
    const count = (kind: Kind) => state.objects.count(kind, project);
    const fleet: FleetView = {
      edges: edgeCounts(state.edges, project),
      workloads: count('Workload'),
      placements: count('Placement'),
    };
    return c.json(fleet);
  });

  app.get('/projects/:project/edges-online', (c) => {
    const project = c.req.param('project');
    authorize(c, 'read', project);
    const hours = Number(c.req.query('hours') ?? 6);
    if (!Number.isFinite(hours) || hours <= 0 || hours > MAX_HISTORY_HOURS)
      throw new OutpostError(
        'bad_request',
        `hours: must be a number above 0 and at most ${MAX_HISTORY_HOURS}, e.g. ?hours=6`,
      );
    return c.json(edgesOnline(state.edges, project, hours));
  });

  app.get('/projects/:project/edges/:name/connections', (c) => {
    const project = c.req.param('project');
    authorize(c, 'read', project);
    const name = c.req.param('name');
    if (state.edges.projectOf(name) !== project)
      throw new OutpostError('not_found', `edge ${name} not found in project ${project}`);
    const limit = Math.min(Math.max(Number(c.req.query('limit') ?? 20) || 20, 1), 500);
    const items: ConnectionView[] = state.edges.connections(name, limit).map((r) => ({
      connectedAt: new Date(r.connectedAt).toISOString(),
      ...(r.disconnectedAt !== undefined
        ? { disconnectedAt: new Date(r.disconnectedAt).toISOString(), durationMs: r.disconnectedAt - r.connectedAt }
        : {}),
      ...(r.reason ? { reason: r.reason } : {}),
      ...(r.remoteAddress ? { remoteAddress: r.remoteAddress } : {}),
      ...(r.replica ? { servedBy: deps.replicas.servedBy(r.replica) } : {}),
    }));
    return c.json({ items });
  });

  return app;
}
