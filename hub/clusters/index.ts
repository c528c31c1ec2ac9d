/**
 * @module Clusters at the sites, the hub's side (docs/clusters.md): the source of the `cluster`
 * kind of order (core/orders/cluster.ts) on the engine (hub/orders/engine.ts), and the rules of
 * ClusterTemplates and Clusters, checked inside each object's write transaction:
 *
 * - a template version is immutable, its artifacts must verify (hub/clusters/templates.ts); a
 *   global one serves every project (hub/clusters/global-templates.ts);
 * - a Cluster names an applied template version, and reserves its hosts
 *   (hub/clusters/cluster-rules.ts): an edge belongs to at most one cluster, and naming one
 *   another cluster holds is refused with the holder's name;
 *   workers chosen by selector are reserved as they appear (those held elsewhere are left out,
 *   and said so in the status); a worker no longer named stays reserved as `removing` until the
 *   control plane reports it drained and deleted from the cluster, then it is released;
 * - each node's PKI is made once (hub/clusters/node-pki.ts, asynchronously, by the pass), kept
 *   sealed with the hub's key, and sealed to the node's edge for its order; a worker's order waits
 *   for the address the control-plane node reports (where its API server is).
 *
 * A Cluster's deletion waits for its nodes to tear down (hub/clusters/deletion.ts): meanwhile each
 * node's order is a teardown order (`delete: true`).
 *
 * Every replica computes the same parts from the shared tables; the engine writes those of the
 * edges this process serves. The nodes' reports are projected into `cluster_nodes`, and each new
 * step a node reports becomes an event of the Cluster.
 */
import { ClusterNodeReport, DEFAULT_CLUSTER_PORTS, type ClusterNodeOrder, type NodeRole } from '../../core/cluster.js';
import { createLogger } from '../../core/logger.js';
import { CLUSTER_ORDER } from '../../core/orders/cluster.js';
import type { Cluster } from '../../core/resources.js';
import type { ClusterStatusView } from '../../core/api/views.js';
import type { EdgeReportState } from '../../core/mailbox.js';
import type { HubBlobs } from '../blobs/index.js';
import type { ObjectChange, ObjectStore } from '../objects.js';
import type { OrderEngine } from '../orders/engine.js';
import type { HubSecrets } from '../secrets.js';
import type { HubState } from '../state/index.js';
import { templateChanged } from './templates.js';
import { clusterChanged, templateSpecFor, templateSpecOf } from './cluster-rules.js';
import { projectNodeReport } from './node-reports.js';
import { nodeRole, REMOVING } from './roles.js';
import { upgradePlan, type NodeProgress, type UpgradePlan } from './upgrade-plan.js';
import { ensureClusterPki } from './node-pki.js';
import { clusterStatus } from './status.js';
import { GLOBAL_SCOPE, templateScope } from './global-templates.js';
import { heldElsewhere, reserveSelected } from './worker-selector.js';
import { ClusterDeletions, clusterDeletionOf, teardownMessage } from './deletion.js';

const log = createLogger('hub:clusters');

/** How often the pass runs without a change (workers by selector appear, PKI to make). */
export const CLUSTER_TICK_MS = 5_000;

export interface HubClustersDeps {
  state: HubState;
  objects: ObjectStore;
  engine: OrderEngine;
  blobs: HubBlobs;
  secrets: HubSecrets;
  /** The hub's release public key: what a template's artifacts must verify with. */
  releasePublicKeyPem: string;
  tickMs?: number;
}

export class HubClusters {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private parts = new Map<string, ClusterNodeOrder>();
  private readonly deletions: ClusterDeletions;

  constructor(private readonly d: HubClustersDeps) {
    const { state } = d;
    this.deletions = new ClusterDeletions(d, () => this.mark());
    d.objects.setFinalizer('Cluster', this.deletions);
    d.engine.register<ClusterNodeOrder>({
      kind: CLUSTER_ORDER,
      all: () => this.parts,
      of: (edge) => this.orderOf(edge),
      forgetEdge: (edge) => {
        this.deletions.edgeGone(edge);
        state.clusters.forgetEdge(edge);
        this.mark();
      },
      project: (edge, report) => this.project(edge, report),
      wake: () => this.mark(),
      onObjectChange: (c) => this.onObjectChange(c),
      onPeerObjectChange: (kind) => {
        if (kind === 'Cluster' || kind === 'ClusterTemplate' || kind === 'Edge') this.mark();
      },
      handshakeReads: {
        edge: (edge) => [state.readsAhead.edgeRuntime(edge)],
        project: (project) => [state.readsAhead.objects('Cluster', project)],
      },
    });
  }

