/**
 * @module Interconnect imports on the cluster (docs/interconnect.md, "Kubernetes consumers"): the
 * pods reach an import by name. For each ServiceImport the edge consumes, a Service without a
 * selector (ClusterIP, the import's port, named after the import) and its Endpoints, pointing at
 * the address of this host where the agent listens for the import, in namespace `outpost` (never a
 * workload's `outpost-WORKLOAD`, so no workload's removal takes it along; made if missing and never
 * deleted, like the shared namespaces of objects.ts). Pods reach it at `NAME.outpost.svc` where the
 * cluster runs DNS, at the ClusterIP where it runs kube-proxy, or at the endpoint's address.
 *
 * Endpoints, not an EndpointSlice: the kind the Service's readers have always read; a cluster whose
 * kube-proxy reads slices has the EndpointSlice mirroring controller (kube-controller-manager),
 * which mirrors a selector-less Service's Endpoints.
 *
 * Ownership is by label: `app.kubernetes.io/managed-by=outpost`, `outpost.dev/edge=EDGE` and
 * `outpost.dev/import=NAME` (not `outpost.dev/workload`: these are no workload's, and `list()`
 * must not report them as one). A Service of that name without them is someone else's: left alone
 * and reported. The Endpoints of one of our Services are ours whatever their labels (someone
 * replacing them is drift). Each pass reads both, writes only what differs (drift: a selector
 * added, another port, the address changed, the object deleted), and deletes ours whose import
 * is no longer listed.
 *
 * Where the pods reach this host is host-address.ts.
 */
import { createLogger } from '../../../core/logger.js';
import { DriverError, type ImportOwner, type PublishedImport } from '../driver.js';
import { deleteObjects, ensureNamespace, type KubernetesContext } from './cluster.js';
import { FIELD_MANAGER, LABEL_MANAGED_BY, type KObj } from './objects.js';

const log = createLogger('edge:driver:kubernetes');

/** Where the Services of the imports go. */
export const IMPORTS_NAMESPACE = 'outpost';
export const LABEL_IMPORT = 'outpost.dev/import';
export const LABEL_EDGE = 'outpost.dev/edge';
export const LABEL_PROJECT = 'outpost.dev/project';
/** The name of the Service's one port and of its Endpoints' (they must match). */
const PORT_NAME = 'tcp';

/** The rights the driver needs for the imports, as the fix of a Forbidden answer. */
const RBAC_HINT =
  'grant the identity of the kubeconfig get, list, create, update and delete on services and endpoints, and get and create on namespaces (examples/kubernetes-driver-rbac.yaml)';

export type ApiError = { code?: number; body?: unknown; message?: string };

/** The message of the API server's answer (a Kubernetes Status), else the error's. */
export function serverMessage(err: unknown): string {
  const e = err as ApiError;
  let body = e.body;
  if (typeof body === 'string')
    try {
      body = JSON.parse(body);
    } catch {
      /* not JSON: the message below */
    }
  return (body as { message?: string } | undefined)?.message ?? e.message ?? String(err);
}

/** What went wrong doing `what` (`create services`), with the fix when the server forbade it. */
function callError(what: string, err: unknown): string {
  const code = (err as ApiError).code;
  if (code === 403)
    return `no right to ${what} in namespace ${IMPORTS_NAMESPACE} (the API server said: ${serverMessage(err)}): ${RBAC_HINT}`;
  return `${what} in namespace ${IMPORTS_NAMESPACE} failed${typeof code === 'number' ? ` (HTTP ${code})` : ''}: ${serverMessage(err)}`;
}

const is404 = (err: unknown): boolean => (err as ApiError).code === 404;

function ownerLabels(owner: ImportOwner, name: string): Record<string, string> {
  return {
    [LABEL_MANAGED_BY]: 'outpost',
    [LABEL_EDGE]: owner.edge,
    [LABEL_PROJECT]: owner.project,
    [LABEL_IMPORT]: name,
  };
}

function isOurs(o: KObj, owner: ImportOwner, name: string): boolean {
  const l = o.metadata.labels ?? {};
  return l[LABEL_MANAGED_BY] === 'outpost' && l[LABEL_EDGE] === owner.edge && l[LABEL_IMPORT] === name;
}

