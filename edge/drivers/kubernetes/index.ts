/**
 * @module The kubernetes runtime driver: runs a workload unit on a Kubernetes cluster (k3s on the
 * edge device, or the cluster the agent runs in) through its API server.
 *
 * - apply: server-side apply of every manifest with field manager `outpost` and force, each object
 *   labelled `outpost.dev/workload`, `outpost.dev/hash`, `outpost.dev/generation` (pod templates
 *   get the workload label only, see objects.ts); namespaces as described in objects.ts; then
 *   owned objects no longer in the unit are deleted (prune). Unchanged hash on the live objects:
 *   no write at all. A unit the API server rejects (invalid, unknown kind) does not throw: the
 *   workload is reported Failed with the server's message; an unreachable server throws.
 * - readiness and phases: observe.ts, one workload's observation: report.ts. Restarts: container
 *   restarts of the workload's pods.
 * - drift (drift.ts): objects someone else changed or deleted make the workload Modified, and an
 *   apply of the same hash applies them again instead of skipping. A CRD is waited for until
 *   Established before the custom resources after it.
 * - stop scales Deployments to 0 and deletes Pods; start re-applies the last unit; restart rolls
 *   Deployments (pod-template annotation, like `kubectl rollout restart`) and recreates Pods.
 * - logs and exec go through the API server (io.ts); with several pods, the first ready one.
 * - endpoint: the pod IP of a ready pod that declares the port. Reachable when the agent runs on
 *   a node of the cluster or inside it (the edge case: single-node k3s); otherwise use the API
 *   server's pod proxy instead of the endpoint.
 *
 * @example
 * const driver = createKubernetesDriver({ kubeconfig: '/etc/rancher/k3s/k3s.yaml', dataDir });
 * await driver.start();
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi, PatchStrategy, VersionApi } from '@kubernetes/client-node';
import { createLogger } from '../../../core/logger.js';
import {
  DriverError,
  type Driver,
  type Endpoint,
  type ExecOptions,
  type ExecResult,
  type InteractiveExec,
  type InteractiveExecOptions,
  type LogOptions,
  type WorkloadObservation,
  type WorkloadUnit,
} from '../driver.js';
import { driftOf } from './drift.js';
import { execInPod, execInPodInteractive, podLogLines } from './io.js';
import { observeWorkload } from './report.js';
import {
  BASE_KINDS,
  FIELD_MANAGER,
  LABEL_HASH,
  LABEL_MANAGED_BY,
  LABEL_WORKLOAD,
  RESTARTED_AT,
  RESTART_FIELD_MANAGER,
  identity,
  objectKey,
  prepare,
  type KObj,
} from './objects.js';
import { objectPhase } from './observe.js';
import { StateDir, type WorkloadRecord } from './state.js';

export interface KubernetesDriverOptions {
  /** Path of a kubeconfig. Default: in-cluster config when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config. */
  kubeconfig?: string;
  dataDir: string;
  /** How long `remove` and pod replacement wait for objects to be gone. Default 60 s. */
  deleteTimeoutMs?: number;
}

const log = createLogger('edge:driver:kubernetes');

