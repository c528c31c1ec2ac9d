/**
 * @module The kubernetes driver's calls on the API server's objects: the workload's owned objects
 * found by label (over the base kinds and the extra kinds its units applied, state.ts), server-side
 * apply, delete with background propagation, the waits for objects to be gone and for a CRD to be
 * Established, and a shared namespace made when missing. Also what every part of the driver is
 * given to work with (`KubernetesContext`).
 */
import { PatchStrategy, type KubernetesObjectApi } from '@kubernetes/client-node';
import { DriverError } from '../driver.js';
import { BASE_KINDS, FIELD_MANAGER, LABEL_MANAGED_BY, type KObj } from './objects.js';
import type { StateDir } from './state.js';

/** What the parts of the driver share: the API client, the state in the data directory, the delete timeout. */
export interface KubernetesContext {
  /** The object API; a DriverError before the driver is started and after it is closed. */
  client(): KubernetesObjectApi;
  readonly state: StateDir;
  /** How long `remove` and pod replacement wait for objects to be gone. */
  readonly deleteTimeoutMs: number;
}

const is404 = (err: unknown): boolean => (err as { code?: number }).code === 404;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function kinds(ctx: KubernetesContext): Promise<{ apiVersion: string; kind: string }[]> {
  const extra = new Set((await ctx.state.all()).flatMap((r) => r.extraKinds));
  for (const k of BASE_KINDS) extra.delete(`${k.apiVersion}/${k.kind}`);
  return [
    ...BASE_KINDS,
    ...[...extra].map((s) => ({ apiVersion: s.slice(0, s.lastIndexOf('/')), kind: s.slice(s.lastIndexOf('/') + 1) })),
  ];
}

/** Owned top-level objects (not pods of a Deployment, not already terminating), by selector. */
export async function owned(
  ctx: KubernetesContext,
  selector: string,
  includePods = false,
): Promise<{ objects: KObj[]; pods: KObj[] }> {
  const objects: KObj[] = [];
  const pods: KObj[] = [];
  for (const k of await kinds(ctx)) {
    let items: KObj[];
    try {
      items = (
        await ctx.client().list(k.apiVersion, k.kind, undefined, undefined, undefined, undefined, undefined, selector)
      ).items as KObj[];
    } catch (err) {
      // A kind remembered from an old unit whose CRD has since gone: nothing of it can exist.
      if (is404(err) || /Unrecognized API version/.test(String((err as Error).message))) continue;
      throw new DriverError(`listing ${k.kind} objects with ${selector} failed; is the API server reachable?`, {
        cause: err,
      });
    }
    for (const o of items) {
      o.apiVersion = k.apiVersion;
      o.kind = k.kind;
      if (k.kind === 'Pod') pods.push(o);
      if (o.metadata.ownerReferences?.length) continue;
      if (o.metadata.deletionTimestamp && !includePods) continue;
      objects.push(o);
    }
  }
  return { objects, pods };
}

export async function applyObject(ctx: KubernetesContext, o: KObj, manager = FIELD_MANAGER): Promise<void> {
  await ctx.client().patch(o, undefined, undefined, manager, true, PatchStrategy.ServerSideApply);
}

/** False when some object is still there after the delete timeout. */
export async function waitGone(ctx: KubernetesContext, objs: KObj[]): Promise<boolean> {
  const deadline = Date.now() + ctx.deleteTimeoutMs;
  for (const o of objs) {
    for (;;) {
      try {
        await ctx.client().read({
          apiVersion: o.apiVersion,
          kind: o.kind,
          metadata: { name: o.metadata.name, namespace: o.metadata.namespace },
        });
      } catch (err) {
        if (is404(err)) break;
        throw err;
      }
      if (Date.now() > deadline) return false;
      await sleep(200);
    }
  }
  return true;
}

export async function deleteObjects(ctx: KubernetesContext, objs: KObj[]): Promise<void> {
  for (const o of objs) {
    try {
      await ctx.client().delete(
        {
          apiVersion: o.apiVersion,
          kind: o.kind,
          metadata: { name: o.metadata.name, namespace: o.metadata.namespace },
        },
        undefined,
        undefined,
        undefined,
        undefined,
        'Background',
      );
    } catch (err) {
      if (!is404(err))
        throw new DriverError(`deleting ${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name} failed`, {
          cause: err,
        });
    }
  }
}

/** Waits until the API server serves a CRD's kind; names it refuses fail the unit with the reason. */
export async function waitEstablished(ctx: KubernetesContext, crd: KObj): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const live = (await ctx.client().read({
      apiVersion: crd.apiVersion,
      kind: crd.kind,
      metadata: { name: crd.metadata.name },
    })) as KObj;
    const conds = (live.status?.conditions ?? []) as { type: string; status: string; message?: string }[];
    if (conds.some((c) => c.type === 'Established' && c.status === 'True')) return;
    const refused = conds.find((c) => c.type === 'NamesAccepted' && c.status === 'False');
    const why = refused
      ? `names not accepted: ${refused.message ?? ''}`
      : Date.now() > deadline
        ? 'not Established after 30 s'
        : undefined;
    if (why) {
      const message = `CustomResourceDefinition/${crd.metadata.name}: ${why}`;
      throw Object.assign(new Error(message), { code: 422, body: { message } });
    }
    await sleep(100);
  }
}

/** A namespace a manifest names: create it if missing, never take it over or delete it. */
export async function ensureNamespace(ctx: KubernetesContext, name: string): Promise<void> {
  try {
    await ctx.client().read({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  } catch (err) {
    if (!is404(err)) throw err;
    const namespace = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: { [LABEL_MANAGED_BY]: 'outpost' } },
    };
    await ctx.client().create(namespace, undefined, undefined, FIELD_MANAGER);
  }
}
