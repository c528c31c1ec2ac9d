/**
 * @module A project's quotas (docs/projects.md, "Quotas"): each rule one function, each refusal a
 * 403 `over_quota` naming the quota, its use and the fix. Every check runs inside the write's
 * transaction after `lockQuota` (hub/state/projects.ts): two writes racing for the last slot are
 * serialized, and the second sees the first's row.
 */
import { parseByteSize } from '../../core/blobs.js';
import { OutpostError } from '../../core/errors.js';
import { formatBytes } from '../../core/limits.js';
import type { DataObject, ProjectQuotas, QuotaName } from '../../core/resources.js';

/** A byte quota as a number (the spec takes `5GiB` too); undefined when not set. */
export function quotaBytes(v: number | string | undefined): number | undefined {
  return v === undefined ? undefined : typeof v === 'number' ? v : parseByteSize(v);
}

/** The refusal: `project "shop" has 10 of 10 edges (quota edges): raise spec.quotas.edges or decommission an edge`. */
export function quotaRefusal(project: string, quota: QuotaName, has: string, fix: string): OutpostError {
  return new OutpostError(
    'over_quota',
    `project "${project}" has ${has} (quota ${quota}): raise spec.quotas.${quota} or ${fix}`,
    {
      details: [{ path: `spec.quotas.${quota}`, message: `project ${project} is at its quota of ${quota}` }],
    },
  );
}

const COUNTED = {
  Edge: { quota: 'edges', noun: 'edges', fix: 'decommission an edge (outpost edge decommission NAME)' },
  Placement: { quota: 'placements', noun: 'placements', fix: 'delete a placement' },
  Workload: { quota: 'workloads', noun: 'workloads', fix: 'delete a workload' },
} as const;

/** A new object of a counted kind (Edge at enrollment, Placement, Workload) must leave its count within the quota. */
export function checkObjectCount(
  project: string,
  quotas: ProjectQuotas,
  kind: keyof typeof COUNTED,
  count: () => number,
): void {
  const c = COUNTED[kind];
  const limit = quotas[c.quota];
  if (limit === undefined) return;
  const n = count();
  if (n + 1 > limit) throw quotaRefusal(project, c.quota, `${n} of ${limit} ${c.noun}`, c.fix);
}

/** The project's DataObjects' sizes, with `obj` as it would be stored, must stay within dataObjectBytes. */
export function checkDataObjectBytes(
  project: string,
  quotas: ProjectQuotas,
  obj: DataObject,
  others: DataObject[],
): void {
  const limit = quotaBytes(quotas.dataObjectBytes);
  if (limit === undefined) return;
  const used = others.filter((o) => o.metadata.name !== obj.metadata.name).reduce((n, o) => n + o.spec.size, 0);
  if (used + obj.spec.size > limit)
    throw quotaRefusal(
      project,
      'dataObjectBytes',
      `${formatBytes(used)} of ${formatBytes(limit)} of DataObjects and ${obj.metadata.name} needs ${formatBytes(obj.spec.size)}`,
      'delete a DataObject',
    );
}

/** A tunnel session opens only while the project's open sessions are fewer than tunnelSessions. */
export function checkTunnelSessions(project: string, quotas: ProjectQuotas, open: number): void {
  const limit = quotas.tunnelSessions;
  if (limit === undefined || open < limit) return;
  throw quotaRefusal(
    project,
    'tunnelSessions',
    `${open} of ${limit} tunnel sessions open`,
    'end one of its sessions (an outpost exec, a logs --follow, a proxied connection, a kube watch)',
  );
}
