/**
 * @module The mailbox of one edge: two Automerge documents with one writer each.
 *
 * - `spec` is written only by the hub: the edge's desired workloads (already customized), edge
 *   settings, and which local intents the hub has cleared.
 * - `report` is written only by the edge: per-workload observed status, the inventory, and the
 *   local intents (pause, resume, override, clear) given on site.
 *
 * Strings that are never edited character by character are stored as `ImmutableString`: a plain
 * JS string becomes a text CRDT in Automerge 3, ~5x larger and ~15x slower to load (FACTS.md).
 * This module is the only place that knows the document layout; everything else goes through
 * the plain views and writer functions below.
 */
import { Counter, ImmutableString } from '@automerge/automerge/slim';
import { z } from 'zod';
import { HEARTBEAT_INTERVAL_MS } from './durations.js';
import { DeliveryOrder, DeliveryProgress } from './delivery.js';
import { backendOf, entryNames, mapId, type MapBackend, putIfChanged, putJson, putJsonEntry } from './doc-backend.js';
import { isValidName } from './ids.js';
import { SignedRelease } from './release.js';
import { AgentReleaseState, Inventory, type Manifest } from './resources.js';
import {
  readReportStaging,
  readSpecStaging,
  setReportStaging,
  setSpecStaging,
  type StagingOrder,
  type StagingReport,
} from './staging.js';
import type { ReportedPhase } from './status.js';

export const MAILBOX_SCHEMA = 1;

type Str = ImmutableString;

export interface SpecWorkloadDoc {
  generation: number;
  revision: number;
  /** JSON of the customized manifest list. */
  manifests: Str;
  /** Set when the hub could not customize this workload for this edge; the edge applies nothing. */
  error?: Str;
}

export interface SpecDoc {
  schema: number;
  edge: Str;
  settings: { labels: { [k: string]: Str }; heartbeatSeconds: number };
  workloads: { [name: string]: SpecWorkloadDoc };
  /** Per workload, the highest local-intent sequence number the hub has cleared. */
  intentsCleared: { [workload: string]: number };
  /** JSON of the agent upgrade order (AgentUpgradeOrder), written by setSpecAgentUpgrade only. */
  agentUpgrade?: Str;
  /** JSON of the image pre-staging order (core/staging.ts), written by setSpecStaging only. */
  imageStaging?: Str;
  /** Per DataObject, JSON of its order (core/delivery.ts DeliveryOrder), written by setSpecData only. */
  data?: { [name: string]: Str };
}

export interface ReportObjectDoc {
  ready: boolean;
  message?: Str;
}

export interface ReportWorkloadDoc {
  observedGeneration: number;
  phase: Str;
  message?: Str;
  /** Milliseconds since epoch of the last phase transition. */
  since: number;
  restarts: Counter;
  objects: { [key: string]: ReportObjectDoc };
}

export const INTENT_ACTIONS = ['pause', 'resume', 'override', 'clear'] as const;
export type IntentAction = (typeof INTENT_ACTIONS)[number];

export interface IntentDoc {
  seq: number;
  workload: Str;
  action: Str;
  /** For `override`: dotted path -> JSON-encoded value. */
  set?: { [path: string]: Str };
  at: number;
  origin: Str;
}

export interface ReportDoc {
  schema: number;
  edge: Str;
  inventory?: { [k: string]: Str | number | Str[] };
  workloads: { [name: string]: ReportWorkloadDoc };
  intents: { [seq: string]: IntentDoc };
  intentSeq: number;
  /** JSON of the progress of the agent upgrade ordered in the spec (AgentUpgradeProgress). */
  agentUpgrade?: Str;
  /** JSON of the images staged for the spec's staging order (core/staging.ts). */
  imageStaging?: Str;
  /** Per DataObject, JSON of its delivery (core/delivery.ts DeliveryProgress), written by setReportData only. */
  data?: { [name: string]: Str };
}