function desiredService(i: PublishedImport, owner: ImportOwner): KObj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: i.name, namespace: IMPORTS_NAMESPACE, labels: ownerLabels(owner, i.name) },
    spec: { type: 'ClusterIP', ports: [{ name: PORT_NAME, protocol: 'TCP', port: i.port, targetPort: i.port }] },
  };
}

function desiredEndpoints(i: PublishedImport, owner: ImportOwner): KObj {
  return {
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { name: i.name, namespace: IMPORTS_NAMESPACE, labels: ownerLabels(owner, i.name) },
    subsets: [{ addresses: [{ ip: i.address }], ports: [{ name: PORT_NAME, protocol: 'TCP', port: i.port }] }],
  };
}

const labelsDiffer = (live: KObj, want: KObj): boolean =>
  Object.entries(want.metadata.labels ?? {}).some(([k, v]) => live.metadata.labels?.[k] !== v);

/** What of a live Service differs from the one wanted (empty: nothing to write). */
function serviceDrift(live: KObj, want: KObj): string[] {
  const out: string[] = [];
  if (labelsDiffer(live, want)) out.push('metadata.labels');
  if (Object.keys(live.spec?.selector ?? {}).length) out.push('spec.selector');
  if (live.spec?.type !== 'ClusterIP') out.push('spec.type');
  const ports = (live.spec?.ports ?? []) as Record<string, unknown>[];
  const w = want.spec.ports[0];
  if (
    ports.length !== 1 ||
    ports[0]!.port !== w.port ||
    String(ports[0]!.targetPort) !== String(w.targetPort) ||
    ports[0]!.name !== w.name ||
    (ports[0]!.protocol ?? 'TCP') !== 'TCP'
  )
    out.push('spec.ports');
  return out;
}

/** Whether live Endpoints differ from the ones wanted. */
function endpointsDrift(live: KObj, want: KObj): string[] {
  const out: string[] = [];
  if (labelsDiffer(live, want)) out.push('metadata.labels');
  const norm = (subsets: unknown) =>
    JSON.stringify(
      ((subsets ?? []) as Record<string, any>[]).map((s) => ({
        addresses: ((s.addresses ?? []) as { ip: string }[]).map((a) => a.ip),
        notReady: ((s.notReadyAddresses ?? []) as { ip: string }[]).map((a) => a.ip),
        ports: ((s.ports ?? []) as { name?: string; port: number; protocol?: string }[]).map(
          (p) => `${p.name ?? ''}/${p.port}/${p.protocol ?? 'TCP'}`,
        ),
      })),
    );
  if (norm(live.subsets) !== norm(want.subsets)) out.push('subsets');
  return out;
}

async function readOrNone(ctx: KubernetesContext, kind: string, name: string): Promise<KObj | undefined> {
  try {
    return (await ctx.client().read({
      apiVersion: 'v1',
      kind,
      metadata: { name, namespace: IMPORTS_NAMESPACE },
    })) as KObj;
  } catch (err) {
    if (is404(err)) return undefined;
    throw new DriverError(callError(`get ${kind === 'Service' ? 'services' : 'endpoints'}`, err), { cause: err });
  }
}

/**
 * Writes `want` where `live` is (or creates it): a replace, which also takes away fields someone
 * added (a selector); a Service keeps its ClusterIP. A Service whose type cannot change in place
 * is deleted and made again.
 */
async function put(ctx: KubernetesContext, want: KObj, live: KObj | undefined): Promise<void> {
  const resource = want.kind === 'Service' ? 'services' : 'endpoints';
  try {
    if (!live) {
      await ctx.client().create(want, undefined, undefined, FIELD_MANAGER);
      return;
    }
    const next = structuredClone(want);
    next.metadata.resourceVersion = live.metadata.resourceVersion;
    if (want.kind === 'Service' && live.spec?.clusterIP && live.spec.clusterIP !== 'None') {
      next.spec.clusterIP = live.spec.clusterIP;
      if (live.spec.clusterIPs) next.spec.clusterIPs = live.spec.clusterIPs;
    }
    try {
      await ctx.client().replace(next, undefined, undefined, FIELD_MANAGER);
    } catch (err) {
      if ((err as ApiError).code !== 422 || want.kind !== 'Service') throw err;
      // A headless or ExternalName Service someone made of ours cannot become ClusterIP in place.
      await deleteObjects(ctx, [live]);
      await ctx.client().create(want, undefined, undefined, FIELD_MANAGER);
    }
  } catch (err) {
    if (err instanceof DriverError) throw err;
    throw new DriverError(callError(`${live ? 'update' : 'create'} ${resource}`, err), { cause: err });
  }
}

