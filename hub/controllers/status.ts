/**
 * @module Status: the projection of report documents into SQLite (inside the sync transaction), and
 * the summaries the API serves (per placement, per edge, per workload), computed from the
 * projection on read so they are never stale with respect to what the hub has.
 */
import { inventoryLabels } from '../../core/inventory.js';
import { cachedStatement } from '../../sync/sqlite.js';
import { mailboxDocId, parseMailboxDocId, type DocId } from '../../core/ids.js';
import { localState, readReport, readSpec, type LocalState, type ReportDoc, type SpecDoc } from '../../core/mailbox.js';
import type { Placement } from '../../core/resources.js';
import { stateFromReport, summarize, type StatusEntry } from '../../core/summary.js';
import type { Summary } from '../../core/status.js';
import type { SqliteDatabase } from '../../sync/sqlite.js';
import type { AnyDoc, ReplicaStore } from '../../sync/store.js';
import { edgePhase, edgeRuntime, isOnline, storeInventory, type EdgeRuntime } from './edges.js';
import { assignmentsForEdge } from '../state/assignments.js';

/**
 * Called by the replica store inside the transaction that applied a report change. Returns the
 * edge, and whether its inventory labels changed (placements must select again).
 */
export function projectReport(
  db: SqliteDatabase,
  id: DocId,
  doc: AnyDoc,
): { edge: string; inventoryChanged: boolean } | undefined {
  const p = parseMailboxDocId(id);
  if (!p || p.role !== 'report') return undefined;
  const report = readReport(doc as unknown as ReportDoc);
  const names = Object.keys(report.workloads);
  const upsert = cachedStatement(
    db,
    `INSERT INTO workload_status (edge, workload, observed_generation, phase, message, since, restarts, objects) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(edge, workload) DO UPDATE SET observed_generation = excluded.observed_generation, phase = excluded.phase, message = excluded.message, since = excluded.since, restarts = excluded.restarts, objects = excluded.objects`,
  );
  for (const w of Object.values(report.workloads))
    upsert.run(
      p.edge,
      w.name,
      w.observedGeneration,
      w.phase,
      w.message ?? null,
      w.since,
      w.restarts,
      JSON.stringify(w.objects),
    );
  const existing = (
    cachedStatement(db, 'SELECT workload FROM workload_status WHERE edge = ?').all(p.edge) as { workload: string }[]
  ).map((r) => r.workload);
  for (const w of existing)
    if (!names.includes(w))
      cachedStatement(db, 'DELETE FROM workload_status WHERE edge = ? AND workload = ?').run(p.edge, w);
  const inventoryChanged = report.inventory ? storeInventory(db, p.edge, report.inventory) : false;
  return { edge: p.edge, inventoryChanged };
}

interface StatusRow {
  edge: string;
  workload: string;
  observed_generation: number;
  phase: string;
  message: string | null;
  since: number;
  restarts: number;
  objects: string;
}

interface JoinedRow {
  edge: string;
  workload: string;
  generation: number;
  error: string | null;
  observed_generation: number | null;
  phase: string | null;
  message: string | null;
  objects: string | null;
  last_seen: number | null;
  connected_since: number | null;
}

const JOINED = `SELECT a.edge, a.workload, a.generation, a.error, s.observed_generation, s.phase, s.message, s.objects, r.last_seen, r.connected_since
  FROM assignments a
  LEFT JOIN workload_status s ON s.edge = a.edge AND s.workload = a.workload
  LEFT JOIN edge_runtime r ON r.name = a.edge`;

/**
 * One status entry per (edge, workload) assignment, from one joined query: summaries are served on
 * every GET (the UI and `rollout status --watch` poll them), so they must cost one scan, not two
 * queries per edge.
 */
function joinedEntries(rows: JoinedRow[], now: number): StatusEntry[] {
  const out: StatusEntry[] = [];
  for (const r of rows) {
    const rt = { connectedSince: r.connected_since ?? undefined, lastSeen: r.last_seen ?? undefined } as EdgeRuntime;
    const d = stateFromReport({
      generation: r.generation,
      specError: r.error ?? undefined,
      reported:
        r.phase === null
          ? undefined
          : { phase: r.phase, observedGeneration: r.observed_generation ?? 0, message: r.message ?? undefined },
      online: isOnline(rt, now),
      lastSeenAgoMs: r.last_seen === null ? undefined : now - r.last_seen,
    });
    let object: string | undefined;
    if (r.objects && d.state !== 'Ready' && d.state !== 'Stale') {
      const objs = JSON.parse(r.objects) as Record<string, { ready: boolean; message?: string }>;
      const bad = Object.entries(objs).find(([, o]) => !o.ready);
      if (bad) object = bad[0];
    }
    out.push({
      edge: r.edge,
      workload: r.workload,
      state: d.state,
      ...(d.reason ? { reason: d.reason } : {}),
      ...(object ? { object } : {}),
    });
  }
  return out;
}

function statusRow(db: SqliteDatabase, edge: string, workload: string): StatusRow | undefined {
  return cachedStatement(db, 'SELECT * FROM workload_status WHERE edge = ? AND workload = ?').get(edge, workload) as
    StatusRow | undefined;
}

