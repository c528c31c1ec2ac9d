/**
 * @module Removing a worker (docs/clusters.md, "Scale"), done by the control-plane node as the
 * cluster's admin, one pass at a time: cordon the node (`spec.unschedulable`), evict each of its
 * pods through the Eviction API (a PodDisruptionBudget that would be broken answers 429: the pod
 * stays and the drain waits, saying which budget), and once none is left but DaemonSet pods and
 * mirror pods, delete the Node. The hub then releases the edge, whose node stops its components
 * and removes its directory.
 */
import https from 'node:https';
import type { NodeLayout, NodeSpec } from './configs.js';
import { adminTls } from './health.js';

const TIMEOUT_MS = 10_000;

interface Answer {
  status: number;
  body: string;
}

function call(
  base: string,
  tls: https.RequestOptions,
  method: string,
  p: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<Answer> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${base}${p}`,
      {
        ...tls,
        method,
        timeout: TIMEOUT_MS,
        headers: payload ? { 'content-type': contentType, 'content-length': String(payload.length) } : {},
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (text.length < 1_000_000) text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from the API server in ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

interface Pod {
  metadata: {
    name: string;
    namespace: string;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string }[];
  };
}

/** Pods a drain leaves: a DaemonSet's (it would make them again) and mirror pods (the kubelet's static ones). */
const stays = (p: Pod) =>
  p.metadata.ownerReferences?.some((o) => o.kind === 'DaemonSet') ||
  p.metadata.annotations?.['kubernetes.io/config.mirror'] !== undefined;

export type DrainResult = { done: true } | { done: false; waiting: string };

/** One step of draining `node`: done once the Node is deleted (or was never registered). */
export async function drainStep(o: NodeSpec, l: NodeLayout, node: string): Promise<DrainResult> {
  const base = `https://127.0.0.1:${o.ports.apiServer}`;
  const tls = adminTls(l);
  const got = await call(base, tls, 'GET', `/api/v1/nodes/${node}`);
  if (got.status === 404) return { done: true };
  if (got.status !== 200) throw new Error(`reading node ${node}: HTTP ${got.status}`);
  const cordon = await call(
    base,
    tls,
    'PATCH',
    `/api/v1/nodes/${node}`,
    { spec: { unschedulable: true } },
    'application/strategic-merge-patch+json',
  );
  if (cordon.status !== 200)
    throw new Error(`cordoning node ${node}: HTTP ${cordon.status}: ${cordon.body.slice(0, 200)}`);
  const list = await call(base, tls, 'GET', `/api/v1/pods?fieldSelector=spec.nodeName%3D${node}`);
  if (list.status !== 200) throw new Error(`listing the pods of node ${node}: HTTP ${list.status}`);
  const pods = (JSON.parse(list.body) as { items: Pod[] }).items.filter((p) => !stays(p));
  const blocked: string[] = [];
  for (const p of pods) {
    const { name, namespace } = p.metadata;
    const r = await call(base, tls, 'POST', `/api/v1/namespaces/${namespace}/pods/${name}/eviction`, {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name, namespace },
    });
    if (r.status === 429) {
      let why = '';
      try {
        why = (JSON.parse(r.body) as { message?: string }).message ?? '';
      } catch {
        /* not JSON */
      }
      blocked.push(`${namespace}/${name}: ${why || 'a PodDisruptionBudget does not allow it now'}`);
    } else if (r.status >= 300 && r.status !== 404)
      throw new Error(`evicting pod ${namespace}/${name}: HTTP ${r.status}: ${r.body.slice(0, 200)}`);
  }
  if (blocked.length) return { done: false, waiting: `evictions refused: ${blocked.slice(0, 3).join('; ')}` };
  if (pods.length) return { done: false, waiting: `${pods.length} pod(s) still terminating` };
  const del = await call(base, tls, 'DELETE', `/api/v1/nodes/${node}`);
  if (del.status >= 300 && del.status !== 404) throw new Error(`deleting node ${node}: HTTP ${del.status}`);
  return { done: true };
}

/**
 * One pass over the workers the order says to remove: those drained before (still in the order
 * until the hub releases them) stay drained; each other one takes a step. What is drained, and
 * what the others wait for.
 */
export async function drainWorkers(
  o: NodeSpec,
  l: NodeLayout,
  drain: readonly string[],
  before: readonly string[],
): Promise<{ drained: string[]; waiting?: string }> {
  const drained = before.filter((e) => drain.includes(e));
  const waiting: string[] = [];
  for (const e of drain) {
    if (drained.includes(e)) continue;
    try {
      const r = await drainStep(o, l, e);
      if (r.done) drained.push(e);
      else waiting.push(`${e}: ${r.waiting}`);
    } catch (err) {
      waiting.push(`${e}: ${(err as Error).message}`);
    }
  }
  return { drained, ...(waiting.length ? { waiting: waiting.join('; ') } : {}) };
}
