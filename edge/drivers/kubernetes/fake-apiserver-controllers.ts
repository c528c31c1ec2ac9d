/**
 * @module The stand-in's controllers (test support, see `fake-apiserver.ts`): deployment (pods
 * and status with observedGeneration, replica counts and the Available/Progressing conditions),
 * garbage collection of pods whose owner is gone, namespace termination, and the loop that hands
 * pods to the kubelet and stores the status it reports.
 *
 * Simplifications, each invisible to a client that reads objects through the API: there are no
 * ReplicaSet objects (pods point at a ReplicaSet name and uid derived from the template hash), and
 * a rollout always works like `strategy: Recreate` because all pods share the host network (two
 * pods of one Deployment would fight over one port).
 */
import { createHash } from 'node:crypto';
import type { Kubelet } from './fake-apiserver-kubelet.js';
import {
  RESOURCES,
  deepEqual,
  type Obj,
  type ObjectStore,
  type ResourceType,
  type StoredObject,
} from './fake-apiserver-store.js';

export interface ControllerOptions {
  /** Overrides every Deployment's progressDeadlineSeconds, so tests see ProgressDeadlineExceeded quickly. */
  progressDeadlineMs?: number;
}

const kind = (k: string): ResourceType => RESOURCES.find((r) => r.kind === k)!;
const POD = kind('Pod');
const DEPLOYMENT = kind('Deployment');
const NAMESPACE = kind('Namespace');

const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** The same derivation a real controller uses in spirit: a short stable hash of the pod template. */
export function templateHash(template: unknown): string {
  return createHash('sha256').update(JSON.stringify(template)).digest('hex').slice(0, 10);
}