async function listOurs(ctx: KubernetesContext, kind: string, owner: ImportOwner): Promise<KObj[]> {
  try {
    const r = await ctx
      .client()
      .list(
        'v1',
        kind,
        IMPORTS_NAMESPACE,
        undefined,
        undefined,
        undefined,
        undefined,
        `${LABEL_MANAGED_BY}=outpost,${LABEL_EDGE}=${owner.edge},${LABEL_IMPORT}`,
      );
    return (r.items as KObj[]).map((o) => ({ ...o, apiVersion: 'v1', kind }));
  } catch (err) {
    throw new DriverError(callError(`list ${kind === 'Service' ? 'services' : 'endpoints'}`, err), { cause: err });
  }
}

/**
 * Makes the cluster hold a Service and Endpoints for each of `imports` and none for other imports
 * of this edge. Resolves with the problem of each import that could not be published (another
 * owner's Service in the way, no right to write it); throws when nothing could be done (no right
 * to list, the server unreachable).
 */
export async function publishImports(
  ctx: KubernetesContext,
  imports: PublishedImport[],
  owner: ImportOwner,
): Promise<Record<string, string>> {
  const problems: Record<string, string> = {};
  const [services, endpoints] = [await listOurs(ctx, 'Service', owner), await listOurs(ctx, 'Endpoints', owner)];
  const wanted = new Set(imports.map((i) => i.name));
  const gone = [...services, ...endpoints].filter((o) => !wanted.has(o.metadata.labels?.[LABEL_IMPORT] ?? ''));
  if (gone.length) {
    try {
      await deleteObjects(ctx, gone);
    } catch (err) {
      throw new DriverError(callError('delete services and endpoints', (err as Error).cause ?? err), { cause: err });
    }
    log.info(
      { objects: gone.map((o) => `${o.kind}/${o.metadata.name}`) },
      'interconnect: removed the objects of imports gone',
    );
  }
  if (imports.length === 0) return problems;
  try {
    await ensureNamespace(ctx, IMPORTS_NAMESPACE);
  } catch (err) {
    const code = (err as ApiError).code;
    throw new DriverError(
      code === 403
        ? `no right to get or create namespace ${IMPORTS_NAMESPACE} (the API server said: ${serverMessage(err)}): ${RBAC_HINT}`
        : `making namespace ${IMPORTS_NAMESPACE} failed: ${serverMessage(err)}`,
      { cause: err },
    );
  }
  for (const i of imports) {
    try {
      const svc = desiredService(i, owner);
      const live = await readOrNone(ctx, 'Service', i.name);
      if (live && !isOurs(live, owner, i.name)) {
        const by = live.metadata.labels?.[LABEL_EDGE];
        problems[i.name] =
          `Service ${IMPORTS_NAMESPACE}/${i.name} exists and is not this edge's${by ? ` (edge ${by} made it)` : ''}: left alone; pods reach the import at ${i.address}:${i.port} only. Remove that Service, or name the ServiceImport otherwise`;
        continue;
      }
      const ep = desiredEndpoints(i, owner);
      const liveEp = await readOrNone(ctx, 'Endpoints', i.name);
      if (!live && liveEp && !isOurs(liveEp, owner, i.name)) {
        problems[i.name] =
          `Endpoints ${IMPORTS_NAMESPACE}/${i.name} exist and are not this edge's: left alone; pods reach the import at ${i.address}:${i.port} only. Remove them, or name the ServiceImport otherwise`;
        continue;
      }
      const svcDrift = live ? serviceDrift(live, svc) : ['deleted'];
      if (svcDrift.length) {
        if (live)
          log.info({ import: i.name, fields: svcDrift }, 'interconnect: Service changed by someone else; put back');
        await put(ctx, svc, live);
      }
      const epDrift = liveEp ? endpointsDrift(liveEp, ep) : ['deleted'];
      if (epDrift.length) {
        if (liveEp) log.info({ import: i.name, fields: epDrift }, 'interconnect: Endpoints changed; put back');
        await put(ctx, ep, liveEp);
      }
    } catch (err) {
      problems[i.name] = (err as Error).message;
    }
  }
  return problems;
}
