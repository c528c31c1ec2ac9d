/**
 * @module From what podman shows (pods, containers) and what the driver remembers (state file) to
 * the observation the reconciler reports. Pure, so the phase rules are unit-tested without podman.
 */
import type { ObjectStatus } from '../../../core/mailbox.js';
import type { ReportedPhase } from '../../../core/status.js';
import type { WorkloadObservation } from '../driver.js';
import type { PodmanWorkloadState } from './state.js';

/**
 * A container that restarted this recently is not Ready even while it runs: podman restarts a
 * crashing container at once (no back-off), so a crash loop is "running" most of the time.
 */
export const CRASH_WINDOW_MS = 10_000;

export interface ContainerView {
  id: string;
  /** Kubernetes container name (podman's name minus the `<pod>-` prefix). */
  container: string;
  pod: string;
  /** The Pod or Deployment the pod came from. */
  template: string;
  state: string;
  exitCode: number;
  error: string;
  restarts: number;
  startedAt: number;
  restartPolicy: string;
  labels: Record<string, string>;
  /** Readiness probe result; undefined when the container has no probe. */
  probe?: { ok: boolean; message?: string };
}

export interface PodView {
  name: string;
  status: string;
  labels: Record<string, string>;
}

function containerStatus(c: ContainerView, now: number): ObjectStatus & { crashing: boolean } {
  if (c.state === 'running') {
    if (c.restarts > 0 && now - c.startedAt < CRASH_WINDOW_MS) {
      return {
        ready: false,
        crashing: true,
        message: `restarted ${c.restarts} times, last start ${Math.round((now - c.startedAt) / 1000)}s ago`,
      };
    }
    if (c.probe && !c.probe.ok)
      return {
        ready: false,
        crashing: false,
        message: `readiness probe failed${c.probe.message ? `: ${c.probe.message}` : ''}`,
      };
    return { ready: true, crashing: false };
  }
  if (c.state === 'exited' && c.exitCode === 0 && c.restartPolicy !== 'always')
    return { ready: true, crashing: false, message: 'completed' };
  if (c.state === 'exited' || c.state === 'stopped') {
    const why = c.error || `exit code ${c.exitCode}`;
    return {
      ready: false,
      crashing: c.restarts > 0 || c.exitCode !== 0,
      message: `${c.state} (${why}), ${c.restarts} restarts`,
    };
  }
  return { ready: false, crashing: false, message: c.state };
}

export function observe(
  name: string,
  state: PodmanWorkloadState | undefined,
  pods: PodView[],
  containers: ContainerView[],
  now = Date.now(),
): WorkloadObservation {
  const labels = pods[0]?.labels ?? containers[0]?.labels ?? {};
  const generation = state?.generation ?? Number(labels['outpost.dev/generation'] ?? 0);
  const hash = state?.hash ?? labels['outpost.dev/hash'] ?? '';
  const restarts = containers.reduce((n, c) => n + c.restarts, 0);
  const objects: Record<string, ObjectStatus> = {};
  const base = { name, generation, hash, restarts, objects };

  if (state?.error) {
    const running =
      pods.length > 0 && labels['outpost.dev/hash'] !== state.hash
        ? ` (the previous version, hash ${labels['outpost.dev/hash']}, keeps running)`
        : '';
    return { ...base, phase: 'Failed', message: state.error + running };
  }
  if (state?.stopped) {
    for (const p of pods) objects[`Pod/${p.name}`] = { ready: false, message: 'stopped on request' };
    return { ...base, phase: 'Paused', message: 'stopped on request; start or apply it to run again' };
  }

  let allReady = true;
  let crashing = false;
  const podReady = new Map<string, boolean>();
  for (const c of [...containers].sort((a, b) => `${a.pod}/${a.container}`.localeCompare(`${b.pod}/${b.container}`))) {
    const s = containerStatus(c, now);
    objects[`Pod/${c.pod}/${c.container}`] = s.message ? { ready: s.ready, message: s.message } : { ready: s.ready };
    podReady.set(c.pod, (podReady.get(c.pod) ?? true) && s.ready);
    allReady &&= s.ready;
    crashing ||= s.crashing;
  }
  for (const p of pods)
    objects[`Pod/${p.name}`] = {
      ready: podReady.get(p.name) ?? false,
      ...(podReady.get(p.name) ? {} : { message: p.status }),
    };

  let missing = 0;
  for (const t of state?.templates ?? []) {
    const have = pods.filter((p) => (t.kind === 'Pod' ? p.name === t.name : p.name.startsWith(`${t.name}-pod-`)));
    const ready = have.filter((p) => podReady.get(p.name)).length;
    missing += Math.max(0, t.replicas - have.length);
    if (t.kind === 'Deployment')
      objects[`Deployment/${t.name}`] = { ready: ready >= t.replicas, message: `${ready}/${t.replicas} pods ready` };
  }

  let phase: ReportedPhase;
  let message: string | undefined;
  if (pods.length === 0) {
    phase = 'Degraded';
    message = 'no pods exist (removed outside Outpost?); applying the workload again recreates them';
  } else if (missing > 0) {
    phase = 'Degraded';
    message = `${missing} pod(s) missing; applying the workload again recreates them`;
  } else if (allReady) {
    phase = 'Ready';
  } else {
    phase = crashing ? 'Degraded' : 'Progressing';
    const notReady = Object.entries(objects).filter(([k, o]) => !o.ready && k.split('/').length === 3);
    message = notReady.map(([k, o]) => `${k.slice(4)}: ${o.message ?? 'not ready'}`).join('; ') || undefined;
  }
  return message ? { ...base, phase, message } : { ...base, phase };
}
