/**
 * @module The shapes of an edge's mailbox: two Automerge documents with one writer each.
 *
 * - `spec` is written only by the hub: the edge's desired workloads (already customized), edge
 *   settings, and which local intents the hub has cleared.
 * - `report` is written only by the edge: per-workload observed status, the inventory, and the
 *   local intents (pause, resume, override, clear) given on site.
 *
 * Strings that are never edited character by character are stored as `ImmutableString`: a plain
 * JS string becomes a text CRDT in Automerge 3, ~5x larger and ~15x slower to load (FACTS.md).
 * Here are the document types, the schemas of the JSON values they hold (the agent upgrade order
 * and its progress), and how a stored value reads back as a plain one (`s`, `opt`, `jsonValue`,
 * `jsonMap`). core/mailbox/ is the only place that knows the document layout; everything else goes
 * through the plain views and writer functions of spec.ts and report.ts.
 */
import { type Counter, ImmutableString } from '@automerge/automerge/slim';
import { z } from 'zod';
import { isValidName } from '../ids.js';
import { SignedRelease } from '../release.js';

export const MAILBOX_SCHEMA = 1;

export type Str = ImmutableString;

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
  /** JSON of this edge's node order of a Cluster (core/cluster.ts ClusterNodeOrder), written by putSpecCluster only. */
  cluster?: Str;
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
  /** JSON of this edge's node of a Cluster (core/cluster.ts ClusterNodeReport), written by setReportCluster only. */
  cluster?: Str;
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
  /**
   * The AgentUpgrade's `allowDowngrade`: the edge may switch to a release older than what it runs.
   * Not part of the signed release (a release is signed when it is the newest): it is the hub's
   * word, as the rest of the order, written only by the hub into a document the edge takes only
   * from it (docs/security.md, "Agent releases").
   */
  allowDowngrade: z.boolean().optional(),
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
  /** RolledBack, NoSpace, Refused: why, in words; on the way to an allowed downgrade: that it is one. */
  reason: z.string().max(1024).optional(),
  /** Milliseconds since epoch of this state. */
  at: z.number(),
});
export type AgentUpgradeProgress = z.infer<typeof AgentUpgradeProgress>;

// ---------------------------------------------------------------------------------------------
// Reading stored values

/** A stored value (an `ImmutableString` or a scalar) as a plain string; '' when there is none. */
export const s = (v: unknown): string =>
  v instanceof ImmutableString ? v.val : v === undefined || v === null ? '' : String(v);
/** As `s`, but undefined when there is none. */
export const opt = (v: unknown): string | undefined => (v === undefined || v === null ? undefined : s(v));

/** Per name, the JSON values from the peer that fit `schema` (bad names and values that do not fit are left out). */
export function jsonMap<T>(m: { [name: string]: Str } | undefined, schema: z.ZodType<T>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [name, v] of Object.entries(m ?? {})) {
    if (!isValidName(name)) continue;
    const x = jsonValue(s(v), schema);
    if (x) out[name] = x;
  }
  return out;
}

/** A JSON string from the peer checked against `schema`: undefined when it does not parse or fit. */
export function jsonValue<T>(text: string, schema: z.ZodType<T>): T | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const r = schema.safeParse(parsed);
  return r.success ? r.data : undefined;
}