/**
 * The order the hub writes into an edge's spec for an AgentUpgrade (hub/upgrades/controller.ts):
 * which signed release to switch to and how long the new binary has to prove itself. One JSON
 * value, replaced whole.
 */
export const AgentUpgradeOrder = z.object({
  /** The AgentUpgrade object's name. */
  upgrade: z.string().min(1).max(63),
  release: SignedRelease,
  deadlineMs: z.number().int().min(1000).max(3_600_000),
});
export type AgentUpgradeOrder = z.infer<typeof AgentUpgradeOrder>;

export const AGENT_UPGRADE_STATES = [
  'Pending',
  'Downloading',
  'Staged',
  'Switching',
  'Running',
  'RolledBack',
  'NoSpace',
  'Refused',
] as const;
export type AgentUpgradeState = (typeof AGENT_UPGRADE_STATES)[number];
/** States that end an edge's part in a rollout without the new version running. */
export const FAILED_UPGRADE_STATES: readonly AgentUpgradeState[] = ['RolledBack', 'NoSpace', 'Refused'];

/**
 * What the edge reports about the order in its spec (edge/upgrade/orders.ts): one JSON value,
 * written only when the state changes or the download passes another tenth, so a 100 MB binary
 * adds about ten changes to the report's history, not one per chunk.
 */
export const AgentUpgradeProgress = z.object({
  upgrade: z.string().max(63),
  digest: z.string().max(80),
  version: z.string().max(128),
  state: z.enum(AGENT_UPGRADE_STATES),
  /** Downloading: tenths done, as a percentage (0, 10, ... 90). */
  percent: z.number().int().min(0).max(100).optional(),
  /** RolledBack, NoSpace, Refused: why, in words. */
  reason: z.string().max(1024).optional(),
  /** Milliseconds since epoch of this state. */
  at: z.number(),
});
export type AgentUpgradeProgress = z.infer<typeof AgentUpgradeProgress>;

// ---------------------------------------------------------------------------------------------
// Plain views

export interface SpecWorkload {
  name: string;
  generation: number;
  revision: number;
  manifests: Manifest[];
  error?: string;
}

export interface EdgeSpecState {
  edge: string;
  labels: Record<string, string>;
  heartbeatSeconds: number;
  workloads: Record<string, SpecWorkload>;
  intentsCleared: Record<string, number>;
  agentUpgrade?: AgentUpgradeOrder;
  imageStaging?: StagingOrder;
  data?: Record<string, DeliveryOrder>;
}

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
}

const s = (v: unknown): string =>
  v instanceof ImmutableString ? v.val : v === undefined || v === null ? '' : String(v);
const opt = (v: unknown): string | undefined => (v === undefined || v === null ? undefined : s(v));

export function readSpec(doc: Partial<SpecDoc>): EdgeSpecState {
  const workloads: Record<string, SpecWorkload> = {};
  for (const [name, w] of Object.entries(doc.workloads ?? {})) {
    workloads[name] = {
      name,
      generation: w.generation,
      revision: w.revision,
      manifests: JSON.parse(s(w.manifests) || '[]') as Manifest[],
      error: opt(w.error),
    };
  }
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(doc.settings?.labels ?? {})) labels[k] = s(v);
  const agentUpgrade = readSpecAgentUpgrade(doc);
  return {
    edge: s(doc.edge),
    labels,
    heartbeatSeconds: doc.settings?.heartbeatSeconds ?? HEARTBEAT_INTERVAL_MS / 1000,
    workloads,
    intentsCleared: { ...(doc.intentsCleared ?? {}) },
    ...(agentUpgrade ? { agentUpgrade } : {}),
    ...withStagingOrder(doc),
    ...(doc.data ? { data: readSpecData(doc) } : {}),
  };
}

const withStagingOrder = (doc: Partial<SpecDoc>): { imageStaging?: StagingOrder } => {
  const imageStaging = readSpecStaging(doc);
  return imageStaging ? { imageStaging } : {};
};

