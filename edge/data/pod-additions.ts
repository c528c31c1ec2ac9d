/**
 * @module What edge/data/ adds to a workload's pods before the driver runs them: environment
 * variables naming directories of the edge, and (podman, kubernetes) those directories as hostPath
 * volumes. One function for the export directories (egress.ts) and the objects directory (delivery.ts).
 */
import type { Manifest } from '../../core/resources.js';

export interface PodAdditions {
  /** Set on every container, replacing variables of the same names. */
  env: { name: string; value: string }[];
  /** Added to every container. */
  mounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  /** Added to the pod. */
  volumes?: { name: string; hostPath: { path: string; type: string } }[];
}

/**
 * A copy of `m` with the additions in its pod (a Pod's spec, or the pod template of a Deployment
 * and the like); `m` itself when it has no pod with containers. Deterministic: the same additions
 * give the same manifest, so the content hash the drivers compare stays stable.
 */
export function withPodAdditions(m: Manifest, add: PodAdditions): Manifest {
  const out = structuredClone(m) as Record<string, unknown>;
  const spec = out.spec as Record<string, unknown> | undefined;
  const podSpec = (
    out.kind === 'Pod' ? spec : (spec?.template as { spec?: Record<string, unknown> } | undefined)?.spec
  ) as Record<string, unknown> | undefined;
  if (!podSpec || !Array.isArray(podSpec.containers)) return m;
  const names = new Set(add.env.map((x) => x.name));
  for (const c of podSpec.containers as Record<string, unknown>[]) {
    c.env = [...((c.env as { name: string }[] | undefined) ?? []).filter((x) => !names.has(x.name)), ...add.env];
    if (add.mounts?.length) c.volumeMounts = [...((c.volumeMounts as unknown[] | undefined) ?? []), ...add.mounts];
  }
  if (add.volumes?.length) podSpec.volumes = [...((podSpec.volumes as unknown[] | undefined) ?? []), ...add.volumes];
  return out as Manifest;
}
