/**
 * @module From what podman shows (pods, containers) and what the driver remembers (state file) to
 * the observation the reconciler reports. Pure, so the phase rules are unit-tested without podman.
 */
import type { ObjectStatus } from '../../../core/mailbox.js';
import { STATE_RANK, type ReportedPhase } from '../../../core/status.js';
import { stoppedOnRequest, type WorkloadObservation } from '../driver.js';
import { LABEL_HASH, templatePodNames } from './plan.js';
import type { PodmanWorkloadState } from './state.js';

/**
 * A container that restarted this recently is not Ready even while it runs: podman restarts a
 * crashing container at once (no back-off), so a crash loop is "running" most of the time.
 */
export const CRASH_WINDOW_MS = 10_000;

/**
 * A container its restart policy wants running that has stayed down this long was left down:
 * podman restarts such a container 0.17-0.47 s after its exit (measured at load average 5), so 2 s
 * leaves room for a slower machine. What leaves one down: `podman stop` or `podman kill` on site,
 * a reboot (without systemd nothing runs podman-restart.service), or podman 4.3's stop/restart
 * races (its PRs 17077 and 18267: the cleanup process of a stopped run acts after the next start).
 * Status reports it as drift, so the reconciler applies the unit again and the apply starts it
 * (apply.ts, start-watch.ts).
 */
export const LEFT_DOWN_MS = 2_000;

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
  /** Epoch ms; 0 or less when podman has no time (never created, started or exited). */
  createdAt: number;
  startedAt: number;
  finishedAt: number;
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

/** Podman's states of a container that is not running and not on its way (paused, stopping, removing). */
const DOWN_STATES = new Set(['exited', 'stopped', 'created', 'configured']);

/**
 * Down although its restart policy wants it running: any down state under `always`, exited
 * non-zero under `on-failure`. Momentarily true in a crash loop, between an exit and podman's
 * restart; `leftDown` is the lasting case.
 */
export function wantsRunning(c: ContainerView): boolean {
  if (!DOWN_STATES.has(c.state)) return false;
  return c.restartPolicy === 'always' || (c.restartPolicy === 'on-failure' && c.exitCode !== 0);
}

/** Down for LEFT_DOWN_MS and not restarted by podman in that time: nobody will start it but us. */
export function leftDown(c: ContainerView, now: number): boolean {
  return wantsRunning(c) && now - Math.max(c.createdAt, c.startedAt, c.finishedAt) >= LEFT_DOWN_MS;
}

/**
 * The pods the state's templates declare that no pod of its version (hash) stands for: removed on
 * site (`podman pod rm`), or not made yet by an operation in progress. By the names status shows.
 */
export function missingPods(state: PodmanWorkloadState, pods: PodView[]): string[] {
  const have = new Set(pods.filter((p) => p.labels[LABEL_HASH] === state.hash).map((p) => p.name));
  return state.templates.flatMap(templatePodNames).filter((n) => !have.has(n));
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
  const left = leftDown(c, now) ? '; podman did not start it again, the next apply does' : '';
  if (c.state === 'exited' || c.state === 'stopped') {
    const why = c.error || `exit code ${c.exitCode}`;
    return {
      ready: false,
      crashing: c.restarts > 0 || c.exitCode !== 0,
      message: `${c.state} (${why}), ${c.restarts} restarts${left}`,
    };
  }
  return { ready: false, crashing: false, message: `${c.state}${left}` };
}

/**
 * `busy`: an operation on the workload (an apply, a removal, a stop, start or restart) is in
 * progress in this driver. What is missing or down then may be its own doing (an apply's new pods
 * not made yet, the old ones removed before the state file names the new version), so nothing is
 * drift; the reconciler looks again on its next pass.
 */
