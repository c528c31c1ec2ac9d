/**
 * @module The report document of an edge's mailbox, written only by the edge. Its plain view
 * (`EdgeReportState`) and readers: `readReport`, and the narrower readers of the agent upgrade
 * progress and the DataObject deliveries (peer input, checked against their schemas). Its writers:
 * the inventory, each workload's status (transitions only), the local intents and their pruning,
 * the agent upgrade progress, the deliveries, and `materializeReport` for compaction. The document
 * types are in docs.ts.
 */
import { Counter, ImmutableString } from '@automerge/automerge/slim';
import { ClusterNodeReport } from '../cluster.js';
import { DeliveryProgress } from '../delivery.js';
import { backendOf, putJson, putJsonEntry } from '../doc-backend.js';
import { AgentReleaseState, Inventory } from '../resources.js';
import { readReportStaging, setReportStaging, type StagingReport } from '../staging.js';
import { readReportInterconnect, type ImportReport } from '../orders/interconnect.js';
import type { ReportedPhase } from '../status.js';
import {
  AgentUpgradeProgress,
  type IntentAction,
  type IntentDoc,
  jsonMap,
  jsonValue,
  MAILBOX_SCHEMA,
  opt,
  type ReportDoc,
  type ReportObjectDoc,
  type ReportWorkloadDoc,
  s,
  type Str,
} from './docs.js';

// ---------------------------------------------------------------------------------------------
// Plain views

export interface ObjectStatus {
  ready: boolean;
  message?: string;
}

export interface ReportedWorkload {
  name: string;
  observedGeneration: number;
  phase: ReportedPhase;
  message?: string;
  since: number;
  restarts: number;
  objects: Record<string, ObjectStatus>;
}

export interface Intent {
  seq: number;
  workload: string;
  action: IntentAction;
  set?: Record<string, unknown>;
  at: number;
  origin: string;
}

export interface EdgeReportState {
  edge: string;
  inventory?: Inventory;
  workloads: Record<string, ReportedWorkload>;
  intents: Intent[];
  agentUpgrade?: AgentUpgradeProgress;
  imageStaging?: StagingReport;
  data?: Record<string, DeliveryProgress>;
  /** Per ServiceImport, its listener on this edge (core/orders/interconnect.ts). */
  interconnect?: Record<string, ImportReport>;
  cluster?: ClusterNodeReport;
}

/** Only the report's cluster node (peer input, checked: a value that does not fit reads as none). */
export function readReportCluster(doc: Partial<ReportDoc>): ClusterNodeReport | undefined {
  return doc.cluster ? jsonValue(s(doc.cluster), ClusterNodeReport) : undefined;
}

/** The one writer of the report's cluster node (undefined removes it); true when it changed. */
export function setReportCluster(d: ReportDoc, r: ClusterNodeReport | undefined): boolean {
  return putJson(backendOf(d), '_root', 'cluster', r);
}

/** Only the report's agent upgrade progress (peer input, checked: a value that does not fit reads as none). */
export function readReportAgentUpgrade(doc: Partial<ReportDoc>): AgentUpgradeProgress | undefined {
  return doc.agentUpgrade ? jsonValue(s(doc.agentUpgrade), AgentUpgradeProgress) : undefined;
}

/** The report's DataObject deliveries by name (peer input, checked: values that do not fit are left out). */
export function readReportData(doc: Partial<ReportDoc>): Record<string, DeliveryProgress> {
  return jsonMap(doc.data, DeliveryProgress);
}

/** The hardware part of an inventory, as the report document carries it (one JSON value). */
const HARDWARE = Inventory.pick({
  cpuModel: true,
  vendor: true,
  product: true,
  serial: true,
  disks: true,
  nics: true,
});