export interface PlacementStatus {
  selectedEdges: number;
  summary: Summary;
  /** Edges where a workload of the placement is paused on site by a local intent (held locally). */
  heldLocally?: { edge: string; workload: string }[];
  rollout?: { phase: string; reason: string; counts?: unknown; paused: boolean };
}

export function placementStatus(
  db: SqliteDatabase,
  p: Placement,
  rollout: { phase: string; reason: string; counts?: unknown } | undefined,
  now = Date.now(),
): PlacementStatus {
  const rows = cachedStatement(db, `${JOINED} WHERE a.project = ? AND a.placement = ?`).all(
    p.metadata.project,
    p.metadata.name,
  ) as JoinedRow[];
  const summary = summarize(joinedEntries(rows, now), p.spec.statusSummary.maxBroken);
  const counts = rollout?.counts as { total?: number } | undefined;
  // Edges selected but not yet written (held back by the rollout) count as Pending.
  const total = counts?.total ?? new Set(rows.map((a) => a.edge)).size;
  const writtenEdges = new Set(rows.map((a) => a.edge)).size;
  const missing = Math.max(0, total - writtenEdges) * p.spec.workloads.length;
  if (missing > 0) {
    summary.total += missing;
    summary.states.Pending = (summary.states.Pending ?? 0) + missing;
  }
  const held = rows.filter((r) => r.phase === 'Paused').map((r) => ({ edge: r.edge, workload: r.workload }));
  return {
    selectedEdges: total,
    summary,
    ...(held.length ? { heldLocally: held } : {}),
    ...(rollout ? { rollout: { ...rollout, paused: p.spec.rollout.paused } } : {}),
  };
}

export function workloadSummary(db: SqliteDatabase, project: string, workload: string, now = Date.now()): Summary {
  return summarize(
    joinedEntries(
      cachedStatement(db, `${JOINED} WHERE a.project = ? AND a.workload = ?`).all(project, workload) as JoinedRow[],
      now,
    ),
  );
}

export interface EdgeWorkloadView {
  name: string;
  placement: string;
  generation: number;
  observedGeneration?: number;
  state: string;
  reason?: string;
  restarts: number;
  since?: string;
  objects: Record<string, { ready: boolean; message?: string }>;
}

export interface EdgeStatusView {
  phase: string;
  lastSeen?: string;
  lastSeenAgo?: number;
  connectedSince?: string;
  agentVersion?: string;
  inventory?: unknown;
  /** Labels derived from the inventory, selectable by placements (docs/inventory.md). */
  inventoryLabels?: Record<string, string>;
  summary: Summary;
  workloads: EdgeWorkloadView[];
  localIntents: Record<string, LocalState>;
}

/** The intents made on site that the hub has not cleared, by workload (the merge rule of core/mailbox.ts). */
export function localIntentsOf(store: ReplicaStore, name: string): Record<string, LocalState> {
  try {
    const rdoc = store.get<ReportDoc>(mailboxDocId(name as never, 'report'));
    const sdoc = store.get<SpecDoc>(mailboxDocId(name as never, 'spec'));
    if (rdoc && sdoc) return localState(readReport(rdoc), readSpec(sdoc));
  } catch {
    /* an edge without a mailbox yet has no intents */
  }
  return {};
}

/** Whether any intent made on site is in force on the edge (the `local=true` filter of the edge list). */
export function hasLocalIntents(store: ReplicaStore, name: string): boolean {
  return Object.values(localIntentsOf(store, name)).some((l) => l.paused || Object.keys(l.overrides).length > 0);
}

export function edgeStatus(db: SqliteDatabase, store: ReplicaStore, name: string, now = Date.now()): EdgeStatusView {
  const rt = edgeRuntime(db, name);
  const as = assignmentsForEdge(db, name);
  const entries = joinedEntries(
    cachedStatement(db, `${JOINED} WHERE a.edge = ? ORDER BY a.workload`).all(name) as JoinedRow[],
    now,
  );
  const workloads: EdgeWorkloadView[] = as.map((a, i) => {
    const s = statusRow(db, name, a.workload);
    return {
      name: a.workload,
      placement: a.placement,
      generation: a.generation,
      ...(s ? { observedGeneration: s.observed_generation, since: new Date(s.since).toISOString() } : {}),
      state: entries[i].state,
      ...(entries[i].reason ? { reason: entries[i].reason } : {}),
      restarts: s?.restarts ?? 0,
      objects: s ? (JSON.parse(s.objects) as EdgeWorkloadView['objects']) : {},
    };
  });
  const intents = localIntentsOf(store, name);
  return {
    phase: edgePhase(rt, now),
    ...(rt?.lastSeen ? { lastSeen: new Date(rt.lastSeen).toISOString(), lastSeenAgo: now - rt.lastSeen } : {}),
    ...(rt?.connectedSince && isOnline(rt, now) ? { connectedSince: new Date(rt.connectedSince).toISOString() } : {}),
    ...(rt?.agentVersion ? { agentVersion: rt.agentVersion } : {}),
    ...(rt?.inventory ? { inventory: rt.inventory, inventoryLabels: inventoryLabels(rt.inventory) } : {}),
    summary: summarize(entries),
    workloads,
    localIntents: intents,
  };
}