export function observe(
  name: string,
  state: PodmanWorkloadState | undefined,
  allPods: PodView[],
  allContainers: ContainerView[],
  now = Date.now(),
  busy = false,
): WorkloadObservation {
  // Pods of another version beside the one that runs, with no operation in progress: left over
  // (an update interrupted after its new pods ran, a pod played by hand with Outpost's labels).
  // Drift the next apply removes; kept apart so that they do not stand for the running pods of the
  // same name. After a failed update the previous version's pods are what runs: not left over.
  const leftOver = state && !state.error && !busy ? allPods.filter((p) => p.labels[LABEL_HASH] !== state.hash) : [];
  const pods = leftOver.length ? allPods.filter((p) => !leftOver.includes(p)) : allPods;
  const containers = leftOver.length
    ? allContainers.filter((c) => c.labels[LABEL_HASH] === state!.hash)
    : allContainers;
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
    return { ...base, phase: 'Paused', message: stoppedOnRequest(name), stopped: true };
  }

  let allReady = true;
  let crashing = false;
  const podReady = new Map<string, boolean>();
  // Drift (driver.ts `modified`): what the reconciler puts back by applying again.
  const modified: string[] = [];
  for (const c of [...containers].sort((a, b) => `${a.pod}/${a.container}`.localeCompare(`${b.pod}/${b.container}`))) {
    const s = containerStatus(c, now);
    objects[`Pod/${c.pod}/${c.container}`] = s.message ? { ready: s.ready, message: s.message } : { ready: s.ready };
    if (leftDown(c, now) && !busy) modified.push(`Pod/${c.pod}/${c.container}`);
    podReady.set(c.pod, (podReady.get(c.pod) ?? true) && s.ready);
    allReady &&= s.ready;
    crashing ||= s.crashing;
  }
  for (const p of pods)
    objects[`Pod/${p.name}`] = {
      ready: podReady.get(p.name) ?? false,
      ...(podReady.get(p.name) ? {} : { message: p.status }),
    };

  for (const t of state?.templates ?? []) {
    if (t.kind !== 'Deployment') continue;
    const ready = pods.filter((p) => p.name.startsWith(`${t.name}-pod-`) && podReady.get(p.name)).length;
    objects[`Deployment/${t.name}`] = { ready: ready >= t.replicas, message: `${ready}/${t.replicas} pods ready` };
  }
  // Drift too, as Kubernetes would see a deleted pod: the apply it triggers plays the missing pods
  // beside the ones that run (apply.ts).
  const missing = state ? missingPods(state, pods) : [];
  if (!busy)
    for (const p of missing) {
      objects[`Pod/${p}`] = {
        ready: false,
        message: 'missing (removed outside Outpost?); the next apply recreates it',
      };
      modified.push(`Pod/${p}`);
    }

  for (const p of leftOver) {
    const key = `Pod/${p.name}@${(p.labels[LABEL_HASH] ?? '').slice(0, 8)}`;
    objects[key] = {
      ready: false,
      message: `left over from version ${p.labels[LABEL_HASH] ?? '(none)'} beside the running ${state!.hash} (an update interrupted?); the next apply removes it`,
    };
    modified.push(key);
  }

  let phase: ReportedPhase;
  let message: string | undefined;
  if (missing.length && busy) {
    phase = 'Progressing';
    message = `${missing.length} pod(s) missing while an operation on the workload is in progress`;
  } else if (missing.length) {
    phase = crashing ? 'Degraded' : 'Modified';
    message =
      pods.length === 0
        ? 'no pods exist (removed outside Outpost?); the next apply recreates them'
        : `${missing.length} pod(s) missing (removed outside Outpost?): ${missing.join(', ')}; the next apply recreates them`;
  } else if (pods.length === 0) {
    // A state file that names no pod template (one rebuilt by an Outpost that could not plan the unit).
    phase = 'Degraded';
    message = 'no pods exist (removed outside Outpost?)';
  } else if (allReady) {
    phase = 'Ready';
  } else {
    phase = crashing ? 'Degraded' : 'Progressing';
    const notReady = Object.entries(objects).filter(([k, o]) => !o.ready && k.split('/').length === 3);
    message = notReady.map(([k, o]) => `${k.slice(4)}: ${o.message ?? 'not ready'}`).join('; ') || undefined;
  }
  if (leftOver.length && !message)
    message = `${leftOver.length} pod(s) of another version left over: ${leftOver.map((p) => p.name).join(', ')}; the next apply removes them`;
  if (modified.length && STATE_RANK[phase] < STATE_RANK.Modified) phase = 'Modified';
  return { ...base, phase, ...(message ? { message } : {}), ...(modified.length ? { modified } : {}) };
}