/** Only the spec's agent upgrade order, without reading the rest of the document. */
export function readSpecAgentUpgrade(doc: Partial<SpecDoc>): AgentUpgradeOrder | undefined {
  return doc.agentUpgrade ? jsonValue(s(doc.agentUpgrade), AgentUpgradeOrder) : undefined;
}

/** Only the report's agent upgrade progress (peer input, checked: a value that does not fit reads as none). */
export function readReportAgentUpgrade(doc: Partial<ReportDoc>): AgentUpgradeProgress | undefined {
  return doc.agentUpgrade ? jsonValue(s(doc.agentUpgrade), AgentUpgradeProgress) : undefined;
}

/** The spec's DataObject orders by name (values that do not fit are left out). */
export function readSpecData(doc: Partial<SpecDoc>): Record<string, DeliveryOrder> {
  return jsonMap(doc.data, DeliveryOrder);
}

/** The report's DataObject deliveries by name (peer input, checked: values that do not fit are left out). */
export function readReportData(doc: Partial<ReportDoc>): Record<string, DeliveryProgress> {
  return jsonMap(doc.data, DeliveryProgress);
}

function jsonMap<T>(m: { [name: string]: Str } | undefined, schema: z.ZodType<T>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [name, v] of Object.entries(m ?? {})) {
    if (!isValidName(name)) continue;
    const x = jsonValue(s(v), schema);
    if (x) out[name] = x;
  }
  return out;
}

