/**
 * @module A Cluster's deletion (docs/clusters.md, "Delete"), a finalizer of the object store
 * (hub/objects.ts `Finalizer`): a delete records it in `cluster_deletions` (when, by whom, forced
 * past the Placements or not) and the Cluster stays, phase `Deleting`; its nodes' orders become
 * teardown orders (`delete: true`, hub/clusters/index.ts `orderOf`), and each node reports
 * `Deleted` once it stopped everything and removed its data. When every host has (an edge
 * decommissioned counts, and so does a host that never got an order: no PKI was made for it), a
 * pass releases the hosts, drops the PKI and removes the Cluster, in one transaction that ends the
 * recorded deletion first: of hub replicas finishing it at once, one does (the row is locked).
 *
 * A forced delete of a cluster already `Deleting` ends it at once, without waiting for the nodes
 * that have not reported (an edge gone for good): their edges tear their node down when they next
 * connect (their order is withdrawn), or keep it if they never do. Writes to a Cluster being
 * deleted are refused; a delete of one is idempotent.
 */
import { ClusterNodeReport } from '../../core/cluster.js';
import type { Cluster, Resource } from '../../core/resources.js';
import { isOnline } from '../edges/phase.js';
import type { Finalizer, ObjectStore } from '../objects.js';
import type { ClusterDeletion, ClusterHost } from '../state/clusters.js';
import type { HubState } from '../state/index.js';

export interface DeletionDeps {
  state: HubState;
  objects: ObjectStore;
}

/** The deletion recorded for this Cluster (its uid), if any. */
export function clusterDeletionOf(state: Pick<HubState, 'clusters'>, c: Resource): ClusterDeletion | undefined {
  const d = state.clusters.deletion(c.metadata.project, c.metadata.name);
  return d && d.uid === c.metadata.uid ? d : undefined;
}

/** The hosts of a cluster being deleted that have not torn down yet. */
export function pendingTeardown(state: Pick<HubState, 'clusters'>, c: Cluster): ClusterHost[] {
  const { project, name, uid } = c.metadata;
  return state.clusters.hostsOf(project, name).filter((h) => {
    // Orders are written only once the node's PKI is made: a host without is one that never had one.
    if (state.clusters.pki(project, name, h.edge)?.uid !== uid) return false;
    const raw = state.clusters.nodeReport(h.edge);
    const r = raw ? ClusterNodeReport.safeParse(JSON.parse(raw.report)) : undefined;
    return !(r?.success && r.data.uid === uid && r.data.phase === 'Deleted');
  });
}

/** What a cluster being deleted waits for, in words (its status's message). */
export function teardownMessage(state: HubState, c: Cluster, now = Date.now()): string {
  const pending = pendingTeardown(state, c);
  if (!pending.length) return 'every node tore down: the cluster goes';
  const live = state.edges.liveness(c.metadata.project);
  const offline = pending.filter((h) => !isOnline(live.get(h.edge), now)).map((h) => h.edge);
  const words = [`tearing down: waiting for ${pending.map((h) => h.edge).join(', ')}`];
  if (offline.length)
    words.push(
      `${offline.join(', ')} offline: the cluster stays Deleting until ${offline.length === 1 ? 'it connects' : 'they connect'}; if gone for good, decommission ${offline.length === 1 ? 'it' : 'them'} (outpost edge decommission) or end the deletion with outpost delete cluster ${c.metadata.name} --force`,
    );
  return words.join('; ');
}

export class ClusterDeletions implements Finalizer {
  constructor(
    private readonly d: DeletionDeps,
    /** The orders change (teardown orders), after the commit. */
    private readonly changed: () => void,
  ) {}

  deleting(o: Resource): string | undefined {
    const del = clusterDeletionOf(this.d.state, o);
    if (!del) return undefined;
    const { name } = o.metadata;
    return `Cluster ${name} is being deleted (since ${new Date(del.at).toISOString()}, asked by ${del.by}): its nodes are tearing it down; apply it again once it is gone (outpost get clusters shows it until then), or end the deletion at once with outpost delete cluster ${name} --force`;
  }

  requested(o: Resource, opts: { actor?: string; force: boolean }): 'hold' | 'held' | 'remove' {
    const { state } = this.d;
    const { project, name, uid } = o.metadata;
    if (!uid) return 'remove';
    if (clusterDeletionOf(state, o)) {
      if (!opts.force) return 'held';
      const left = pendingTeardown(state, o as Cluster).map((h) => h.edge);
      state.events.record({
        project,
        kind: 'Cluster',
        name,
        reason: 'DeletionForced',
        message: `the deletion ends now${opts.actor ? ` (asked by ${opts.actor})` : ''}${left.length ? `, without waiting for ${left.join(', ')}: ${left.length === 1 ? 'its node is' : 'their nodes are'} torn down when ${left.length === 1 ? 'it connects' : 'they connect'} again` : ''}`,
      });
      return 'remove';
    }
    state.clusters.putDeletion(project, name, {
      uid,
      at: Date.now(),
      forced: opts.force,
      by: opts.actor ?? 'the hub',
    });
    state.events.record({
      project,
      kind: 'Cluster',
      name,
      reason: 'Deleting',
      message: `deletion asked${opts.actor ? ` by ${opts.actor}` : ''}${opts.force ? ' (forced past the Placements that target it)' : ''}: the nodes stop their components, remove their data and report; the cluster goes once every one has`,
    });
    this.changed();
    return 'hold';
  }

  /**
   * Removes each Cluster whose nodes all tore down, and forgets deletions whose Cluster is gone
   * (every replica runs it: `endDeletion` lets one through).
   */
  finish(): void {
    const { state, objects } = this.d;
    for (const del of state.clusters.deletions()) {
      const c = objects.get<Cluster>('Cluster', del.project, del.cluster);
      if (!c || c.metadata.uid !== del.uid) {
        state.transaction(() => state.clusters.endDeletion(del.project, del.cluster, del.uid));
        continue;
      }
      if (pendingTeardown(state, c).length) continue;
      state.transaction(
        () => {
          if (!state.clusters.endDeletion(del.project, del.cluster, del.uid)) return;
          objects.delete('Cluster', del.project, del.cluster, `the deletion asked by ${del.by}`, { finalize: true });
        },
        { immediate: true },
      );
    }
  }

  /** A host's edge is decommissioned: for a cluster being deleted, that counts as torn down. */
  edgeGone(edge: string): void {
    const { state, objects } = this.d;
    const h = state.clusters.holder(edge);
    if (!h) return;
    const c = objects.get<Cluster>('Cluster', h.project, h.cluster);
    if (!c || !clusterDeletionOf(state, c)) return;
    state.events.record({
      project: h.project,
      kind: 'Cluster',
      name: h.cluster,
      reason: 'EdgeDecommissioned',
      message: `${edge} was decommissioned: counted as torn down (what ran there stays on the host)`,
    });
  }
}
