/**
 * @module Readiness from object status, as pure functions: one phase per Kubernetes object, and
 * the workload's phase as the worst of its objects (rank from core/status.ts).
 *
 * - Deployment: Ready when the controller has observed the current generation and the updated,
 *   available replicas equal the desired count with no old pods left. Failed when its Progressing
 *   condition is False (ProgressDeadlineExceeded) or ReplicaFailure is True. Degraded while its
 *   pods crash-loop or cannot pull their image (before the deadline), or a container restarted
 *   within the last minute. Otherwise Progressing.
 * - Pod: Ready on its Ready condition (or Succeeded); Failed on phase Failed or an image that
 *   cannot be pulled; Degraded while crash-looping or within a minute of a restart; Pending while
 *   unscheduled or creating.
 * - Namespace: Ready unless Terminating. Anything else (ConfigMap, Secret, Service...): Ready once it exists.
 */
import type { ObjectStatus } from '../../../core/mailbox.js';
import { STATE_RANK, type ReportedPhase } from '../../../core/status.js';
import type { KObj } from './objects.js';

export interface ObjectPhase extends ObjectStatus {
  phase: ReportedPhase;
}

const IMAGE_ERRORS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
]);

/**
 * A container that restarted this recently counts as crash-looping even while it runs: without
 * a readiness probe a crash-looping pod is Ready for a moment after each restart, and the workload
 * would flap to Ready. One minute covers the kubelet's early back-off steps (10 s, 20 s, 40 s).
 */
export const RECENT_RESTART_MS = 60_000;

const cond = (o: KObj, type: string): Record<string, any> | undefined =>
  ((o.status?.conditions ?? []) as Record<string, any>[]).find((c) => c.type === type);

/** The first container problem of a pod, as `ImagePullBackOff: Back-off pulling image "x"`. */
function containerProblem(pod: KObj, now = Date.now()): { reason: string; text: string } | undefined {
  for (const c of (pod.status?.containerStatuses ?? []) as Record<string, any>[]) {
    const w = c.state?.waiting;
    if (w && (IMAGE_ERRORS.has(w.reason) || w.reason === 'CrashLoopBackOff')) {
      return { reason: w.reason, text: `container ${c.name}: ${w.reason}${w.message ? `: ${w.message}` : ''}` };
    }
    const last = c.lastState?.terminated;
    const finished = last?.finishedAt ? new Date(last.finishedAt).getTime() : NaN;
    if (c.restartCount > 0 && now - finished < RECENT_RESTART_MS) {
      return {
        reason: 'CrashLoopBackOff',
        text: `container ${c.name}: restarted ${c.restartCount} times, last exit code ${last.exitCode}${last.reason ? ` (${last.reason})` : ''}`,
      };
    }
  }
  return undefined;
}

export function restartsOf(pods: KObj[]): number {
  let n = 0;
  for (const p of pods)
    for (const c of (p.status?.containerStatuses ?? []) as Record<string, any>[]) n += Number(c.restartCount ?? 0);
  return n;
}

export function podPhase(pod: KObj): ObjectPhase {
  if (pod.metadata.deletionTimestamp) return { ready: false, phase: 'Progressing', message: 'terminating' };
  const phase = pod.status?.phase as string | undefined;
  if (phase === 'Succeeded') return { ready: true, phase: 'Ready', message: 'completed' };
  if (phase === 'Failed')
    return {
      ready: false,
      phase: 'Failed',
      message: pod.status?.message ?? pod.status?.reason ?? 'all containers exited and will not be restarted',
    };
  const problem = containerProblem(pod);
  if (problem)
    return {
      ready: false,
      phase: problem.reason === 'CrashLoopBackOff' ? 'Degraded' : 'Failed',
      message: problem.text,
    };
  if (cond(pod, 'Ready')?.status === 'True') return { ready: true, phase: 'Ready' };
  if (!phase || phase === 'Pending') {
    const sched = cond(pod, 'PodScheduled');
    return {
      ready: false,
      phase: 'Pending',
      message:
        sched?.status === 'False' ? `unschedulable: ${sched.message ?? sched.reason}` : 'containers are being created',
    };
  }
  return { ready: false, phase: 'Progressing', message: 'containers are not ready' };
}

export function deploymentPhase(d: KObj, pods: KObj[]): ObjectPhase {
  const desired = Number(d.spec?.replicas ?? 1);
  const st = d.status ?? {};
  const progressing = cond(d, 'Progressing');
  const failure = cond(d, 'ReplicaFailure');
  const podProblem = pods.map(containerProblem).find(Boolean);
  const detail = podProblem ? ` (${podProblem.text})` : '';
  if (progressing?.status === 'False')
    return { ready: false, phase: 'Failed', message: `${progressing.reason}: ${progressing.message ?? ''}${detail}` };
  if (failure?.status === 'True')
    return { ready: false, phase: 'Failed', message: `${failure.reason}: ${failure.message ?? ''}` };
  if (Number(st.observedGeneration ?? 0) < Number(d.metadata.generation ?? 0))
    return {
      ready: false,
      phase: 'Progressing',
      message: 'waiting for the deployment controller to observe the new generation',
    };
  const updated = Number(st.updatedReplicas ?? 0);
  const available = Number(st.availableReplicas ?? 0);
  const total = Number(st.replicas ?? 0);
  if (podProblem)
    return { ready: false, phase: 'Degraded', message: `${available}/${desired} available; ${podProblem.text}` };
  if (updated >= desired && available >= desired && total <= desired) return { ready: true, phase: 'Ready' };
  return {
    ready: false,
    phase: 'Progressing',
    message: `${available}/${desired} replicas available, ${updated} updated`,
  };
}

export function objectPhase(o: KObj, podsOfDeployment: KObj[]): ObjectPhase {
  switch (o.kind) {
    case 'Deployment':
      return deploymentPhase(o, podsOfDeployment);
    case 'Pod':
      return podPhase(o);
    case 'Namespace':
      return o.status?.phase === 'Terminating'
        ? { ready: false, phase: 'Progressing', message: 'terminating' }
        : { ready: true, phase: 'Ready' };
    default:
      return { ready: true, phase: 'Ready' };
  }
}

/** The worst object phase wins; its message (prefixed with the object key) becomes the workload's. */
export function worstPhase(objects: Record<string, ObjectPhase>): { phase: ReportedPhase; message?: string } {
  let worst: { phase: ReportedPhase; message?: string } = { phase: 'Ready' };
  for (const [key, o] of Object.entries(objects)) {
    if (STATE_RANK[o.phase] > STATE_RANK[worst.phase])
      worst = { phase: o.phase, message: o.message ? `${key}: ${o.message}` : key };
  }
  return worst;
}