  start(): void {
    this.timer = setInterval(() => this.mark(), this.d.tickMs ?? CLUSTER_TICK_MS);
    this.timer.unref();
    this.mark();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  /** Plans again soon (after the current write transaction commits). */
  mark(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = new Promise<void>((r) => setImmediate(r))
      .then(() => this.tick())
      .catch((err: unknown) => log.warn({ err }, 'cluster pass failed; it runs again on the next tick'))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.mark();
        }
      });
  }

  /** Resolves once a pass that starts after this call has run (tests, `cluster` routes). */
  async settle(): Promise<void> {
    await this.running;
    this.mark();
    await this.running;
  }

  /** One pass: reserve workers chosen by selector, make the PKI nodes lack, copy every node's order. */
  async tick(): Promise<void> {
    this.deletions.finish();
    for (const c of this.d.objects.list<Cluster>('Cluster', '*')) {
      // A cluster being deleted takes no new host and needs no new PKI.
      if (clusterDeletionOf(this.d.state, c)) continue;
      this.d.state.transaction(() => reserveSelected(this.d, c));
      const spec = templateSpecFor(this.d.state, c);
      if (spec) await ensureClusterPki(this.d, c, spec, nodeRole);
    }
    const parts = new Map<string, ClusterNodeOrder>();
    for (const h of this.d.state.clusters.allHosts()) {
      const order = this.orderOf(h.edge);
      if (order) parts.set(h.edge, order);
    }
    this.parts = parts;
    this.d.engine.copy(CLUSTER_ORDER.name);
  }

  /** The cluster an edge belongs to (shown on the edge). */
  ofEdge(edge: string): { cluster: string; role: string } | undefined {
    const h = this.d.state.clusters.holder(edge);
    return h ? { cluster: h.cluster, role: h.role } : undefined;
  }

  status(c: Cluster): ClusterStatusView {
    const del = clusterDeletionOf(this.d.state, c);
    if (del)
      return clusterStatus(this.d.state, c, [], undefined, {
        deletion: {
          at: new Date(del.at).toISOString(),
          by: del.by,
          forced: del.forced,
        },
        message: teardownMessage(this.d.state, c),
      });
    return clusterStatus(this.d.state, c, heldElsewhere(this.d, c), this.plan(c).paused);
  }

  /**
   * One edge's order now, from the tables (its handshake: hub/orders/engine.ts `writeEdge`):
   * undefined when it belongs to no cluster, or its PKI is not made yet. A cluster being deleted
   * gives each node a teardown order.
   */
  orderOf(edge: string): ClusterNodeOrder | undefined {
    const { state, objects, secrets } = this.d;
    const h = state.clusters.holder(edge);
    if (!h) return undefined;
    const c = objects.get<Cluster>('Cluster', h.project, h.cluster);
    if (!c) return undefined;
    const role = nodeRole(h.role);
    const teardown = !!clusterDeletionOf(state, c);
    // A worker joins once the control plane said where its API server is (its node's address).
    const apiServer = role === 'worker' && !teardown ? this.controlPlaneAddress(c) : undefined;
    if (role === 'worker' && !apiServer && !teardown) return undefined;
    const drain =
      role === 'control-plane' && !teardown
        ? state.clusters
            .hostsOf(h.project, h.cluster)
            .filter((x) => x.role === REMOVING)
            .map((x) => x.edge)
        : [];
    // A worker runs the version the upgrade's order gives it (upgrade-plan.ts), the rest the cluster's.
    const { scope, ...template } = this.orderTemplate(c, edge, role, teardown);
    const spec = templateSpecOf(this.d.state, scope, template.name, template.version);
    const pki = state.clusters.pki(h.project, h.cluster, edge);
    if (!spec || !pki || pki.uid !== c.metadata.uid) return undefined;
    let sealed: string;
    try {
      sealed = secrets.sealValueForEdge(edge, secrets.box.open(pki.sealed));
    } catch (err) {
      log.warn(
        { err, edge, cluster: h.cluster },
        'cluster node order not written: the PKI cannot be sealed to the edge',
      );
      return undefined;
    }
    return {
      cluster: h.cluster,
      uid: c.metadata.uid!,
      role,
      template,
      spec,
      ports: {
        ...DEFAULT_CLUSTER_PORTS,
        ...c.spec.ports,
        ...(role === 'worker' ? c.spec.workers?.ports : {}),
      },
      ...(apiServer ? { apiServer } : {}),
      ...(drain.length ? { drain } : {}),
      ...(teardown ? { delete: true as const } : {}),
      pki: sealed,
    };
  }

  /** The control-plane node's address as it reported it (this cluster's uid), with its edge's name. */
  private controlPlaneAddress(c: Cluster): { address: string; serverName: string } | undefined {
    const cp = c.spec.controlPlane.edges[0]!;
    const r = this.d.state.clusters.nodeReport(cp);
    if (!r) return undefined;
    const parsed = ClusterNodeReport.safeParse(JSON.parse(r.report));
    if (!parsed.success || parsed.data.uid !== c.metadata.uid || !parsed.data.address) return undefined;
    return { address: parsed.data.address, serverName: cp };
  }

  /**
   * The template version a node's order names, with its scope (a project, or the hub-wide one): a
   * worker runs the version the upgrade's plan gives it (upgrade-plan.ts), the rest the cluster's.
   */
  private orderTemplate(
    c: Cluster,
    edge: string,
    role: NodeRole,
    teardown = false,
  ): { name: string; version: string; scope: string } {
    const { name, version } = c.spec.template;
    const own = { name, version, scope: templateScope(c) };
    if (role !== 'worker' || teardown) return own;
    const v = this.plan(c).versions.get(edge);
    const at = v?.lastIndexOf('@') ?? -1;
    if (!v || at <= 0) return own;
    const t = { name: v.slice(0, at), version: v.slice(at + 1) };
    // The plan names versions without their scope: the cluster's own first, then the other one.
    for (const scope of new Set([own.scope, c.metadata.project, GLOBAL_SCOPE]))
      if (templateSpecOf(this.d.state, scope, t.name, t.version)) return { ...t, scope };
    return own;
  }

  /**
   * Whether `edge` may fetch blob `digest` of the hub-wide scope: its node's order names a global
   * template version with that artifact (hub/blobs/transfers.ts; global-templates.ts).
   */
  needsGlobalBlob(edge: string, digest: string): boolean {
    const h = this.d.state.clusters.holder(edge);
    const c = h && this.d.objects.get<Cluster>('Cluster', h.project, h.cluster);
    if (!h || !c || clusterDeletionOf(this.d.state, c)) return false;
    const t = this.orderTemplate(c, edge, nodeRole(h.role));
    if (t.scope !== GLOBAL_SCOPE) return false;
    const spec = templateSpecOf(this.d.state, GLOBAL_SCOPE, t.name, t.version);
    return !!spec && Object.values(spec.artifacts).some((a) => a.digest === digest);
  }

  /** The upgrade's plan for the cluster's nodes now (upgrade-plan.ts), from their reports. */
  plan(c: Cluster): UpgradePlan {
    const { project, name, uid } = c.metadata;
    const nodes: NodeProgress[] = this.d.state.clusters.hostsOf(project, name).map((h) => {
      const raw = this.d.state.clusters.nodeReport(h.edge);
      const parsed = raw ? ClusterNodeReport.safeParse(JSON.parse(raw.report)) : undefined;
      const r = parsed?.success && parsed.data.uid === uid ? parsed.data : undefined;
      return {
        edge: h.edge,
        role: nodeRole(h.role),
        ...(r ? { ordered: r.template, phase: r.phase, ready: !!r.node?.ready } : {}),
        ...(r?.runs ? { runs: r.runs } : {}),
      };
    });
    const want = `${c.spec.template.name}@${c.spec.template.version}`;
    return upgradePlan(want, nodes, { maxUnavailable: 1, failureThreshold: 1, ...c.spec.upgrade });
  }

  /** What the edge reports of its node, into `cluster_nodes` (node-reports.ts). */
  private project(edge: string, report: EdgeReportState): boolean {
    return projectNodeReport(this.d.state, edge, report.cluster, () => this.mark());
  }

  private onObjectChange(c: ObjectChange): void {
    if (c.kind === 'ClusterTemplate') templateChanged(this.d, c);
    else if (c.kind === 'Cluster') clusterChanged(this.d, c);
    // An edge's labels may bring it under a worker selector.
    else if (c.kind !== 'Edge') return;
    this.mark();
  }
}
