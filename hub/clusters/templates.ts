/**
 * @module The rules of a ClusterTemplate, checked inside its write transaction (docs/clusters.md,
 * "The rules at apply"): a version is immutable (its content as first applied is kept, other
 * content under the same `spec.version` is refused), its artifacts must verify and are referenced
 * per version (garbage collection keeps their blobs), and a template a Cluster uses is not deleted.
 * A global one (project `*`: hub/clusters/global-templates.ts) takes its artifacts' blobs into the
 * hub-wide scope, and is used by the Clusters of every project.
 */
import { OutpostError } from '../../core/errors.js';
import type { Cluster, ClusterTemplate } from '../../core/resources.js';
import type { HubBlobs } from '../blobs/index.js';
import type { ObjectChange, ObjectStore } from '../objects.js';
import type { HubState } from '../state/index.js';
import { checkTemplateArtifacts } from './artifacts.js';
import { clusterDeletionOf } from './deletion.js';
import { adoptGlobalBlob, GLOBAL_SCOPE, templateScope } from './global-templates.js';

export interface TemplateDeps {
  state: HubState;
  objects: ObjectStore;
  blobs: HubBlobs;
  /** The hub's release public key: what a template's artifacts must verify with. */
  releasePublicKeyPem: string;
}

export function templateChanged(d: TemplateDeps, c: ObjectChange): void {
  const { state, objects, blobs } = d;
  const after = c.after as ClusterTemplate | undefined;
  const hubWide = c.project === GLOBAL_SCOPE;
  if (!after) {
    // A cluster being deleted no longer needs it: its teardown orders take the versions the hub keeps.
    // A global one is used by the clusters of any project that name it with scope Global.
    const users = objects
      .list<Cluster>('Cluster', hubWide ? GLOBAL_SCOPE : c.project)
      .filter((x) => x.spec.template.name === c.name && templateScope(x) === c.project && !clusterDeletionOf(state, x))
      .map((x) => (hubWide ? `${x.metadata.project}/${x.metadata.name}` : x.metadata.name));
    if (users.length)
      throw new OutpostError(
        'conflict',
        `${hubWide ? 'global ' : ''}ClusterTemplate ${c.name} is used by Cluster ${users.join(', ')}: delete those clusters first${hubWide ? ' (or move them to another template)' : ''}`,
      );
    for (const v of state.clusters.templateVersions(c.project, c.name))
      blobs.setReferences(c.project, 'ClusterTemplate', `${c.name}@${v}`, []);
    return;
  }
  const spec = after.spec;
  const text = JSON.stringify(spec);
  const kept = state.clusters.templateVersion(c.project, c.name, spec.version);
  if (kept !== undefined && kept !== text)
    throw new OutpostError(
      'invalid',
      `spec.version: version ${spec.version} of ClusterTemplate ${c.name} was applied with other content, and a template version never changes: give the change a new spec.version`,
      { details: [{ path: 'spec.version', message: `${spec.version} is already applied with other content` }] },
    );
  const digests = checkTemplateArtifacts(d.releasePublicKeyPem, blobs, c.project, spec);
  if (hubWide) for (const digest of digests) adoptGlobalBlob(blobs, digest);
  blobs.setReferences(c.project, 'ClusterTemplate', `${c.name}@${spec.version}`, digests);
  state.clusters.putTemplateVersion(c.project, c.name, spec.version, text, Date.now());
}
