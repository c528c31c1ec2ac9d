/**
 * @module Fleet views the web UI needs and the object API does not give cheaply: the projects a
 * token can see, edge counts by phase, edges online over time, and one edge's connection history.
 * All read-only and computed in SQL or one pass, so they stay fast with 10,000 edges.
 */
import { Hono } from 'hono';
import { OutpostError } from '../../core/errors.js';
import { edgePhase, type EdgeRuntime } from '../controllers/edges.js';
import type { SqliteDatabase } from '../../sync/sqlite.js';
import { authorize, principal, type Env, type HubDeps } from './context.js';

/** The chart has this many points whatever the span: enough to see a dip, small to send. */
export const HISTORY_POINTS = 60;
export const MAX_HISTORY_HOURS = 24 * 7;

export interface EdgeCounts {
  total: number;
  Online: number;
  Offline: number;
  Pending: number;
}

export function edgeCounts(db: SqliteDatabase, project: string, now = Date.now()): EdgeCounts {
  const rows = db
    .prepare('SELECT approved, connected_since, last_seen FROM edge_runtime WHERE project = ?')
    .all(project) as { approved: number; connected_since: number | null; last_seen: number | null }[];
  const out: EdgeCounts = { total: rows.length, Online: 0, Offline: 0, Pending: 0 };
  for (const r of rows) {
    // The same rule the edge list and its ?state= filter use.
    const rt = {
      approved: r.approved === 1,
      connectedSince: r.connected_since ?? undefined,
      lastSeen: r.last_seen ?? undefined,
    } as EdgeRuntime;
    out[edgePhase(rt, now)]++;
  }
  return out;
}

export interface OnlinePoint {
  t: string;
  online: number;
}

/**
 * Approved edges of a project with an open connection at each of `points` instants ending now,
 * from the `connections` table (a pending edge may be connected but is not part of the fleet yet). A connection with no end is open while its edge still counts as connected;
 * otherwise (the hub stopped without closing it) it ends at the edge's last heartbeat.
 */
export function edgesOnline(
  db: SqliteDatabase,
  project: string,
  hours: number,
  points = HISTORY_POINTS,
  now = Date.now(),
): { from: string; to: string; stepSeconds: number; points: OnlinePoint[] } {
  const from = now - hours * 3_600_000;
  const step = (now - from) / (points - 1);
  const rows = db
    .prepare(
      `SELECT c.edge, c.connected_at, c.disconnected_at, r.connected_since, r.last_seen
       FROM connections c JOIN edge_runtime r ON r.name = c.edge
       WHERE r.project = ? AND r.approved = 1 AND c.connected_at <= ? AND (c.disconnected_at IS NULL OR c.disconnected_at >= ?)`,
    )
    .all(project, now, from) as {
    edge: string;
    connected_at: number;
    disconnected_at: number | null;
    connected_since: number | null;
    last_seen: number | null;
  }[];
  // Sweep: +1 when a connection opens, -1 when it closes; an edge counts once however many rows overlap.
  const marks: { at: number; edge: string; d: 1 | -1 }[] = [];
  for (const r of rows) {
    const open = r.disconnected_at === null && r.connected_since !== null && r.connected_since <= r.connected_at;
    const end = r.disconnected_at ?? (open ? Infinity : (r.last_seen ?? r.connected_at));
    if (end < from) continue;
    marks.push({ at: r.connected_at, edge: r.edge, d: 1 });
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

export function fleetRoutes(deps: HubDeps): Hono<Env> {
  const app = new Hono<Env>();
  const { db } = deps;

  app.get('/projects', (c) => {
    const p = principal(c);
    const names =
      p.project === '*'
        ? (
            db.prepare('SELECT project FROM objects UNION SELECT project FROM edge_runtime ORDER BY 1').all() as {
              project: string;
            }[]
          ).map((r) => r.project)
        : [p.project];
    if (!names.includes('default') && p.project === '*') names.unshift('default');
    return c.json({ items: names.map((name) => ({ name })) });
  });

  app.get('/projects/:project/fleet', (c) => {
    const project = c.req.param('project');
    authorize(c, 'read', project);
    const count = (kind: string) =>
      (db.prepare('SELECT COUNT(*) c FROM objects WHERE kind = ? AND project = ?').get(kind, project) as { c: number })
        .c;
    return c.json({ edges: edgeCounts(db, project), workloads: count('Workload'), placements: count('Placement') });
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
    return c.json(edgesOnline(db, project, hours));
  });

  app.get('/projects/:project/edges/:name/connections', (c) => {
    const project = c.req.param('project');
    authorize(c, 'read', project);
    const name = c.req.param('name');
    if (!db.prepare('SELECT 1 FROM edge_runtime WHERE name = ? AND project = ?').get(name, project))
      throw new OutpostError('not_found', `edge ${name} not found in project ${project}`);
    const limit = Math.min(Math.max(Number(c.req.query('limit') ?? 20) || 20, 1), 500);
    const rows = db
      .prepare(
        'SELECT connected_at, disconnected_at, reason, remote_address FROM connections WHERE edge = ? ORDER BY id DESC LIMIT ?',
      )
      .all(name, limit) as {
      connected_at: number;
      disconnected_at: number | null;
      reason: string | null;
      remote_address: string | null;
    }[];
    return c.json({
      items: rows.map((r) => ({
        connectedAt: new Date(r.connected_at).toISOString(),
        ...(r.disconnected_at !== null
          ? {
              disconnectedAt: new Date(r.disconnected_at).toISOString(),
              durationMs: r.disconnected_at - r.connected_at,
            }
          : {}),
        ...(r.reason ? { reason: r.reason } : {}),
        ...(r.remote_address ? { remoteAddress: r.remote_address } : {}),
      })),
    });
  });

  return app;
}
