/**
 * @module Global ClusterTemplates (docs/clusters.md, "Global templates"): a ClusterTemplate in the
 * hub-wide scope (`metadata.project: "*"`, GLOBAL_SCOPE) serves the Clusters of every project,
 * which name it with `spec.template.scope: Global`.
 *
 * - Only an admin for every project applies or deletes one (its artifacts run as root on the
 *   edges of every project that uses it); every token reads them (a project must see what it may
 *   use).
 * - Its artifacts are signed for every project (scope `*`) and their blobs are taken into the
 *   hub-wide scope at apply (an index row of the same bytes: the file is shared), so they outlive
 *   the project they were pushed in and garbage collection keeps them while a version names them.
 * - An edge fetches such a blob only while its own node's order names it (hub/blobs/transfers.ts
 *   asks `HubClusters.needsGlobalBlob`): no other edge, and no project's token, reads them.
 */
import type { BlobDigest } from '../../core/blobs.js';
import { OutpostError } from '../../core/errors.js';
import { GLOBAL_SCOPE, type Cluster, type Kind } from '../../core/resources.js';
import { ALL_PROJECTS, authorize, type Action, type Principal } from '../auth/roles.js';
import type { HubBlobs } from '../blobs/index.js';

export { GLOBAL_SCOPE };

/** Whether an object of `kind` in `project` is a global ClusterTemplate. */
export const isGlobalTemplate = (kind: string, project: string): boolean =>
  kind === 'ClusterTemplate' && project === GLOBAL_SCOPE;

/** The scope of the template a Cluster names: its project's, or the hub-wide one. */
export function templateScope(c: Pick<Cluster, 'metadata' | 'spec'>): string {
  return c.spec.template.scope === 'Global' ? GLOBAL_SCOPE : c.metadata.project;
}

/** The template a Cluster names, in words (`ClusterTemplate k8s version 1`, `global ...`). */
export function templateWords(ref: Cluster['spec']['template']): string {
  return `${ref.scope === 'Global' ? 'global ' : ''}ClusterTemplate ${ref.name} version ${ref.version}`;
}

/**
 * `authorize` for objects, with the rule of global templates: read by any token, written (applied,
 * changed, deleted) by an admin for every project only, refused with why and what to do instead.
 */
export function authorizeObject(p: Principal, action: Action, kind: Kind | string, project: string): void {
  if (!isGlobalTemplate(kind, project)) return authorize(p, action, project);
  if (action === 'read' || (p.project === ALL_PROJECTS && p.role === 'admin')) return;
  throw new OutpostError(
    'forbidden',
    `${p.role === 'viewer' ? 'a' : 'an'} ${p.role} token ${p.project === ALL_PROJECTS ? 'for every project' : `of project ${p.project}`} may not change global ClusterTemplates (metadata.project "*"): they serve the clusters of every project and their artifacts run as root on those edges, so only an admin token for every project (*), like the hub's first admin.token, may; ask its holder, or apply the template in your project (leave out metadata.project "*")`,
  );
}

/**
 * Takes a global template's artifact into the hub-wide scope (inside its write transaction, once
 * checked: hub/clusters/artifacts.ts found it in some project's store): the hub-wide scope gets an
 * index row of the same bytes, so the blob outlives that project and is kept while referenced.
 */
export function adoptGlobalBlob(blobs: HubBlobs, digest: BlobDigest): void {
  if (blobs.get(GLOBAL_SCOPE, digest)) return;
  const from = blobs.list('*').find((b) => b.digest === digest && b.project !== GLOBAL_SCOPE);
  if (from) blobs.adopt(GLOBAL_SCOPE, from);
}