export function readReport(doc: Partial<ReportDoc>): EdgeReportState {
  const workloads: Record<string, ReportedWorkload> = {};
  for (const [name, w] of Object.entries(doc.workloads ?? {})) {
    const objects: Record<string, ObjectStatus> = {};
    for (const [k, o] of Object.entries(w.objects ?? {})) objects[k] = { ready: o.ready, message: opt(o.message) };
    workloads[name] = {
      name,
      observedGeneration: w.observedGeneration,
      phase: s(w.phase) as ReportedPhase,
      message: opt(w.message),
      since: w.since,
      restarts: w.restarts ? Number(w.restarts.value) : 0,
      objects,
    };
  }
  const intents: Intent[] = Object.values(doc.intents ?? {})
    .map((i) => ({
      seq: i.seq,
      workload: s(i.workload),
      action: s(i.action) as IntentAction,
      set: i.set ? Object.fromEntries(Object.entries(i.set).map(([k, v]) => [k, JSON.parse(s(v))])) : undefined,
      at: i.at,
      origin: s(i.origin),
    }))
    .sort((a, b) => a.seq - b.seq);
  let inventory: Inventory | undefined;
  if (doc.inventory) {
    const inv = doc.inventory;
    inventory = {
      hostname: s(inv.hostname),
      os: s(inv.os),
      arch: s(inv.arch),
      cpus: Number(inv.cpus ?? 0),
      memoryBytes: Number(inv.memoryBytes ?? 0),
      runtimes: Array.isArray(inv.runtimes) ? inv.runtimes.map(s) : [],
      driver: s(inv.driver),
      agentVersion: s(inv.agentVersion),
    };
    // The last release switch: one JSON string too, peer input checked against the schema.
    const release = inv.agentRelease ? jsonValue(s(inv.agentRelease as Str), AgentReleaseState) : undefined;
    if (release) inventory.agentRelease = release;
    // Hardware facts are one JSON string (one CRDT value, replaced whole when the hardware changes).
    if (inv.hardware) {
      // Peer input: checked against the schema (types, sizes); a value that does not fit is dropped
      // whole and the thin inventory stays.
      const hw = jsonValue(s(inv.hardware as Str), HARDWARE);
      if (hw)
        for (const k of ['cpuModel', 'vendor', 'product', 'serial', 'disks', 'nics'] as const)
          if (hw[k] !== undefined) (inventory as Record<string, unknown>)[k] = hw[k];
    }
  }
  const agentUpgrade = readReportAgentUpgrade(doc);
  const imageStaging = readReportStaging(doc);
  const interconnect = readReportInterconnect(doc);
  const cluster = readReportCluster(doc);
  return {
    edge: s(doc.edge),
    inventory,
    workloads,
    intents,
    ...(agentUpgrade ? { agentUpgrade } : {}),
    ...(imageStaging ? { imageStaging } : {}),
    ...(doc.data ? { data: readReportData(doc) } : {}),
    ...(interconnect ? { interconnect } : {}),
    ...(cluster ? { cluster } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Writers (call inside Automerge.change)

export function initReport(d: ReportDoc, edge: string): void {
  d.schema = MAILBOX_SCHEMA;
  d.edge = new ImmutableString(edge);
  d.workloads = {};
  d.intents = {};
  d.intentSeq = 0;
}

/** The one writer of the report's delivery of DataObject `name` (undefined removes it); true when it changed. */
export function setReportData(d: ReportDoc, name: string, p: DeliveryProgress | undefined): boolean {
  return putJsonEntry(backendOf(d), 'data', name, p);
}

/** The one writer of the report's agent upgrade progress (undefined removes it); true when it changed. */
export function setReportAgentUpgrade(d: ReportDoc, p: AgentUpgradeProgress | undefined): boolean {
  return putJson(backendOf(d), '_root', 'agentUpgrade', p);
}

export function setInventory(d: ReportDoc, inv: Inventory): boolean {
  const cur = d.inventory ? readReport({ inventory: d.inventory }).inventory : undefined;
  if (cur && JSON.stringify(cur) === JSON.stringify(inv)) return false;
  d.inventory = {
    hostname: new ImmutableString(inv.hostname),
    os: new ImmutableString(inv.os),
    arch: new ImmutableString(inv.arch),
    cpus: inv.cpus,
    memoryBytes: inv.memoryBytes,
    runtimes: inv.runtimes.map((r) => new ImmutableString(r)),
    driver: new ImmutableString(inv.driver),
    agentVersion: new ImmutableString(inv.agentVersion),
  };
  if (inv.agentRelease) d.inventory.agentRelease = new ImmutableString(JSON.stringify(inv.agentRelease));
  const { cpuModel, vendor, product, serial, disks, nics } = inv;
  const hw = { cpuModel, vendor, product, serial, disks, nics };
  if (Object.values(hw).some((v) => v !== undefined)) d.inventory.hardware = new ImmutableString(JSON.stringify(hw));
  return true;
}

export interface ObservedWorkload {
  observedGeneration: number;
  phase: ReportedPhase;
  message?: string;
  restarts: number;
  objects: Record<string, ObjectStatus>;
}

/**
 * Records a workload's status as a transition only: nothing is written when nothing a user would
 * see changed, so a steady workload adds no history. Restarts are a Counter (cheap increments).
 *
 * `was`: the workload as the document held it before this change, read from the document's plain
 * view (ReplicaStore.change gives it as the callback's second argument) instead of through the
 * change's proxies, where every field read is a call into Automerge's wasm: an edge's reconciler
 * compares every workload on every pass, and those reads were most of its report writes
 * (docs/benchmarks.md, issue #17). Without it the proxies are read. Nothing earlier in the same
 * change may have written this workload.
 */
export function putReportWorkload(
  d: ReportDoc,
  name: string,
  o: ObservedWorkload,
  now = Date.now(),
  was: ReportWorkloadDoc | undefined = d.workloads[name],
): boolean {
  if (!was) {
    const objects: Record<string, ReportObjectDoc> = {};
    for (const [k, v] of Object.entries(o.objects)) objects[k] = reportObject(v);
    const w: ReportWorkloadDoc = {
      observedGeneration: o.observedGeneration,
      phase: new ImmutableString(o.phase),
      since: now,
      restarts: new Counter(o.restarts),
      objects,
    };
    if (o.message) w.message = new ImmutableString(o.message);
    d.workloads[name] = w;
    return true;
  }
  // Written through the proxy of the workload, looked up only once something differs.
  let target: ReportWorkloadDoc | undefined;
  const cur = () => (target ??= d.workloads[name]);
  if (was.observedGeneration !== o.observedGeneration) cur().observedGeneration = o.observedGeneration;
  if (s(was.phase) !== o.phase) {
    cur().phase = new ImmutableString(o.phase);
    cur().since = now;
  }
  if (opt(was.message) !== o.message) {
    if (o.message === undefined) delete cur().message;
    else cur().message = new ImmutableString(o.message);
  }
  const restarts = Number(was.restarts?.value ?? 0);
  if (o.restarts > restarts) cur().restarts.increment(o.restarts - restarts);
  for (const k of Object.keys(was.objects)) if (!(k in o.objects)) delete cur().objects[k];
  for (const [k, v] of Object.entries(o.objects)) {
    const c = was.objects[k];
    if (!c || c.ready !== v.ready || opt(c.message) !== v.message) cur().objects[k] = reportObject(v);
  }
  return target !== undefined;
}

function reportObject(v: ObjectStatus): ReportObjectDoc {
  return v.message ? { ready: v.ready, message: new ImmutableString(v.message) } : { ready: v.ready };
}

/** Removes a workload's status; `was` as for putReportWorkload. True when it was there. */
export function deleteReportWorkload(d: ReportDoc, name: string, was: Readonly<ReportDoc> = d): boolean {
  if (!(name in was.workloads)) return false;
  delete d.workloads[name];
  return true;
}

/** Appends a local intent; returns its sequence number. */
export function addIntent(d: ReportDoc, i: Omit<Intent, 'seq'>): number {
  const seq = (d.intentSeq ?? 0) + 1;
  d.intentSeq = seq;
  const doc: IntentDoc = {
    seq,
    workload: new ImmutableString(i.workload),
    action: new ImmutableString(i.action),
    at: i.at,
    origin: new ImmutableString(i.origin),
  };
  if (i.set)
    doc.set = Object.fromEntries(Object.entries(i.set).map(([k, v]) => [k, new ImmutableString(JSON.stringify(v))]));
  d.intents[String(seq)] = doc;
  return seq;
}

/** The edge forgets intents the hub has cleared (it is the only writer of its report); `was` as for putReportWorkload. */
export function pruneClearedIntents(
  d: ReportDoc,
  cleared: Record<string, number>,
  was: Readonly<ReportDoc> = d,
): boolean {
  let changed = false;
  for (const [k, i] of Object.entries(was.intents)) {
    const upTo = cleared[s(i.workload)];
    if (upTo !== undefined && i.seq <= upTo) {
      delete d.intents[k];
      changed = true;
    }
  }
  return changed;
}

// ---------------------------------------------------------------------------------------------
// Compaction: a fresh document holding only the materialized state (no history)

/** Writes a report document from its plain view (used when the edge starts a new epoch). */
export function materializeReport(state: EdgeReportState, intentSeq: number): (d: ReportDoc) => void {
  return (d) => {
    initReport(d, state.edge);
    if (state.inventory) setInventory(d, state.inventory);
    for (const w of Object.values(state.workloads)) {
      putReportWorkload(
        d,
        w.name,
        {
          observedGeneration: w.observedGeneration,
          phase: w.phase,
          message: w.message,
          restarts: w.restarts,
          objects: w.objects,
        },
        w.since,
      );
    }
    for (const i of state.intents) {
      const doc: IntentDoc = {
        seq: i.seq,
        workload: new ImmutableString(i.workload),
        action: new ImmutableString(i.action),
        at: i.at,
        origin: new ImmutableString(i.origin),
      };
      if (i.set)
        doc.set = Object.fromEntries(
          Object.entries(i.set).map(([k, v]) => [k, new ImmutableString(JSON.stringify(v))]),
        );
      d.intents[String(i.seq)] = doc;
    }
    d.intentSeq = intentSeq;
    if (state.agentUpgrade) setReportAgentUpgrade(d, state.agentUpgrade);
    if (state.imageStaging) setReportStaging(d, state.imageStaging);
    for (const [name, p] of Object.entries(state.data ?? {})) setReportData(d, name, p);
    if (state.cluster) setReportCluster(d, state.cluster);
  };
}