/** The hardware part of an inventory, as the report document carries it (one JSON value). */
/** A JSON string from the peer checked against `schema`: undefined when it does not parse or fit. */
function jsonValue<T>(text: string, schema: z.ZodType<T>): T | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const r = schema.safeParse(parsed);
  return r.success ? r.data : undefined;
}

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
  return {
    edge: s(doc.edge),
    inventory,
    workloads,
    intents,
    ...(agentUpgrade ? { agentUpgrade } : {}),
    ...(imageStaging ? { imageStaging } : {}),
    ...(doc.data ? { data: readReportData(doc) } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Writers (call inside Automerge.change)

export function initSpec(d: SpecDoc, edge: string): void {
  d.schema = MAILBOX_SCHEMA;
  d.edge = new ImmutableString(edge);
  d.settings = { labels: {}, heartbeatSeconds: HEARTBEAT_INTERVAL_MS / 1000 };
  d.workloads = {};
  d.intentsCleared = {};
}

export function initReport(d: ReportDoc, edge: string): void {
  d.schema = MAILBOX_SCHEMA;
  d.edge = new ImmutableString(edge);
  d.workloads = {};
  d.intents = {};
  d.intentSeq = 0;
}

function specMaps(b: MapBackend): { labels: string; workloads: string } {
  const settings = mapId(b, '_root', 'settings');
  const labels = settings && mapId(b, settings, 'labels');
  const workloads = mapId(b, '_root', 'workloads');
  if (!labels || !workloads)
    throw new Error('spec document without settings.labels or workloads: it was not created by initSpec');
  return { labels, workloads };
}

/** The one writer of the spec's agent upgrade order (undefined removes it); true when it changed. */
export function setSpecAgentUpgrade(d: SpecDoc, order: AgentUpgradeOrder | undefined): boolean {
  return putSpecAgentUpgrade(backendOf(d), order);
}

/** setSpecAgentUpgrade on a document's backend (sync/store.ts `changeBackend`: no JS view). */
export function putSpecAgentUpgrade(b: MapBackend, order: AgentUpgradeOrder | undefined): boolean {
  return putJson(b, '_root', 'agentUpgrade', order);
}

/** The one writer of the spec's order for DataObject `name` (undefined removes it); true when it changed. */
export function setSpecData(d: SpecDoc, name: string, order: DeliveryOrder | undefined): boolean {
  return putSpecData(backendOf(d), name, order);
}

/** setSpecData on a document's backend (sync/store.ts `changeBackend`: no JS view). */
export function putSpecData(b: MapBackend, name: string, order: DeliveryOrder | undefined): boolean {
  return putJsonEntry(b, 'data', name, order);
}

/** The names of the DataObjects the spec holds an order for, read through the document's backend. */
export function specDataNames(b: MapBackend): string[] {
  return entryNames(b, 'data');
}

/** The one writer of the report's delivery of DataObject `name` (undefined removes it); true when it changed. */
export function setReportData(d: ReportDoc, name: string, p: DeliveryProgress | undefined): boolean {
  return putJsonEntry(backendOf(d), 'data', name, p);
}

/** The one writer of the report's agent upgrade progress (undefined removes it); true when it changed. */
export function setReportAgentUpgrade(d: ReportDoc, p: AgentUpgradeProgress | undefined): boolean {
  return putJson(backendOf(d), '_root', 'agentUpgrade', p);
}

function putLabels(b: MapBackend, labelsId: string, labels: Record<string, string>): void {
  for (const k of b.keys(labelsId)) if (!(k in labels)) b.delete(labelsId, k);
  for (const [k, v] of Object.entries(labels)) putIfChanged(b, labelsId, k, v, 'str');
}

/**
 * Field by field into the workload's map (a new map for every generation cost a third of a spec
 * write on the hub and grew the history by a map per change; only the hub writes a spec, so the
 * fields never see concurrent writers), and only the fields that differ.
 */
function putWorkload(b: MapBackend, wls: string, w: SpecWorkload): void {
  const id = mapId(b, wls, w.name) ?? b.putObject(wls, w.name, {});
  putIfChanged(b, id, 'generation', w.generation, 'int');
  putIfChanged(b, id, 'revision', w.revision, 'int');
  putIfChanged(b, id, 'manifests', JSON.stringify(w.manifests), 'str');
  if (w.error === undefined) {
    if (b.getWithType(id, 'error')) b.delete(id, 'error');
  } else putIfChanged(b, id, 'error', w.error, 'str');
}

/**
 * THE spec writer: an edge's labels and exactly these workloads, written into a spec document
 * through its backend. The hub calls it outside `A.change` (ReplicaStore.changeBackend: no JS view
 * is built for documents the hub never reads); inside `A.change` the functions below call the same
 * code on the change's backend, so there is one way a spec document is written.
 */
export function writeSpecTo(b: MapBackend, labels: Record<string, string>, workloads: SpecWorkload[]): void {
  const ids = specMaps(b);
  putLabels(b, ids.labels, labels);
  const keep = new Set(workloads.map((w) => w.name));
  for (const name of b.keys(ids.workloads)) if (!keep.has(name)) b.delete(ids.workloads, name);
  for (const w of workloads) putWorkload(b, ids.workloads, w);
}

/** Inside `A.change`: the edge's labels, exactly these (writeSpecTo's code). */
export function setSpecLabels(d: SpecDoc, labels: Record<string, string>): void {
  const b = backendOf(d);
  putLabels(b, specMaps(b).labels, labels);
}

/** Inside `A.change`: one workload, written only if it differs (writeSpecTo's code); true when the document changed. */
export function putSpecWorkload(d: SpecDoc, w: SpecWorkload): boolean {
  const b = backendOf(d);
  const before = b.pendingOps();
  putWorkload(b, specMaps(b).workloads, w);
  return b.pendingOps() > before;
}

/** Inside `A.change`: removes one workload; true when it was there. */
export function deleteSpecWorkload(d: SpecDoc, name: string): boolean {
  const b = backendOf(d);
  const wls = specMaps(b).workloads;
  if (!b.getWithType(wls, name)) return false;
  b.delete(wls, name);
  return true;
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
 */
export function putReportWorkload(d: ReportDoc, name: string, o: ObservedWorkload, now = Date.now()): boolean {
  const cur = d.workloads[name];
  if (!cur) {
    const objects: Record<string, ReportObjectDoc> = {};
    for (const [k, v] of Object.entries(o.objects))
      objects[k] = v.message ? { ready: v.ready, message: new ImmutableString(v.message) } : { ready: v.ready };
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
  let changed = false;
  if (cur.observedGeneration !== o.observedGeneration) {
    cur.observedGeneration = o.observedGeneration;
    changed = true;
  }
  if (s(cur.phase) !== o.phase) {
    cur.phase = new ImmutableString(o.phase);
    cur.since = now;
    changed = true;
  }
  if (opt(cur.message) !== o.message) {
    if (o.message === undefined) delete cur.message;
    else cur.message = new ImmutableString(o.message);
    changed = true;
  }
  const restarts = Number(cur.restarts?.value ?? 0);
  if (o.restarts > restarts) {
    cur.restarts.increment(o.restarts - restarts);
    changed = true;
  }
  for (const k of Object.keys(cur.objects)) {
    if (!(k in o.objects)) {
      delete cur.objects[k];
      changed = true;
    }
  }
  for (const [k, v] of Object.entries(o.objects)) {
    const c = cur.objects[k];
    if (!c || c.ready !== v.ready || opt(c.message) !== v.message) {
      cur.objects[k] = v.message ? { ready: v.ready, message: new ImmutableString(v.message) } : { ready: v.ready };
      changed = true;
    }
  }
  return changed;
}

export function deleteReportWorkload(d: ReportDoc, name: string): boolean {
  if (!(name in d.workloads)) return false;
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

/** The edge forgets intents the hub has cleared (it is the only writer of its report). */
export function pruneClearedIntents(d: ReportDoc, cleared: Record<string, number>): boolean {
  let changed = false;
  for (const [k, i] of Object.entries(d.intents)) {
    const upTo = cleared[s(i.workload)];
    if (upTo !== undefined && i.seq <= upTo) {
      delete d.intents[k];
      changed = true;
    }
  }
  return changed;
}

// ---------------------------------------------------------------------------------------------
// The merge rule for local intents

export interface LocalState {
  paused: boolean;
  overrides: Record<string, unknown>;
  /** The intents still in force, oldest first (for `describe edge`). */
  intents: Intent[];
}

/**
 * The one deterministic rule that joins hub and site when both changed a workload while apart:
 * the hub's spec is the base; the site's intents that the hub has not cleared are folded over it
 * in sequence order (pause/resume toggle, override sets paths, clear drops earlier overrides and
 * the pause). So a site override wins on the paths it names and the hub wins everywhere else,
 * whichever side spoke first, until the hub clears the intents (`intentsCleared`). Both replicas
 * compute this from the same two documents, so they always agree.
 */
export function localState(
  report: EdgeReportState,
  spec: Pick<EdgeSpecState, 'intentsCleared'>,
): Record<string, LocalState> {
  const out: Record<string, LocalState> = {};
  for (const i of report.intents) {
    if (i.seq <= (spec.intentsCleared[i.workload] ?? 0)) continue;
    const st = (out[i.workload] ??= { paused: false, overrides: {}, intents: [] });
    switch (i.action) {
      case 'pause':
        st.paused = true;
        break;
      case 'resume':
        st.paused = false;
        break;
      case 'override':
        Object.assign(st.overrides, i.set ?? {});
        break;
      case 'clear':
        st.paused = false;
        st.overrides = {};
        st.intents = [];
        continue;
    }
    st.intents.push(i);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Compaction: a fresh document holding only the materialized state (no history)

/** Writes a spec document from its plain view (used when the hub starts a new epoch). */
export function materializeSpec(state: EdgeSpecState): (d: SpecDoc) => void {
  return (d) => {
    initSpec(d, state.edge);
    setSpecLabels(d, state.labels);
    d.settings.heartbeatSeconds = state.heartbeatSeconds;
    for (const w of Object.values(state.workloads)) putSpecWorkload(d, w);
    for (const [k, v] of Object.entries(state.intentsCleared)) d.intentsCleared[k] = v;
    if (state.agentUpgrade) setSpecAgentUpgrade(d, state.agentUpgrade);
    if (state.imageStaging) setSpecStaging(d, state.imageStaging);
    for (const [name, o] of Object.entries(state.data ?? {})) setSpecData(d, name, o);
  };
}

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
  };
}
