/**
 * @module The spec document of an edge's mailbox, written only by the hub. Its plain view
 * (`EdgeSpecState`) and readers: `readSpec`, and the narrower readers of the agent upgrade order and
 * the DataObject orders. Its writers: `writeSpecTo`, the one way labels and workloads are written,
 * through the document's backend (the `A.change` writers call the same code), the agent upgrade and
 * DataObject orders, and `materializeSpec` for compaction. The document types are in docs.ts.
 */
import { ImmutableString } from '@automerge/automerge/slim';
import { HEARTBEAT_INTERVAL_MS } from '../durations.js';
import { ClusterNodeOrder } from '../cluster.js';
import { DeliveryOrder } from '../delivery.js';
import { backendOf, entryNames, mapId, type MapBackend, putIfChanged, putJson, putJsonEntry } from '../doc-backend.js';
import type { Manifest } from '../resources.js';
import { readSpecStaging, setSpecStaging, type StagingOrder } from '../staging.js';
import { AgentUpgradeOrder, jsonMap, jsonValue, MAILBOX_SCHEMA, opt, s, type SpecDoc } from './docs.js';

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
  cluster?: ClusterNodeOrder;
}

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
    ...withClusterOrder(doc),
  };
}

const withStagingOrder = (doc: Partial<SpecDoc>): { imageStaging?: StagingOrder } => {
  const imageStaging = readSpecStaging(doc);
  return imageStaging ? { imageStaging } : {};
};

const withClusterOrder = (doc: Partial<SpecDoc>): { cluster?: ClusterNodeOrder } => {
  const cluster = readSpecCluster(doc);
  return cluster ? { cluster } : {};
};

/** Only the spec's cluster node order (a value that does not fit reads as none). */
export function readSpecCluster(doc: Partial<SpecDoc>): ClusterNodeOrder | undefined {
  return doc.cluster ? jsonValue(s(doc.cluster), ClusterNodeOrder) : undefined;
}

/** The one writer of the spec's cluster node order (undefined removes it); true when it changed. */
export function putSpecCluster(b: MapBackend, order: ClusterNodeOrder | undefined): boolean {
  return putJson(b, '_root', 'cluster', order);
}

/** Only the spec's agent upgrade order, without reading the rest of the document. */
export function readSpecAgentUpgrade(doc: Partial<SpecDoc>): AgentUpgradeOrder | undefined {
  return doc.agentUpgrade ? jsonValue(s(doc.agentUpgrade), AgentUpgradeOrder) : undefined;
}

/** The spec's DataObject orders by name (values that do not fit are left out). */
export function readSpecData(doc: Partial<SpecDoc>): Record<string, DeliveryOrder> {
  return jsonMap(doc.data, DeliveryOrder);
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
    if (state.cluster) putSpecCluster(backendOf(d), state.cluster);
  };
}
