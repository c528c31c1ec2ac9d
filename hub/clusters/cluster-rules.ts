/**
 * @module The rules of a Cluster, checked inside its write transaction (docs/clusters.md, "The rules
 * at apply"): it names an applied template version (its project's or a global one), an upgrade
 * keeps the network and the control-plane edge, and it reserves its hosts: an edge belongs to at
 * most one cluster, and naming one another cluster holds is refused with the holder's name;
 * workers chosen by selector are reserved as they appear; a worker no longer named stays reserved
 * as `removing` until the control plane drained it. Its removal (the end of its deletion:
 * deletion.ts) releases its hosts and drops its PKI.
 */
import { ClusterTemplateSpec, type NodeRole } from '../../core/cluster.js';
import { OutpostError } from '../../core/errors.js';
import type { Cluster, Edge } from '../../core/resources.js';
import type { ObjectChange, ObjectStore } from '../objects.js';
import type { HubState } from '../state/index.js';
import { clusterDeletionOf } from './deletion.js';
import { templateScope, templateWords } from './global-templates.js';
import { REMOVING } from './roles.js';
import { reserveSelected, selectedWorkers } from './worker-selector.js';

interface RulesDeps {
  state: HubState;
  objects: ObjectStore;
}

interface Host {
  edge: string;
  role: NodeRole;
}

/** A template version's content as first applied, in its scope (a project, or `*`). */
export function templateSpecOf(
  state: Pick<HubState, 'clusters'>,
  scope: string,
  name: string,
  version: string,
): ClusterTemplateSpec | undefined {
  const text = state.clusters.templateVersion(scope, name, version);
  return text ? ClusterTemplateSpec.parse(JSON.parse(text)) : undefined;
}

/** The content of the template version a Cluster names. */
export function templateSpecFor(state: Pick<HubState, 'clusters'>, c: Cluster): ClusterTemplateSpec | undefined {
  return templateSpecOf(state, templateScope(c), c.spec.template.name, c.spec.template.version);
}

export function clusterChanged(d: RulesDeps, c: ObjectChange): void {
  const { state } = d;
  const after = c.after as Cluster | undefined;
  const before = c.before as Cluster | undefined;
  if (!after) {
    // The last step of a deletion (deletion.ts): every node tore down, or the deletion was forced.
    const hosts = state.clusters.hostsOf(c.project, c.name).map((h) => h.edge);
    state.clusters.release(c.project, c.name);
    state.clusters.dropPki(c.project, c.name);
    if (before?.metadata.uid) state.clusters.endDeletion(c.project, c.name, before.metadata.uid);
    state.events.record({
      project: c.project,
      kind: 'Cluster',
      name: c.name,
      reason: 'HostsReleased',
      message: `${hosts.length ? `hosts ${hosts.join(', ')} released` : 'no host held'}, the cluster's PKI dropped`,
    });
    return;
  }
  // The deletion recorded (the object store's hold): nothing else changed; writes are refused meanwhile.
  if (clusterDeletionOf(state, after)) return;
  const { template } = after.spec;
  if (!state.clusters.templateVersion(templateScope(after), template.name, template.version))
    throw new OutpostError(
      'invalid',
      `spec.template: ${templateWords(template)} was never applied ${template.scope === 'Global' ? 'globally (metadata.project "*")' : `in project ${c.project}`}: apply it first (outpost apply -f TEMPLATE.yaml)${template.scope === 'Global' ? '' : ', or name a global template with scope: Global'}`,
      { details: [{ path: 'spec.template', message: 'no such template version' }] },
    );
  // The nodes know a version by name and version: the same ones in the other scope are not told apart.
  if (
    before &&
    before.spec.template.name === template.name &&
    before.spec.template.version === template.version &&
    templateScope(before) !== templateScope(after)
  )
    throw new OutpostError(
      'invalid',
      `spec.template: ${template.name}@${template.version} names a template in another scope than the one the cluster runs under the same name and version: name a version (or template) of another name or version to move the cluster to it`,
    );
  if (before && JSON.stringify(before.spec.template) !== JSON.stringify(template)) {
    // An upgrade: the nodes swap their components; the PKI (made for the network) stays.
    const was = templateSpecFor(state, before);
    const next = templateSpecFor(state, after);
    if (was && next && JSON.stringify(was.network) !== JSON.stringify(next.network))
      throw new OutpostError(
        'invalid',
        `spec.template: ${template.name}@${template.version} has another network than ${before.spec.template.name}@${before.spec.template.version}: changing a cluster's network is not supported; keep spec.network in the new version`,
      );
    state.events.record({
      project: c.project,
      kind: 'Cluster',
      name: c.name,
      reason: 'Upgrading',
      message: `from ${before.spec.template.name}@${before.spec.template.version} to ${template.name}@${template.version}`,
    });
  }
  if (before && before.spec.controlPlane.edges[0] !== after.spec.controlPlane.edges[0])
    throw new OutpostError(
      'invalid',
      `spec.controlPlane.edges: moving Cluster ${c.name}'s control plane to another edge is not supported: delete the cluster and create it again`,
    );
  const named: Host[] = [
    { edge: after.spec.controlPlane.edges[0]!, role: 'control-plane' },
    ...(after.spec.workers?.edges ?? []).map((edge) => ({ edge, role: 'worker' as const })),
  ];
  const twice = named.find((h, i) => named.findIndex((x) => x.edge === h.edge) !== i);
  if (twice) throw new OutpostError('invalid', `edge ${twice.edge} is named twice: a node has one role`);
  for (const h of named) {
    if (!d.objects.get<Edge>('Edge', c.project, h.edge))
      throw new OutpostError(
        'invalid',
        `edge ${h.edge} is not an edge of project ${c.project}: enroll it first, or name another`,
      );
    const held = state.clusters.holder(h.edge);
    if (held && (held.project !== c.project || held.cluster !== c.name)) {
      const holder = d.objects.get<Cluster>('Cluster', held.project, held.cluster);
      const going = holder && clusterDeletionOf(state, holder);
      throw new OutpostError(
        'conflict',
        `edge ${h.edge} belongs to cluster ${held.project}/${held.cluster} (an edge belongs to at most one cluster)${going ? ', which is being deleted: wait until its nodes tore down and it is gone' : ': remove it there first, or name another edge'}`,
      );
    }
  }
  // Hosts it no longer names (or selects): a worker whose node reported is drained by the control
  // plane first (still reserved, as `removing`); any other is released, its node stops and cleans up.
  const wanted = new Set([...named.map((h) => h.edge), ...selectedWorkers(d, after)]);
  for (const h of state.clusters.hostsOf(c.project, c.name)) {
    if (wanted.has(h.edge) || h.role === REMOVING) continue;
    if (h.role === 'worker' && state.clusters.nodeReport(h.edge)?.cluster === c.name) {
      state.clusters.reserve({ ...h, role: REMOVING });
      state.events.record({
        project: c.project,
        kind: 'Cluster',
        name: c.name,
        reason: 'Scaling',
        message: `worker ${h.edge} is removed: cordoned and drained (PodDisruptionBudgets respected), then deleted from the cluster`,
      });
      continue;
    }
    state.clusters.release(c.project, c.name, h.edge);
    state.clusters.dropPki(c.project, c.name, h.edge);
  }
  for (const h of named) state.clusters.reserve({ ...h, project: c.project, cluster: c.name });
  reserveSelected(d, after);
}