function uuidFrom(s: string): string {
  const h = createHash('sha256').update(s).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

const isReady = (pod: Obj): boolean =>
  (pod.status?.conditions ?? []).some((c: Obj) => c.type === 'Ready' && c.status === 'True');

export class Controllers {
  private readonly progress = new Map<string, { generation: number; ready: number; at: number }>();
  private podSeq = 0;

  constructor(
    private readonly store: ObjectStore,
    private readonly kubelet: Kubelet,
    private readonly opts: ControllerOptions,
  ) {}

  tick(): void {
    this.namespaces();
    this.deployments();
    this.garbageCollect();
    this.pods();
  }

  /** Marks a pod for deletion: the kubelet stops its processes, then the pod leaves the store. */
  terminatePod(s: StoredObject): void {
    if (s.obj.metadata.deletionTimestamp) return;
    const obj = structuredClone(s.obj);
    obj.metadata.deletionTimestamp = now();
    obj.metadata.deletionGracePeriodSeconds = obj.spec?.terminationGracePeriodSeconds ?? 30;
    this.store.put(POD, obj, s.owners);
  }

  private writeStatus(s: StoredObject, status: Obj): void {
    if (deepEqual(s.obj.status, status)) return;
    this.store.put(s.type, { ...s.obj, status }, s.owners);
  }

  private pods(): void {
    for (const s of this.store.list(POD)) {
      const status = this.kubelet.sync(s.obj);
      if (status === 'gone') {
        this.store.delete(POD, s.obj.metadata.namespace, s.obj.metadata.name);
        continue;
      }
      // Keep transition times stable when nothing changed, as a real kubelet does.
      const old = (s.obj.status?.conditions ?? []) as Obj[];
      for (const c of status.conditions as Obj[]) {
        const prev = old.find((o) => o.type === c.type);
        if (prev && prev.status === c.status) c.lastTransitionTime = prev.lastTransitionTime;
      }
      this.writeStatus(s, status);
    }
  }

  private ownedPods(d: Obj): StoredObject[] {
    return this.store.list(POD, d.metadata.namespace).filter((p) => {
      const ref = p.obj.metadata.ownerReferences?.[0];
      const h = p.obj.metadata.labels?.['pod-template-hash'];
      return ref && h && ref.uid === uuidFrom(`${d.metadata.uid}/${h}`);
    });
  }

  private deployments(): void {
    for (const s of this.store.list(DEPLOYMENT)) {
      const d = s.obj;
      const pods = this.ownedPods(d);
      if (d.metadata.deletionTimestamp) {
        // Foreground deletion: the Deployment goes once its pods are gone.
        for (const p of pods) this.terminatePod(p);
        if (pods.length === 0) this.store.delete(DEPLOYMENT, d.metadata.namespace, d.metadata.name);
        continue;
      }
      const replicas = Number(d.spec.replicas ?? 1);
      const hash = templateHash(d.spec.template);
      const rsName = `${d.metadata.name}-${hash}`;
      const old = pods.filter((p) => p.obj.metadata.labels['pod-template-hash'] !== hash);
      for (const p of old) this.terminatePod(p);
      let current = pods.filter(
        (p) => p.obj.metadata.labels['pod-template-hash'] === hash && !p.obj.metadata.deletionTimestamp,
      );
      if (old.length === 0) {
        for (let i = current.length; i < replicas; i++) this.createPod(d, hash, rsName);
      }
      for (const p of current.slice(replicas).reverse()) this.terminatePod(p);
      current = this.ownedPods(d).filter(
        (p) => p.obj.metadata.labels['pod-template-hash'] === hash && !p.obj.metadata.deletionTimestamp,
      );
      const live = this.ownedPods(d).filter((p) => !p.obj.metadata.deletionTimestamp);
      const ready = current.filter((p) => isReady(p.obj)).length;

      const gen = Number(d.metadata.generation ?? 1);
      const key = d.metadata.uid as string;
      const pr = this.progress.get(key);
      if (!pr || pr.generation !== gen || ready > pr.ready)
        this.progress.set(key, { generation: gen, ready, at: Date.now() });
      else pr.ready = ready;
      const since = this.progress.get(key)!.at;
      const complete = ready >= replicas && current.length === replicas && old.length === 0;
      const deadline = this.opts.progressDeadlineMs ?? Number(d.spec.progressDeadlineSeconds ?? 600) * 1000;
      const available = ready >= replicas - Math.floor(replicas * 0.25);
      const t = now();
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
          : Date.now() - since > deadline
            ? {
                type: 'Progressing',
                status: 'False',
                reason: 'ProgressDeadlineExceeded',
                message: `ReplicaSet "${rsName}" has timed out progressing.`,
              }
            : {
                type: 'Progressing',
                status: 'True',
                reason: 'ReplicaSetUpdated',
                message: `ReplicaSet "${rsName}" is progressing.`,
              },
      ];
      for (const c of conditions) {
        const prev = ((d.status?.conditions ?? []) as Obj[]).find((o) => o.type === c.type);
        const same = prev && prev.status === c.status && prev.reason === c.reason;
        c.lastUpdateTime = same ? prev.lastUpdateTime : t;
        c.lastTransitionTime = prev && prev.status === c.status ? prev.lastTransitionTime : t;
      }
      // A real server omits zero counts; clients must treat a missing count as 0.
      const count = (n: number): number | undefined => (n > 0 ? n : undefined);
      const status: Obj = JSON.parse(
        JSON.stringify({
          observedGeneration: gen,
          replicas: count(live.length),
          updatedReplicas: count(current.length),
          readyReplicas: count(ready),
          availableReplicas: count(ready),
          unavailableReplicas: count(Math.max(replicas - ready, 0)),
          conditions,
        }),
      );
      this.writeStatus(s, status);
    }
  }

  private createPod(d: Obj, hash: string, rsName: string): void {
    const tpl = structuredClone(d.spec.template ?? {});
    const suffix = createHash('sha256').update(`${rsName}/${++this.podSeq}/${Date.now()}`).digest('hex').slice(0, 5);
    const pod: Obj = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${rsName}-${suffix}`,
        namespace: d.metadata.namespace,
        labels: { ...(tpl.metadata?.labels ?? {}), 'pod-template-hash': hash },
        ...(tpl.metadata?.annotations ? { annotations: tpl.metadata.annotations } : {}),
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'ReplicaSet',
            name: rsName,
            uid: uuidFrom(`${d.metadata.uid}/${hash}`),
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: { restartPolicy: 'Always', terminationGracePeriodSeconds: 30, ...tpl.spec },
      status: { phase: 'Pending', qosClass: 'BestEffort' },
    };
    this.store.put(POD, pod, []);
  }

  /** Background deletion: pods whose ReplicaSet's Deployment no longer exists go away. */
  private garbageCollect(): void {
    const live = new Set<string>();
    for (const d of this.store.list(DEPLOYMENT)) {
      for (const p of this.ownedPods(d.obj)) live.add(p.obj.metadata.uid);
    }
    for (const p of this.store.list(POD)) {
      const ref = p.obj.metadata.ownerReferences?.[0];
      if (ref?.kind === 'ReplicaSet' && !live.has(p.obj.metadata.uid)) this.terminatePod(p);
    }
  }

  private namespaces(): void {
    for (const ns of this.store.list(NAMESPACE)) {
      if (!ns.obj.metadata.deletionTimestamp) continue;
      const name = ns.obj.metadata.name as string;
      let left = 0;
      for (const s of this.store.all()) {
        if (s.obj.metadata.namespace !== name) continue;
        left++;
        if (s.type === POD) this.terminatePod(s);
        else this.store.delete(s.type, name, s.obj.metadata.name);
      }
      if (left === 0) this.store.delete(NAMESPACE, undefined, name);
    }
  }
}
