/**
 * @module Reading what runs: Outpost's pods and containers, found by the `outpost.dev/owner` label
 * of this data directory (never anything else), as plain views for status.ts.
 */
import type { Podman } from './cli.js';
import { LABEL_OWNER, LABEL_TEMPLATE, LABEL_WORKLOAD } from './plan.js';
import type { PodmanWorkloadState } from './state.js';
import type { ContainerView, PodView } from './status.js';

export interface ScannedContainer extends Omit<ContainerView, 'probe'> {
  ip?: string;
}

export interface Scan {
  /** `name` is the pod's name as users know it (see `displayName`); `podmanName` is podman's. */
  pods: (PodView & { id: string; workload: string; podmanName: string })[];
  containers: (ScannedContainer & { workload: string })[];
}

interface PodRow {
  Id: string;
  Name: string;
  Status: string;
  Labels?: Record<string, string> | null;
}

interface Inspect {
  Id: string;
  Name: string;
  Pod: string;
  Created?: string;
  RestartCount: number;
  State: { Status: string; ExitCode: number; Error: string; StartedAt: string; FinishedAt?: string };
  HostConfig?: { RestartPolicy?: { Name?: string } };
  Config?: { Labels?: Record<string, string> | null };
  NetworkSettings?: { IPAddress?: string; Networks?: Record<string, { IPAddress?: string }> | null };
}

function templateOf(pod: string, labels: Record<string, string>, state: PodmanWorkloadState | undefined): string {
  if (labels[LABEL_TEMPLATE]) return labels[LABEL_TEMPLATE];
  // Pods made before the template label (and the NAME-OWNER-VERSION names) existed.
  if (state?.templates.some((t) => t.kind === 'Pod' && t.name === pod)) return pod;
  return /^(.*)-pod-\d+$/.exec(pod)?.[1] ?? pod;
}

/**
 * The name status shows for a pod: its manifest name for a Pod, `DEPLOYMENT-pod-N` for a
 * Deployment's pod, whatever podman calls it (`NAME-OWNER-VERSION`, plan.ts `podName`).
 */
function displayName(podmanName: string, labels: Record<string, string>): string {
  const template = labels[LABEL_TEMPLATE];
  if (!template) return podmanName;
  const replica = /-pod-(\d+)$/.exec(podmanName);
  return replica ? `${template}-pod-${replica[1]}` : template;
}

async function scanOnce(
  podman: Podman,
  owner: string,
  workload: string | undefined,
  states: Map<string, PodmanWorkloadState>,
): Promise<Scan> {
  const filters = [
    '--filter',
    `label=${LABEL_OWNER}=${owner}`,
    ...(workload ? ['--filter', `label=${LABEL_WORKLOAD}=${workload}`] : []),
  ];
  const podRows = JSON.parse(
    (await podman.ok(['pod', 'ps', ...filters, '--format', 'json'], 'listing pods')) || '[]',
  ) as PodRow[];
  const ids = (await podman.ok(['ps', '-a', '-q', '--no-trunc', ...filters], 'listing containers'))
    .split('\n')
    .filter(Boolean);
  const inspected = ids.length
    ? (JSON.parse(
        await podman.ok(['container', 'inspect', '--format', 'json', ...ids], 'inspecting containers'),
      ) as Inspect[])
    : [];

  const pods = podRows.map((p) => {
    const labels = p.Labels ?? {};
    return {
      id: p.Id,
      name: displayName(p.Name, labels),
      podmanName: p.Name,
      status: p.Status,
      labels,
      workload: labels[LABEL_WORKLOAD] ?? '',
    };
  });
  const podNames = new Map(pods.map((p) => [p.id, p]));
  const containers = inspected.map((c) => {
    const labels = c.Config?.Labels ?? {};
    const workloadName = labels[LABEL_WORKLOAD] ?? '';
    const owner = podNames.get(c.Pod);
    const pod = owner?.name ?? '';
    const ip =
      c.NetworkSettings?.IPAddress ||
      Object.values(c.NetworkSettings?.Networks ?? {})
        .map((n) => n.IPAddress)
        .find((a) => a);
    return {
      id: c.Id,
      container:
        owner && c.Name.startsWith(`${owner.podmanName}-`) ? c.Name.slice(owner.podmanName.length + 1) : c.Name,
      pod,
      template: templateOf(pod, labels, states.get(workloadName)),
      state: c.State.Status,
      exitCode: c.State.ExitCode,
      error: c.State.Error,
      restarts: c.RestartCount,
      createdAt: Date.parse(c.Created ?? '') || 0,
      startedAt: Date.parse(c.State.StartedAt) || 0,
      finishedAt: Date.parse(c.State.FinishedAt ?? '') || 0,
      restartPolicy: c.HostConfig?.RestartPolicy?.Name ?? '',
      labels,
      workload: workloadName,
      ...(ip ? { ip } : {}),
    };
  });
  return { pods, containers };
}

/**
 * Lists our pods and containers. A container removed between `ps` and `inspect` (a replace in
 * progress) makes inspect fail for the whole batch, so a failed scan is retried a few times.
 */
export async function scan(
  podman: Podman,
  owner: string,
  workload: string | undefined,
  states: Map<string, PodmanWorkloadState>,
): Promise<Scan> {
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await scanOnce(podman, owner, workload, states);
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
  }
  throw last;
}
