/**
 * @module Each cluster's PKI as the hub keeps it (docs/clusters.md, "PKI"): the CA made once per
 * cluster uid and each host's bundle (hub/clusters/pki.ts makes the certificates), sealed with the
 * hub's key in `cluster_pki`. Certificates are made outside any transaction (they take a while);
 * the first kept wins when hub replicas race.
 */
import { PkiBundle, type ClusterTemplateSpec, type NodeRole } from '../../core/cluster.js';
import { createLogger } from '../../core/logger.js';
import type { Cluster } from '../../core/resources.js';
import type { ObjectStore } from '../objects.js';
import type { HubSecrets } from '../secrets.js';
import type { HubState } from '../state/index.js';
import { createClusterCa, nodeBundle, type ClusterCa } from './pki.js';

const log = createLogger('hub:clusters');

export interface PkiDeps {
  state: HubState;
  objects: ObjectStore;
  secrets: HubSecrets;
}

/** Makes the CA and each host's bundle the cluster lacks (certificates are made asynchronously). */
export async function ensureClusterPki(
  d: PkiDeps,
  c: Cluster,
  spec: ClusterTemplateSpec,
  roleOf: (hostRole: string) => NodeRole,
): Promise<void> {
  const { state, secrets } = d;
  const { project, name, uid } = c.metadata;
  if (!uid) return;
  let ca: ClusterCa | undefined;
  const stored = state.clusters.pki(project, name, '');
  if (stored && stored.uid === uid) ca = JSON.parse(secrets.box.open(stored.sealed)) as ClusterCa;
  for (const h of state.clusters.hostsOf(project, name)) {
    const have = state.clusters.pki(project, name, h.edge);
    if (have && have.uid === uid) continue;
    if (!ca) {
      const made = await createClusterCa(name);
      // Another replica may have made one meanwhile: the first kept is the cluster's.
      const kept = state.transaction(() =>
        state.clusters.putPki(project, name, '', uid, secrets.box.seal(JSON.stringify(made))),
      );
      ca = JSON.parse(secrets.box.open(kept.sealed)) as ClusterCa;
    }
    const bundle = PkiBundle.parse(await nodeBundle(ca, h.edge, roleOf(h.role), spec.network.serviceCIDR));
    // The cluster may have been deleted while the certificates were made.
    if (d.objects.get<Cluster>('Cluster', project, name)?.metadata.uid !== uid) return;
    state.transaction(() =>
      state.clusters.putPki(project, name, h.edge, uid, secrets.box.seal(JSON.stringify(bundle))),
    );
    log.info({ project, cluster: name, edge: h.edge, role: h.role }, 'cluster node PKI made');
  }
}
