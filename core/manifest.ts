/**
 * @module Reading Kubernetes manifests: multi-document YAML, the pod templates of workload kinds,
 * and the ports they declare. Drivers use `podTemplates` so each of them reads Deployments,
 * StatefulSets and friends the same way.
 */
import { parseAllDocuments } from 'yaml';
import { MAX_YAML_EXPANDED_BYTES } from './limits.js';
import type { Manifest } from './resources.js';

/**
 * Parses a multi-document YAML (or JSON) text into plain values, one per non-empty document.
 * A `kind: List` document and a top-level list are expanded into their items, as `kubectl apply`
 * does. The items are not validated here: callers check them with the `Manifest` schema.
 * Throws an Error naming the document (1-based, counting empty ones) and the line.
 *
 * What the text expands to is bounded (`maxBytes`, counted as the values are produced): an alias
 * repeats its anchor's value without repeating its text, so 99 aliases to a 300 KB scalar turn a
 * 302 KB text into 30 MB of values. yaml's `maxAliasCount` bounds how many aliases there are, not
 * what they expand to.
 */
export function parseManifests(text: string, maxBytes = MAX_YAML_EXPANDED_BYTES): unknown[] {
  const docs = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true });
  if (!Array.isArray(docs)) return []; // an EmptyStream: only comments or nothing at all
  const out: unknown[] = [];
  let expanded = 0;
  // Called for every value of the converted tree, aliased ones as often as they are referenced.
  const count = (key: unknown, value: unknown): unknown => {
    expanded += (typeof key === 'string' ? key.length : 0) + (typeof value === 'string' ? value.length : 8);
    if (expanded > maxBytes)
      throw new ExpansionError(
        `the YAML expands to more than ${maxBytes} bytes (aliases repeat their anchor's value): write the values out, or split the manifests into smaller workloads`,
      );
    return value;
  };
  docs.forEach((doc, i) => {
    const err = doc.errors[0];
    if (err) {
      const pos = err.linePos?.[0];
      const at = pos ? ` (line ${pos.line}, column ${pos.col})` : '';
      // The yaml package appends a code excerpt after a blank line; the first line says it all.
      const msg = err.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
      throw new Error(`YAML document ${i + 1}${at}: ${msg}`, { cause: err });
    }
    if (doc.contents === null) return;
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100, reviver: count });
    } catch (cause) {
      if (cause instanceof ExpansionError) throw cause;
      throw new Error(`YAML document ${i + 1}: ${(cause as Error).message}`, { cause });
    }
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) {
      out.push(...value);
      return;
    }
    if (typeof value !== 'object') {
      throw new Error(
        `YAML document ${i + 1}: expected a Kubernetes object (a mapping with apiVersion, kind and metadata), got ${JSON.stringify(value).slice(0, 60)}`,
      );
    }
    const list = value as { kind?: unknown; items?: unknown };
    if (list.kind === 'List' && Array.isArray(list.items)) out.push(...list.items);
    else out.push(value);
  });
  return out;
}

/** The YAML text expands past the bound of `parseManifests` (an HTTP API answers 413). */
export class ExpansionError extends Error {
  override name = 'ExpansionError';
}

export interface ContainerPort {
  containerPort: number;
  name?: string;
  protocol?: string;
  hostPort?: number;
}

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; [k: string]: unknown }[];
  ports?: ContainerPort[];
  workingDir?: string;
  [k: string]: unknown;
}

export interface PodSpec {
  /** Always a list here (empty when the manifest had none), so drivers need not check. */
  containers: Container[];
  initContainers?: Container[];
  restartPolicy?: string;
  [k: string]: unknown;
}

export interface PodTemplate {
  kind: string;
  name: string;
  /** Pod: 1; Deployment, StatefulSet, ReplicaSet: spec.replicas ?? 1; DaemonSet: 1 (one edge, one node); Job: spec.parallelism ?? 1. */
  replicas: number;
  podSpec: PodSpec;
  /** Labels of the pod (template), for selectors of Services. */
  podLabels: Record<string, string>;
  /** Position in the manifest list, for error messages (`manifests[2]`). */
  index: number;
}

export const WORKLOAD_KINDS = ['Pod', 'Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function replicasOf(kind: string, spec: Record<string, unknown>): number {
  if (kind === 'Pod' || kind === 'DaemonSet') return 1;
  const n = kind === 'Job' ? spec.parallelism : spec.replicas;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : 1;
}

function stringMap(v: unknown): Record<string, string> {
  if (!isObject(v)) return {};
  return Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** The pod template of each workload-kind manifest, in manifest order; other kinds are skipped. */
export function podTemplates(manifests: Manifest[]): PodTemplate[] {
  const out: PodTemplate[] = [];
  manifests.forEach((m, index) => {
    if (!(WORKLOAD_KINDS as readonly string[]).includes(m.kind)) return;
    const spec = isObject(m.spec) ? m.spec : {};
    const template = m.kind === 'Pod' ? { metadata: m.metadata, spec } : isObject(spec.template) ? spec.template : {};
    const raw = isObject(template.spec) ? template.spec : {};
    const containers = Array.isArray(raw.containers) ? (raw.containers.filter(isObject) as Container[]) : [];
    out.push({
      kind: m.kind,
      name: String(m.metadata?.name ?? ''),
      replicas: replicasOf(m.kind, spec),
      podSpec: { ...raw, containers },
      podLabels: stringMap(isObject(template.metadata) ? template.metadata.labels : undefined),
      index,
    });
  });
  return out;
}

/** Every containerPort declared by the workload's containers, sorted, without duplicates. */
export function declaredPorts(manifests: Manifest[]): number[] {
  const ports = new Set<number>();
  for (const t of podTemplates(manifests)) {
    for (const c of t.podSpec.containers) {
      for (const p of Array.isArray(c.ports) ? c.ports : []) {
        const n = isObject(p) ? p.containerPort : undefined;
        if (typeof n === 'number' && Number.isInteger(n) && n > 0 && n < 65536) ports.add(n);
      }
    }
  }
  return [...ports].sort((a, b) => a - b);
}
