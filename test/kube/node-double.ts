/**
 * @module TEST DOUBLE of a Kubernetes node and (unless the harness runs the real ones, `controllers:
 * true`, when it plays only the node and kubelet) the controllers a cluster runs, against the real
 * kube-apiserver of test/kube/harness.ts. It writes through the real API what a kubelet, the
 * scheduler and kube-controller-manager would, so that the driver under test sees Pods and
 * Deployments become Ready, crash, and go away. Everything it does is an ordinary API call; the
 * API server validates, stores, versions and watches it all as it would in a cluster.
 *
 * What it plays (and how it differs from the real component):
 * - node + kubelet: registers Node `outpost-test-node` (InternalIP 127.0.0.1, its kubelet port),
 *   runs the containers of pods bound to it as host processes (kubelet-double.ts), writes pod
 *   status (phase, conditions, container states, restarts, podIP 127.0.0.1), finishes graceful
 *   deletion, and serves the kubelet API the API server proxies `pods/log` and `pods/exec` to
 *   (`/containerLogs/...`, `/exec/...` over the websocket channel protocol).
 * - scheduler: binds unscheduled pods to the node (`pods/binding`).
 * - deployment controller: pods from the template (owned by the Deployment itself: no ReplicaSet
 *   objects), rollouts like `strategy: Recreate` (all pods share the host network), status with
 *   observedGeneration, replica counts and the Available/Progressing conditions (never
 *   ProgressDeadlineExceeded: that is tested against the real controller, controllers.test.ts).
 * - garbage collector: pods whose owning Deployment is gone are deleted.
 * - namespace controller: a terminating namespace's contents are deleted (every namespaced
 *   resource the API server's discovery lists), then the namespace is finalized.
 * Not played (run the real controllers for them): ReplicaSets, StatefulSets, DaemonSets, Jobs,
 * Services' endpoints, service accounts. The Node's Ready heartbeat is renewed every 10 s either way.
 *
 * @example
 * const kube = await startKubeApiServer();
 * const node = await startNodeDouble(kube);
 * // ... driver tests
 * await node.stop();
 * await kube.stop();
 */
import { createHash, randomBytes } from 'node:crypto';
import { KubeApi, type Obj } from './api.js';
import type { KubeApiServer } from './harness.js';
import { startKubeletApi } from './kubelet-api.js';
import { Kubelet } from './kubelet-double.js';

export const NODE_NAME = 'outpost-test-node';

export interface NodeDouble {
  /** Appends a line to a running container's log (canned output for log tests). */
  appendLog(namespace: string, pod: string, line: string, container?: string): void;
  stop(): Promise<void>;
}

export interface NodeDoubleOptions {
  /** Delay before a new pod's containers start (scheduling and image pull). Default 100 ms. */
  startDelayMs?: number;
  /** First CrashLoopBackOff delay; a real kubelet uses 10 s. Default 300 ms. */
  crashBackoffMs?: number;
  /** How often the controllers look at the cluster. Default 150 ms. */
  tickMs?: number;
  /**
   * Play only the node and its kubelet: for a server started with `controllers: true`, whose real
   * kube-controller-manager and kube-scheduler create, bind, collect and finalize. Default: the
   * server's `controllers`.
   */
  kubeletOnly?: boolean;
}

/** How often the Node's Ready condition is renewed: the node lifecycle controller marks it Unknown after 50 s without. */
const HEARTBEAT_MS = 10_000;

const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const isReady = (pod: Obj): boolean =>
  (pod.status?.conditions ?? []).some((c: Obj) => c.type === 'Ready' && c.status === 'True');
const templateHash = (template: unknown): string =>
  createHash('sha256').update(JSON.stringify(template)).digest('hex').slice(0, 10);
const podPath = (p: Obj): string => `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}`;
const deploymentPath = (d: Obj): string =>
  `/apis/apps/v1/namespaces/${d.metadata.namespace}/deployments/${d.metadata.name}`;

