/**
 * @module Status: the projection of report documents into SQLite (inside the sync transaction), and
 * the summaries the API serves (per placement, per edge, per workload), computed from the
 * projection on read so they are never stale with respect to what the hub has.
 */
import { inventoryLabels } from '../../core/inventory.js';
import { mailboxDocId, parseMailboxDocId, type DocId } from '../../core/ids.js';
import {
  localState,
  readReport,
  readSpec,
  type LocalState,
  type EdgeReportState,
  type ReportDoc,
  type SpecDoc,
} from '../../core/mailbox.js';
import type { Placement } from '../../core/resources.js';
import { stateFromReport, summarize, type StatusEntry } from '../../core/summary.js';
import { stagingSummary } from '../../core/staging.js';
import type { Summary } from '../../core/status.js';
import { heldVersion } from '../../core/delivery.js';
import type {
  EdgeDataObjectView,
  EdgeStatusView,
  EdgeWorkloadView,
  ImageStagingView,
  PlacementStatusView,
  RolloutCountsView,
  ServedByView,
} from '../../core/api/views.js';
import type { AnyDoc, ReplicaStore } from '../../sync/store.js';
import { edgePhase, isOnline } from '../edges/phase.js';
import type { HubState } from '../state/index.js';
import type { AssignedStatus } from '../state/status.js';

/**
 * Called by the replica store inside the transaction that applied a report change: projects the
 * edge's inventory. Returns the edge, the report read, and whether its inventory labels changed
 * (placements must select again).
 */
export function projectReport(
  state: HubState,
  id: DocId,
  doc: AnyDoc,
): { edge: string; inventoryChanged: boolean; report: EdgeReportState } | undefined {
  const p = parseMailboxDocId(id);
  if (!p || p.role !== 'report') return undefined;
  const report = readReport(doc as unknown as ReportDoc);
  // What it says of the orders of each kind (the workloads' status, data, upgrades, staging) is
  // projected by the order engine (hub/orders/engine.ts `project`), in this same transaction
  // (hub/change-hooks.ts).
  const inventoryChanged = report.inventory ? state.edges.storeInventory(p.edge, report.inventory) : false;
  return { edge: p.edge, inventoryChanged, report };
}

/**
 * One status entry per (edge, workload) assignment, from one joined read: summaries are served on
 * every GET (the UI and `rollout status --watch` poll them), so they must cost one scan, not two
 * queries per edge.
 */
function entries(rows: AssignedStatus[], now: number): StatusEntry[] {
  const out: StatusEntry[] = [];
  for (const r of rows) {
    const d = stateFromReport({
      generation: r.generation,
      specError: r.error,
      reported: r.reported && {
        phase: r.reported.phase,
        observedGeneration: r.reported.observedGeneration,
        message: r.reported.message,
      },
      online: isOnline(r, now),
      lastSeenAgoMs: r.lastSeen === undefined ? undefined : now - r.lastSeen,
    });
    let object: string | undefined;
    if (r.reported && d.state !== 'Ready' && d.state !== 'Stale') {
      const bad = Object.entries(r.reported.objects()).find(([, o]) => !o.ready);
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

export function placementStatus(
  state: HubState,
  p: Placement,
  rollout: { phase: string; reason: string; counts?: RolloutCountsView } | undefined,
  now = Date.now(),
): PlacementStatusView {
  const rows = state.status.byPlacement(p.metadata.project, p.metadata.name);
  const summary = summarize(entries(rows, now), p.spec.statusSummary.maxBroken);
  // Edges selected but not yet written (held back by the rollout) count as Pending.
  const total = rollout?.counts?.total ?? new Set(rows.map((a) => a.edge)).size;
  const writtenEdges = new Set(rows.map((a) => a.edge)).size;
  const missing = Math.max(0, total - writtenEdges) * p.spec.workloads.length;
  if (missing > 0) {
    summary.total += missing;
    summary.states.Pending = (summary.states.Pending ?? 0) + missing;
  }
  const held = rows.filter((r) => r.reported?.phase === 'Paused').map((r) => ({ edge: r.edge, workload: r.workload }));
  return {
    selectedEdges: total,
    summary,
    ...(held.length ? { heldLocally: held } : {}),
    ...(rollout ? { rollout: { ...rollout, paused: p.spec.rollout.paused } } : {}),
  };
}

export function workloadSummary(state: HubState, project: string, workload: string, now = Date.now()): Summary {
  return summarize(entries(state.status.byWorkload(project, workload), now));
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

/**
 * An edge's status; `servedBy` names the hub replica of its connection (hub/replicas/directory.ts),
 * shown while the edge is online.
 */
export function edgeStatus(
  state: HubState,
  store: ReplicaStore,
  name: string,
  servedBy?: (replica: string) => ServedByView,
  now = Date.now(),
): EdgeStatusView {
  const rt = state.edges.get(name);
  const rows = state.status.byEdge(name);
  const es = entries(rows, now);
  const workloads: EdgeWorkloadView[] = rows.map((a, i) => {
    const s = state.status.reported(name, a.workload);
    return {
      name: a.workload,
      placement: a.placement,
      generation: a.generation,
      ...(s ? { observedGeneration: s.observedGeneration, since: new Date(s.since).toISOString() } : {}),
      state: es[i].state,
      ...(es[i].reason ? { reason: es[i].reason } : {}),
      restarts: s?.restarts ?? 0,
      objects: s ? s.objects : {},
    };
  });
  const intents = localIntentsOf(store, name);
  return {
    phase: edgePhase(rt, now),
    ...(rt?.lastSeen ? { lastSeen: new Date(rt.lastSeen).toISOString(), lastSeenAgo: now - rt.lastSeen } : {}),
    ...(rt?.connectedSince && isOnline(rt, now) ? { connectedSince: new Date(rt.connectedSince).toISOString() } : {}),
    ...(rt?.replica && servedBy && isOnline(rt, now) ? { servedBy: servedBy(rt.replica) } : {}),
    ...(rt?.agentVersion ? { agentVersion: rt.agentVersion } : {}),
    ...(rt?.inventory ? { inventory: rt.inventory, inventoryLabels: inventoryLabels(rt.inventory) } : {}),
    summary: summarize(es),
    workloads,
    localIntents: intents,
    ...imageStagingOf(state, name),
  };
}

/**
 * What only one edge's own GET shows: a list would read it once per edge (a round trip each on
 * PostgreSQL). The DataObjects it was ordered to hold, as it last reported each.
 */
export function edgeDetail(state: HubState, name: string): Pick<EdgeStatusView, 'dataObjects'> {
  const dataObjects: EdgeDataObjectView[] = [...state.dataProgress.byEdge(name)].map(([object, p]) => {
    const holds = heldVersion(p);
    return {
      name: object,
      path: p.path,
      state: p.state,
      version: p.version,
      ...(holds ? { holds } : {}),
      ...(p.percent !== undefined ? { percent: p.percent } : {}),
      ...(p.reason ? { reason: p.reason } : {}),
      since: new Date(p.at).toISOString(),
    };
  });
  return dataObjects.length ? { dataObjects } : {};
}

/** What the edge reports of images staged for a rollout (core/staging.ts), if anything: projected. */
function imageStagingOf(state: HubState, name: string): { imageStaging?: ImageStagingView } {
  const r = state.imageStaging.reported(name);
  return r?.images.length ? { imageStaging: { summary: stagingSummary(r.images), images: r.images } } : {};
}