/** An error the API server gave for this unit (4xx), as opposed to the server being unreachable. */
function rejection(err: unknown): string | undefined {
  const e = err as { code?: number; body?: unknown; message?: string };
  const body = typeof e.body === 'string' ? safeJson(e.body) : e.body;
  const msg = (body as { message?: string } | undefined)?.message;
  if (typeof e.code === 'number' && e.code >= 400 && e.code < 500) {
    if (/Failed to fetch resource metadata/.test(e.message ?? ''))
      return 'the API server does not serve this apiVersion/kind; install its CRD or fix the manifest';
    return msg ?? `HTTP ${e.code}`;
  }
  if (err instanceof Error && /^Unrecognized API version and kind/.test(err.message))
    return `${err.message}; install its CRD or fix the manifest`;
  return undefined;
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

const is404 = (err: unknown): boolean => (err as { code?: number }).code === 404;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function createKubernetesDriver(opts: KubernetesDriverOptions): Driver {
  return new KubernetesDriver(opts);
}

class KubernetesDriver implements Driver {
  readonly name = 'kubernetes' as const;
  private kc?: KubeConfig;
  private api?: KubernetesObjectApi;
  private readonly state: StateDir;
  private readonly deleteTimeoutMs: number;

  constructor(private readonly opts: KubernetesDriverOptions) {
    this.state = new StateDir(join(opts.dataDir, 'kubernetes'));
    this.deleteTimeoutMs = opts.deleteTimeoutMs ?? 60_000;
  }

  async start(): Promise<void> {
    const kc = new KubeConfig();
    const path =
      this.opts.kubeconfig ?? (process.env.KUBERNETES_SERVICE_HOST ? undefined : join(homedir(), '.kube', 'config'));
    try {
      if (path) kc.loadFromFile(path);
      else kc.loadFromCluster();
    } catch (err) {
      throw new DriverError(
        path
          ? `cannot load kubeconfig ${path}; pass --kubeconfig or point KUBECONFIG at a readable file`
          : 'cannot load the in-cluster service account config',
        { cause: err },
      );
    }
    const server = kc.getCurrentCluster()?.server;
    if (!server)
      throw new DriverError(`kubeconfig ${path ?? '(in-cluster)'} has no current cluster; set current-context`);
    try {
      await kc.makeApiClient(VersionApi).getCode();
    } catch (err) {
      throw new DriverError(
        `cannot reach the Kubernetes API server at ${server}: ${(err as Error).message}; check that the cluster runs and the kubeconfig credentials are valid`,
        { cause: err },
      );
    }
    this.kc = kc;
    this.api = KubernetesObjectApi.makeApiClient(kc);
    const adopted = await this.list();
    log.info({ server, workloads: adopted.map((w) => w.name) }, 'kubernetes driver started');
  }

  private client(): KubernetesObjectApi {
    if (!this.api) throw new DriverError('the kubernetes driver is not started; call start() first');
    return this.api;
  }

  private async kinds(): Promise<{ apiVersion: string; kind: string }[]> {
    const extra = new Set((await this.state.all()).flatMap((r) => r.extraKinds));
    for (const k of BASE_KINDS) extra.delete(`${k.apiVersion}/${k.kind}`);
    return [
      ...BASE_KINDS,
      ...[...extra].map((s) => ({ apiVersion: s.slice(0, s.lastIndexOf('/')), kind: s.slice(s.lastIndexOf('/') + 1) })),
    ];
  }

  /** Owned top-level objects (not pods of a Deployment, not already terminating), by selector. */
  private async owned(selector: string, includePods = false): Promise<{ objects: KObj[]; pods: KObj[] }> {
    const objects: KObj[] = [];
    const pods: KObj[] = [];
    for (const k of await this.kinds()) {
      let items: KObj[];
      try {
        items = (
          await this.client().list(
            k.apiVersion,
            k.kind,
            undefined,
            undefined,
            undefined,
            undefined,
            undefined,
            selector,
          )
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

  private async applyObject(o: KObj, manager = FIELD_MANAGER): Promise<void> {
    await this.client().patch(o, undefined, undefined, manager, true, PatchStrategy.ServerSideApply);
  }

  private async waitGone(objs: KObj[]): Promise<boolean> {
    const deadline = Date.now() + this.deleteTimeoutMs;
    for (const o of objs) {
      for (;;) {
        try {
          await this.client().read({
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

  private async deleteObjects(objs: KObj[]): Promise<void> {
    for (const o of objs) {
      try {
        await this.client().delete(
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

  async apply(unit: WorkloadUnit): Promise<void> {
    await this.applyUnit(unit, false);
  }

  private async applyUnit(unit: WorkloadUnit, force: boolean): Promise<void> {
    const prev = await this.state.read(unit.name);
    const prepared = prepare(unit);
    const desired = [...(prepared.ownNamespace ? [prepared.ownNamespace] : []), ...prepared.objects];
    const { objects: live } = await this.owned(`${LABEL_WORKLOAD}=${unit.name}`);
    const liveIds = new Map(live.map((o) => [identity(o), o]));
    const sameHash =
      !force &&
      !prev?.stopped &&
      !prev?.error &&
      live.length === desired.length &&
      desired.every((d) => liveIds.get(identity(d))?.metadata.labels?.[LABEL_HASH] === unit.hash);
    const drifted = sameHash ? desired.filter((d) => driftOf(d, liveIds.get(identity(d))).length > 0) : [];
    if (drifted.length > 0)
      log.info(
        { workload: unit.name, objects: drifted.map((d) => objectKey(d, unit.name)) },
        'objects were changed by someone else; applying them again',
      );
    const upToDate = sameHash && drifted.length === 0;
    if (upToDate) {
      // Same manifests under a newer generation: remember it, touch nothing in the cluster.
      if (prev && prev.unit.generation !== unit.generation) await this.state.write({ ...prev, unit });
      return;
    }
    const extraKinds = [
      ...new Set([...(prev?.extraKinds ?? []), ...unit.manifests.map((m) => `${m.apiVersion}/${m.kind}`)]),
    ].filter((k) => !BASE_KINDS.some((b) => `${b.apiVersion}/${b.kind}` === k));
    const record: WorkloadRecord = { unit, stopped: false, extraKinds: [] };
    try {
      for (const ns of prepared.sharedNamespaces) await this.ensureNamespace(ns);
      for (const o of desired) {
        await this.applyOne(o, liveIds.get(identity(o)));
        // Its custom resources come later in this unit; the API server serves them once Established.
        if (o.kind === 'CustomResourceDefinition') await this.waitEstablished(o);
      }
      const wanted = new Set(desired.map(identity));
      await this.deleteObjects(live.filter((o) => !wanted.has(identity(o))));
    } catch (err) {
      const why = rejection(err);
      if (why === undefined)
        throw err instanceof DriverError
          ? err
          : new DriverError(`applying workload ${unit.name} failed`, { cause: err });
      record.error = why;
      log.warn({ workload: unit.name, err: why }, 'workload rejected by the API server');
    }
    // Kinds that failed discovery are not remembered: listing them on every pass would fail too.
    record.extraKinds = record.error ? (prev?.extraKinds ?? []) : extraKinds;
    await this.state.write(record);
  }

  private async applyOne(o: KObj, live: KObj | undefined): Promise<void> {
    try {
      await this.applyObject(o);
    } catch (err) {
      // Pod specs are immutable apart from images: replace the pod, as kubectl replace --force would.
      if (o.kind === 'Pod' && live && (err as { code?: number }).code === 422) {
        await this.deleteObjects([live]);
        await this.waitGone([live]);
        await this.applyObject(o);
        return;
      }
      const why = rejection(err);
      if (why !== undefined)
        throw Object.assign(new Error(`${o.kind}/${o.metadata.name}: ${why}`), {
          code: 422,
          body: { message: `${o.kind}/${o.metadata.name}: ${why}` },
        });
      throw err;
    }
  }

  /** Waits until the API server serves a CRD's kind; names it refuses fail the unit with the reason. */
  private async waitEstablished(crd: KObj): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const live = (await this.client().read({
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
  private async ensureNamespace(name: string): Promise<void> {
    try {
      await this.client().read({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    } catch (err) {
      if (!is404(err)) throw err;
      await this.client().create(
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { [LABEL_MANAGED_BY]: 'outpost' } } },
        undefined,
        undefined,
        FIELD_MANAGER,
      );
    }
  }

  async remove(name: string): Promise<void> {
    const { objects } = await this.owned(`${LABEL_WORKLOAD}=${name}`, true);
    // Namespaces last: deleting one first would take the rest with it before we could name them.
    const ordered = [
      ...objects.filter((o) => o.kind !== 'Namespace'),
      ...objects.filter((o) => o.kind === 'Namespace'),
    ];
    await this.deleteObjects(ordered);
    if (!(await this.waitGone(ordered)))
      log.warn(
        { workload: name },
        `objects of ${name} are still terminating after ${this.deleteTimeoutMs} ms; they are no longer reported`,
      );
    await this.state.delete(name);
  }

  async list(): Promise<WorkloadObservation[]> {
    const { objects, pods } = await this.owned(LABEL_WORKLOAD);
    const records = new Map((await this.state.all()).map((r) => [r.unit.name, r]));
    const byWorkload = new Map<string, KObj[]>();
    for (const o of objects) {
      const w = o.metadata.labels?.[LABEL_WORKLOAD];
      if (w) byWorkload.set(w, [...(byWorkload.get(w) ?? []), o]);
    }
    const names = new Set([
      ...byWorkload.keys(),
      ...[...records.values()].filter((r) => r.stopped || r.error).map((r) => r.unit.name),
    ]);
    return [...names].sort().map((name) =>
      observeWorkload(
        name,
        byWorkload.get(name) ?? [],
        pods.filter((p) => p.metadata.labels?.[LABEL_WORKLOAD] === name),
        records.get(name),
      ),
    );
  }

  private async record(name: string): Promise<WorkloadRecord> {
    const rec = await this.state.read(name);
    if (!rec)
      throw new DriverError(`workload ${name} is not known to the kubernetes driver on this edge; apply it first`);
    return rec;
  }

  async stopWorkload(name: string): Promise<void> {
    const rec = await this.record(name);
    await this.state.write({ ...rec, stopped: true });
    const { objects } = await this.owned(`${LABEL_WORKLOAD}=${name}`);
    for (const o of prepare(rec.unit).objects) {
      if (o.kind === 'Deployment') await this.applyObject({ ...o, spec: { ...o.spec, replicas: 0 } });
    }
    await this.deleteObjects(objects.filter((o) => o.kind === 'Pod'));
  }

  async startWorkload(name: string): Promise<void> {
    const rec = await this.record(name);
    // Forced: the live objects carry the right hash while scaled to zero, so a plain apply would skip them.
    await this.applyUnit(rec.unit, true);
  }

  async restartWorkload(name: string): Promise<void> {
    const rec = await this.record(name);
    const { objects } = await this.owned(`${LABEL_WORKLOAD}=${name}`);
    const at = new Date().toISOString();
    for (const d of objects.filter((o) => o.kind === 'Deployment')) {
      const patch = {
        apiVersion: d.apiVersion,
        kind: d.kind,
        metadata: { name: d.metadata.name, namespace: d.metadata.namespace },
        spec: { template: { metadata: { annotations: { [RESTARTED_AT]: at } } } },
      };
      await this.applyObject(patch as KObj, RESTART_FIELD_MANAGER);
    }
    const pods = objects.filter((o) => o.kind === 'Pod');
    if (pods.length > 0) {
      await this.deleteObjects(pods);
      await this.waitGone(pods);
      for (const o of prepare(rec.unit).objects.filter((x) => x.kind === 'Pod')) await this.applyObject(o);
    }
  }

  /** The pod to read logs from or exec into: ready first, then running, newest first. */
  private async pickPod(name: string): Promise<KObj> {
    const { pods } = await this.owned(`${LABEL_WORKLOAD}=${name}`);
    const alive = pods.filter((p) => !p.metadata.deletionTimestamp);
    const score = (p: KObj): number => (objectPhase(p, []).ready ? 2 : p.status?.phase === 'Running' ? 1 : 0);
    alive.sort(
      (a, b) =>
        score(b) - score(a) ||
        String(b.metadata.creationTimestamp ?? '').localeCompare(String(a.metadata.creationTimestamp ?? '')),
    );
    if (alive.length === 0)
      throw new DriverError(`workload ${name} has no pods on this cluster; is it applied and not stopped?`);
    return alive[0];
  }

  private containerOf(pod: KObj, wanted?: string): string {
    const names = ((pod.spec?.containers ?? []) as { name: string }[]).map((c) => c.name);
    if (wanted && !names.includes(wanted))
      throw new DriverError(`pod ${pod.metadata.name} has no container ${wanted}; it has: ${names.join(', ')}`);
    return wanted ?? names[0];
  }

  async *logs(name: string, opts: LogOptions): AsyncIterable<string> {
    const pod = await this.pickPod(name);
    yield* podLogLines(this.kc!, pod, this.containerOf(pod, opts.container), opts);
  }

  async exec(name: string, command: string[], opts: ExecOptions): Promise<ExecResult> {
    if (command.length === 0) throw new DriverError('exec needs a command, e.g. ["sh", "-c", "echo hi"]');
    const pod = await this.pickPod(name);
    return execInPod(this.kc!, pod, this.containerOf(pod, opts.container), command, opts.signal);
  }

  async execInteractive(name: string, command: string[], opts: InteractiveExecOptions): Promise<InteractiveExec> {
    if (command.length === 0) throw new DriverError('exec needs a command, e.g. ["sh"]');
    const pod = await this.pickPod(name);
    return execInPodInteractive(this.kc!, pod, this.containerOf(pod, opts.container), command, opts);
  }

  async endpoint(name: string, port: number): Promise<Endpoint | null> {
    const { pods } = await this.owned(`${LABEL_WORKLOAD}=${name}`);
    const declares = (p: KObj): boolean =>
      ((p.spec?.containers ?? []) as { ports?: { containerPort: number }[] }[]).some((c) =>
        (c.ports ?? []).some((x) => x.containerPort === port),
      );
    const ready = pods.filter((p) => declares(p) && objectPhase(p, []).ready && p.status?.podIP);
    return ready.length > 0 ? { host: String(ready[0].status.podIP), port } : null;
  }

  async close(): Promise<void> {
    this.api = undefined;
    this.kc = undefined;
  }
}