export async function startNodeDouble(kube: KubeApiServer, opts: NodeDoubleOptions = {}): Promise<NodeDouble> {
  const api = new KubeApi(kube.url, kube.caPem, kube.token);
  const refs = new Map<string, Obj | undefined>();
  const kubelet = new Kubelet({
    startDelayMs: opts.startDelayMs ?? 100,
    crashBackoffMs: opts.crashBackoffMs ?? 300,
    lookup: (kind, ns, name) => refs.get(`${kind}/${ns}/${name}`),
  });
  const pods = new Map<string, Obj>(); // by namespace/name, from the last tick

  // --- the kubelet API that the API server proxies logs and exec to -------------------------------
  const kubeletApi = await startKubeletApi(kube, kubelet, (ns, name) => pods.get(`${ns}/${name}`));
  const kubeletPort = kubeletApi.port;

  // --- the Node object ----------------------------------------------------------------------------
  await api.ok('POST', '/api/v1/nodes', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: NODE_NAME, labels: { 'kubernetes.io/hostname': NODE_NAME, 'kubernetes.io/os': 'linux' } },
  });
  const nodeStatus = (): Obj => ({
    addresses: [
      { type: 'InternalIP', address: '127.0.0.1' },
      { type: 'Hostname', address: NODE_NAME },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } },
    capacity: { cpu: '2', memory: '4Gi', pods: '110' },
    allocatable: { cpu: '2', memory: '4Gi', pods: '110' },
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'KubeletReady',
        message: 'test double kubelet is posting ready status',
        lastHeartbeatTime: now(),
        lastTransitionTime: now(),
      },
    ],
    nodeInfo: {
      kubeletVersion: kube.version,
      kubeProxyVersion: kube.version,
      operatingSystem: 'linux',
      architecture: 'amd64',
      containerRuntimeVersion: 'outpost-test-double://0',
      kernelVersion: '',
      osImage: 'host processes',
      machineID: '',
      systemUUID: '',
      bootID: '',
    },
  });
  await api.ok('PATCH', `/api/v1/nodes/${NODE_NAME}/status`, { status: nodeStatus() }, 'application/merge-patch+json');
  let heartbeat = Date.now();
  async function renewNode(): Promise<void> {
    if (Date.now() - heartbeat < HEARTBEAT_MS) return;
    heartbeat = Date.now();
    await api.ok(
      'PATCH',
      `/api/v1/nodes/${NODE_NAME}/status`,
      { status: nodeStatus() },
      'application/merge-patch+json',
    );
  }
  const kubeletOnly = opts.kubeletOnly ?? kube.controllers;

  // --- controllers --------------------------------------------------------------------------------
  const written = new Map<string, string>(); // status last written, by uid
  let discovery: { at: number; paths: string[] } | undefined;

  async function deletePod(p: Obj): Promise<void> {
    if (p.metadata.deletionTimestamp) return;
    const r = await api.req('DELETE', podPath(p));
    if (r.status >= 300 && r.status !== 404) throw new Error(`deleting pod ${p.metadata.name}: ${r.body.message}`);
  }

  /** Writes a status unless it is the one last written for this object (the API server normalizes what it stores). */
  async function writeStatus(path: string, obj: Obj, status: Obj): Promise<void> {
    const key = JSON.stringify(status);
    if (written.get(obj.metadata.uid) === key) return;
    const r = await api.patchStatus(path, status);
    if (r.status === 404 || r.status === 409) return; // gone or changed meanwhile: next tick
    if (r.status >= 300) throw new Error(`status of ${path}: HTTP ${r.status}: ${r.body.message}`);
    written.set(obj.metadata.uid, key);
  }

  /** Resources a namespace may hold, from discovery (refreshed at most every 5 s, for CRDs). */
  async function namespacedCollections(): Promise<string[]> {
    if (discovery && Date.now() - discovery.at < 5_000) return discovery.paths;
    const paths: string[] = [];
    const add = async (base: string): Promise<void> => {
      const r = await api.req('GET', base);
      if (r.status !== 200) return;
      for (const res of (r.body.resources ?? []) as Obj[])
        if (res.namespaced && !String(res.name).includes('/') && (res.verbs ?? []).includes('deletecollection'))
          paths.push(`${base}/namespaces/{ns}/${res.name}`);
    };
    await add('/api/v1');
    for (const g of (await api.ok('GET', '/apis')).groups as Obj[])
      await add(`/apis/${g.preferredVersion.groupVersion}`);
    discovery = { at: Date.now(), paths };
    return paths;
  }

  async function namespaces(): Promise<void> {
    for (const ns of await api.items('/api/v1/namespaces')) {
      if (!ns.metadata.deletionTimestamp || !(ns.spec?.finalizers ?? []).includes('kubernetes')) continue;
      const name = ns.metadata.name as string;
      let left = 0;
      for (const p of await namespacedCollections()) {
        const path = p.replace('{ns}', name);
        const items = await api.items(path).catch(() => [] as Obj[]);
        left += items.length;
        if (items.some((o) => !o.metadata.deletionTimestamp)) await api.req('DELETE', path);
      }
      if (left === 0) {
        await api.req('PUT', `/api/v1/namespaces/${name}/finalize`, {
          ...ns,
          spec: { ...ns.spec, finalizers: ns.spec.finalizers.filter((f: string) => f !== 'kubernetes') },
        });
      }
    }
  }

  async function deployments(all: Obj[], podList: Obj[]): Promise<void> {
    for (const d of all) {
      const owned = podList.filter((p) => p.metadata.ownerReferences?.some((r: Obj) => r.uid === d.metadata.uid));
      if (d.metadata.deletionTimestamp) {
        // Foreground deletion: the Deployment goes once its pods are gone.
        for (const p of owned) await deletePod(p);
        if (owned.length === 0 && (d.metadata.finalizers ?? []).includes('foregroundDeletion'))
          await api.req(
            'PATCH',
            deploymentPath(d),
            { metadata: { finalizers: d.metadata.finalizers.filter((f: string) => f !== 'foregroundDeletion') } },
            'application/merge-patch+json',
          );
        continue;
      }
      const replicas = Number(d.spec.replicas ?? 1);
      const hash = templateHash(d.spec.template);
      const rsName = `${d.metadata.name}-${hash}`;
      const alive = owned.filter((p) => !p.metadata.deletionTimestamp);
      const old = owned.filter((p) => p.metadata.labels?.['pod-template-hash'] !== hash);
      for (const p of old) await deletePod(p);
      const current = alive.filter((p) => p.metadata.labels?.['pod-template-hash'] === hash);
      let created = 0;
      if (old.length === 0)
        for (let i = current.length; i < replicas; i++) {
          await createPod(d, hash, rsName);
          created++;
        }
      for (const p of current.slice(replicas)) await deletePod(p);
      const kept = current.slice(0, replicas);
      const ready = kept.filter(isReady).length;

      const gen = Number(d.metadata.generation ?? 1);
      const complete = ready >= replicas && kept.length + created === replicas && old.length === 0;
      const available = ready >= replicas - Math.floor(replicas * 0.25);
      const conditions: Obj[] = [
        available
          ? {
              type: 'Available',
              status: 'True',
              reason: 'MinimumReplicasAvailable',
              message: 'Deployment has minimum availability.',
            }
          : {
              type: 'Available',
              status: 'False',
              reason: 'MinimumReplicasUnavailable',
              message: 'Deployment does not have minimum availability.',
            },
        complete
          ? {
              type: 'Progressing',
              status: 'True',
              reason: 'NewReplicaSetAvailable',
              message: `ReplicaSet "${rsName}" has successfully progressed.`,
            }
          : {
              type: 'Progressing',
              status: 'True',
              reason: 'ReplicaSetUpdated',
              message: `ReplicaSet "${rsName}" is progressing.`,
            },
      ];
      const t = now();
      for (const c of conditions) {
        const prev = ((d.status?.conditions ?? []) as Obj[]).find((o) => o.type === c.type);
        const same = prev && prev.status === c.status && prev.reason === c.reason;
        c.lastUpdateTime = same ? prev.lastUpdateTime : t;
        c.lastTransitionTime = prev && prev.status === c.status ? prev.lastTransitionTime : t;
      }
      // The real controller omits zero counts; clients must treat a missing count as 0.
      const count = (n: number): number | undefined => (n > 0 ? n : undefined);
      const status: Obj = JSON.parse(
        JSON.stringify({
          observedGeneration: gen,
          replicas: count(alive.length + created),
          updatedReplicas: count(kept.length + created),
          readyReplicas: count(ready),
          availableReplicas: count(ready),
          unavailableReplicas: count(Math.max(replicas - ready, 0)),
          conditions,
        }),
      );
      // Merge patch: a count that went to zero must be removed explicitly.
      for (const k of ['replicas', 'updatedReplicas', 'readyReplicas', 'availableReplicas', 'unavailableReplicas'])
        if (status[k] === undefined && d.status?.[k] !== undefined) status[k] = null;
      await writeStatus(deploymentPath(d), d, status);
    }
  }

  async function createPod(d: Obj, hash: string, rsName: string): Promise<void> {
    const tpl = structuredClone(d.spec.template ?? {});
    const pod: Obj = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${rsName}-${randomBytes(3).toString('hex').slice(0, 5)}`,
        namespace: d.metadata.namespace,
        labels: { ...(tpl.metadata?.labels ?? {}), 'pod-template-hash': hash },
        ...(tpl.metadata?.annotations ? { annotations: tpl.metadata.annotations } : {}),
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            name: d.metadata.name,
            uid: d.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: { ...tpl.spec, nodeName: NODE_NAME },
    };
    const r = await api.req('POST', `/api/v1/namespaces/${d.metadata.namespace}/pods`, pod);
    // A terminating namespace refuses new pods (403): the namespace controller is removing them.
    if (r.status >= 300 && r.status !== 409 && r.status !== 403)
      throw new Error(`creating a pod for deployment ${d.metadata.name}: ${r.body.message}`);
  }

  async function garbageCollect(deploymentUids: Set<string>, podList: Obj[]): Promise<void> {
    for (const p of podList) {
      const ref = (p.metadata.ownerReferences ?? []).find((r: Obj) => r.controller);
      if (ref?.kind === 'Deployment' && !deploymentUids.has(ref.uid)) await deletePod(p);
    }
  }

  async function schedule(podList: Obj[]): Promise<void> {
    for (const p of podList) {
      if (p.spec.nodeName || p.metadata.deletionTimestamp) continue;
      await api.req('POST', `${podPath(p)}/binding`, {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: p.metadata.name, namespace: p.metadata.namespace },
        target: { apiVersion: 'v1', kind: 'Node', name: NODE_NAME },
      });
    }
  }

  /** Values of ConfigMaps and Secrets that env vars of pods not yet started refer to. */
  async function loadRefs(podList: Obj[]): Promise<void> {
    for (const p of podList) {
      for (const c of (p.spec.containers ?? []) as Obj[])
        for (const e of (c.env ?? []) as Obj[]) {
          const ref = e.valueFrom?.configMapKeyRef ?? e.valueFrom?.secretKeyRef;
          if (!ref) continue;
          const kind = e.valueFrom.configMapKeyRef ? 'ConfigMap' : 'Secret';
          const key = `${kind}/${p.metadata.namespace}/${ref.name}`;
          if (refs.has(key)) continue;
          const r = await api.req(
            'GET',
            `/api/v1/namespaces/${p.metadata.namespace}/${kind === 'ConfigMap' ? 'configmaps' : 'secrets'}/${ref.name}`,
          );
          refs.set(key, r.status === 200 ? r.body : undefined);
        }
    }
  }

  async function kubeletSync(podList: Obj[]): Promise<void> {
    refs.clear();
    await loadRefs(podList.filter((p) => p.spec.nodeName === NODE_NAME && p.status?.phase === 'Pending'));
    for (const p of podList) {
      if (p.spec.nodeName !== NODE_NAME) continue;
      const status = kubelet.sync(p);
      if (status === 'gone') {
        await api.req('DELETE', podPath(p), {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          gracePeriodSeconds: 0,
          preconditions: { uid: p.metadata.uid },
        });
        continue;
      }
      // Keep transition times stable when nothing changed, as a real kubelet does.
      const old = (p.status?.conditions ?? []) as Obj[];
      for (const c of status.conditions as Obj[]) {
        const prev = old.find((o) => o.type === c.type);
        if (prev && prev.status === c.status) c.lastTransitionTime = prev.lastTransitionTime;
      }
      status.qosClass = p.status?.qosClass;
      await writeStatus(podPath(p), p, status);
    }
  }

  async function tick(): Promise<void> {
    const podList = await api.items('/api/v1/pods');
    pods.clear();
    for (const p of podList) pods.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
    await renewNode();
    if (!kubeletOnly) {
      const deps = await api.items('/apis/apps/v1/deployments');
      await namespaces();
      await deployments(deps, podList);
      await garbageCollect(new Set(deps.map((d) => d.metadata.uid as string)), podList);
      await schedule(podList);
    }
    await kubeletSync(podList);
  }

  let stopped = false;
  let lastError = '';
  const loop = (async () => {
    while (!stopped) {
      try {
        await tick();
        lastError = '';
      } catch (err) {
        // A double's bug must show in the test output, not stop the simulated cluster.
        const msg = (err as Error).message;
        if (msg !== lastError && !stopped) console.error(`node double: ${msg}`);
        lastError = msg;
      }
      await new Promise((r) => setTimeout(r, opts.tickMs ?? 150));
    }
  })();

  return {
    appendLog(namespace, pod, line, container) {
      const p = pods.get(`${namespace}/${pod}`);
      const c = container ?? p?.spec?.containers?.[0]?.name;
      if (!p || !kubelet.append(namespace, pod, c, line))
        throw new Error(`appendLog: pod ${namespace}/${pod} has no started container ${c ?? ''}; wait until it runs`);
    },
    async stop() {
      stopped = true;
      await loop;
      await kubeletApi.close();
      await kubelet.shutdown();
    },
  };
}
