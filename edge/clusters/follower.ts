/**
 * @module Clusters at the sites, the edge's side (docs/clusters.md, "On the site"): the follower of
 * the `cluster` kind of order (core/orders/cluster.ts). With an order, a pass brings the node to
 * what it says, each step idempotent, so a pass after a kill -9 of the agent (or a reboot) starts
 * where the node is:
 *
 * 1. stage: fetch, verify and install every artifact (edge/clusters/artifacts.ts);
 * 2. configure: open the PKI sealed to this edge and write it (0600), then the configs
 *    (edge/clusters/configs.ts), each file only when its text differs;
 * 3. start: each component of the role in order (containerd, the pause image imported, etcd, the
 *    API server, controller-manager, scheduler, kubelet), each one not running already
 *    (edge/clusters/processes.ts finds them by pid file and command line), each waited for until
 *    healthy (edge/clusters/gate.ts). A component that runs the previous template version's
 *    command line is swapped (an upgrade): stopped, the new one started and held to the health
 *    gate; one that fails it rolls the node back to the previous version's binaries and configs,
 *    and that upgrade is not tried again until the order changes (node-state.ts);
 * 4. wait for the node to be Ready (a worker's CNI config first waits for the pod subnet the
 *    controller-manager gives its node); a control plane drains the workers its order removes
 *    (edge/clusters/drain.ts); then supervise: a component that died is started again, and every
 *    component's health and the node's readiness are reported when they change.
 *
 * A worker runs containerd and a kubelet only, its kubelet joined to the control plane's API server
 * (the order's `apiServer`) with the certificates the hub made for it; its own bridge and cgroup
 * root (edge/clusters/cgroups.ts) let several nodes share a host. Passes run one at a time
 * (edge/orders/one-pass.ts).
 *
 * Without an order, or with another cluster's, the node of any other cluster on this edge is torn
 * down (edge/clusters/teardown.ts). Each step is reported (the report's `cluster`: phase, step,
 * components, node, the last events), and the report is removed once nothing is left. A teardown
 * order (`delete`: the Cluster is being deleted) tears the node down the same way and reports
 * `Deleted` once nothing is left (the hub removes the Cluster when every node has), or why it
 * cannot (retried).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BlobDigest } from '../../core/blobs.js';
import { PkiBundle, type ClusterNodeOrder, type ClusterNodeReport } from '../../core/cluster.js';
import { mailboxDocId, type EdgeName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import {
  readReportCluster,
  readSpecCluster,
  setReportCluster,
  type ReportDoc,
  type SpecDoc,
} from '../../core/mailbox.js';
import { CLUSTER_ORDER } from '../../core/orders/cluster.js';
import { openOnEdge } from '../../core/secrets.js';
import type { ReplicaStore } from '../../sync/store.js';
import type { EdgeBlobStore } from '../blobs/store.js';
import type { EdgeTransfers } from '../blobs/transfers.js';
import type { SpecFollower } from '../orders/followers.js';
import { importPauseImage, removeUnusedArtifacts, stageMissing } from './artifacts.js';
import { nextReport, type ReportPatch } from './report.js';
import {
  componentCommands,
  nodeBridge,
  nodeFiles,
  nodeLayout,
  nodeCgroupRoot,
  type ComponentCommand,
  type NodeLayout,
} from './configs.js';
import { nodeState, type NodeSeen } from './health.js';
import { ensureCgroupRoot } from './cgroups.js';
import {
  keep,
  orderKey,
  readNodeState,
  writeIfChanged,
  writeNodeState,
  type KeptOrder,
  type NodeState,
} from './node-state.js';
import { findComponent, startComponent, stopComponent } from './processes.js';
import { hostAddress } from './node-ip.js';
import { waitHealthy, type Components } from './gate.js';
import { reportDrain, superviseNode, type Reporting } from './supervise.js';
import { OnePassAtATime, PassStopped } from '../orders/one-pass.js';
import { removeStaleBridges } from './stale-bridges.js';
import { tearDownOrdered, teardownNode } from './teardown.js';

const log = createLogger('edge:clusters');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How often a running node is looked at (components alive, health, readiness). */
export const SUPERVISE_MS = 5_000;
/** How long the node has to become Ready once its kubelet is healthy. */
const READY_WITHIN_MS = 240_000;
/** After a failed pass, the next one (a spec change starts one sooner). */
const RETRY_MS = 30_000;

export interface ClusterFollowerDeps {
  dataDir: string;
  edge: EdgeName;
  project: string;
  store: ReplicaStore;
  blobs: EdgeBlobStore;
  transfers: EdgeTransfers;
  /** The release key the edge pinned at enrollment (artifacts are signed with it). */
  releaseKey: string | undefined;
  /** The edge's private seal key (the node's PKI is sealed to it). */
  sealKey: string | undefined;
  superviseMs?: number;
}

/** An upgrade's health gate failed: the node went back to the previous version. */
class RolledBack extends Error {}

export class ClusterFollower implements SpecFollower {
  readonly kind = CLUSTER_ORDER.name;
  private readonly loop = new OnePassAtATime(
    () => this.pass(),
    (err: unknown) => log.warn({ err }, 'cluster pass failed; retried'),
  );
  private readonly specId;
  private readonly reportId;
  /** The node's report as this process last wrote it. */
  private report: ClusterNodeReport | undefined;
  /** The host's address the node uses (node-ip.ts), looked up at each pass. */
  private nodeIp = '';
  /** A worker's pod subnet, once its node has one (its CNI config is written from it). */
  private podSubnet: string | undefined;

  constructor(private readonly d: ClusterFollowerDeps) {
    this.specId = mailboxDocId(d.edge, 'spec');
    this.reportId = mailboxDocId(d.edge, 'report');
    const doc = d.store.get<ReportDoc>(this.reportId);
    this.report = doc ? readReportCluster(doc) : undefined;
  }

  check(): void {
    this.loop.check();
  }

  connected(): void {
    this.check();
  }

  /** Stops following (the components keep running: the next agent finds them). */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  private get stopped(): boolean {
    return this.loop.isStopped;
  }

  private later(ms: number): void {
    this.loop.later(ms);
  }

  private async pass(): Promise<void> {
    const spec = this.d.store.get<SpecDoc>(this.specId);
    const order = spec ? readSpecCluster(spec) : undefined;
    // Any other node on this edge (another cluster, or this name made again) goes first.
    for (const name of this.nodeDirs()) {
      const held = readNodeState(this.d.dataDir, name);
      if (order && name === order.cluster && held?.order.uid === order.uid) continue;
      log.info({ cluster: name }, 'cluster node no longer ordered: tearing it down');
      const o = held?.order;
      if (o && this.report?.uid === o.uid)
        this.update(
          o,
          { phase: 'Deleting' },
          { step: 'Deleting', message: 'stopping the components and removing the node' },
        );
      await teardownNode(this.d.dataDir, this.d.edge, name, o);
      if (o && this.report?.uid === o.uid) this.writeReport(undefined);
      log.info({ cluster: name }, 'cluster node removed');
    }
    if (!order) {
      if (this.report) this.writeReport(undefined);
      return;
    }
    if (this.report && this.report.uid !== order.uid) {
      this.writeReport(undefined);
      this.podSubnet = undefined;
    }
    if (order.delete) return this.tearDown(order);
    try {
      await this.converge(order);
      this.later(this.d.superviseMs ?? SUPERVISE_MS);
    } catch (err) {
      if (err instanceof PassStopped) throw err;
      const message = (err as Error).message.slice(0, 1000);
      if (err instanceof RolledBack) {
        this.later(this.d.superviseMs ?? SUPERVISE_MS);
        return;
      }
      log.error({ cluster: order.cluster, err: message }, 'cluster node failed; retried');
      this.update(order, { phase: 'Failed', message }, { step: 'Failed', message });
      this.later(RETRY_MS);
    }
  }

  /** A teardown order (teardown.ts `tearDownOrdered`); a failure is retried later. */
  private async tearDown(order: ClusterNodeOrder): Promise<void> {
    const o = keep(order);
    this.podSubnet = undefined;
    const done = await tearDownOrdered(this.d.dataDir, this.d.edge, o, {
      cur: this.sameUid(o),
      update: (patch, event) => this.update(o, patch, event),
    });
    if (!done) this.later(RETRY_MS);
  }

  private nodeDirs(): string[] {
    try {
      return fs.readdirSync(path.join(this.d.dataDir, 'clusters'));
    } catch {
      return [];
    }
  }

  /** Brings the node to what the order says (or keeps the previous version where its upgrade rolled back). */
  private async converge(order: ClusterNodeOrder): Promise<void> {
    const l = nodeLayout(this.d.dataDir, order.cluster);
    this.nodeIp = hostAddress();
    fs.mkdirSync(l.root, { recursive: true, mode: 0o700 });
    const held = readNodeState(this.d.dataDir, order.cluster);
    const state: NodeState = { ...held, order: keep(order) };
    if (held?.refused && held.refused.key !== orderKey(state.order)) delete state.refused;
    writeNodeState(this.d.dataDir, order.cluster, state);
    // Where this order's upgrade rolled back, the node keeps (and supervises) what ran before.
    const target: KeptOrder = state.refused && state.running ? state.running : state.order;
    const prev = state.running && orderKey(state.running) !== orderKey(target) ? state.running : undefined;
    const wasReady = this.sameUid(target)?.phase === 'Ready';

    // 1. Stage.
    const deps = {
      blobs: this.d.blobs,
      // Left when the agent stops (the fetch waits for the blob across reconnects).
      transfers: { fetch: (digest: BlobDigest) => this.loop.untilStopped(this.d.transfers.fetch(digest)) },
      trust: { releaseKey: this.d.releaseKey, project: this.d.project },
    };
    await stageMissing(deps, l, target, {
      staging: (missing) =>
        this.update(
          target,
          { phase: prev ? 'Upgrading' : 'Staging' },
          { step: 'Staging', message: `fetching ${missing.join(', ')}` },
        ),
      staged: (count) =>
        this.update(
          target,
          { phase: prev ? 'Upgrading' : 'Starting' },
          { step: 'Staged', message: `${count} artifacts verified and installed` },
        ),
    });

    // 2. Configure.
    if (!this.d.sealKey)
      throw new Error('this edge has no seal key (enrolled by an older agent): enroll it again to run a cluster node');
    const bundle = PkiBundle.parse(JSON.parse(openOnEdge(this.d.sealKey, order.pki)));
    let wrote = 0;
    fs.mkdirSync(l.pki, { recursive: true, mode: 0o700 });
    for (const [f, text] of Object.entries(bundle)) wrote += writeIfChanged(path.join(l.pki, f), text, 0o600) ? 1 : 0;
    wrote += this.writeConfigs(target, l);
    await removeStaleBridges(target.spec.network.podCIDR, nodeBridge(target, this.d.edge));
    ensureCgroupRoot(nodeCgroupRoot(target, this.d.edge));
    if (wrote) this.update(target, {}, { step: 'Configured', message: `${wrote} PKI and config files written` });

    // 3. Start what is not running, in order, each healthy before the next; swap what runs the previous version.
    const components: Components = { ...(this.sameUid(target)?.components ?? {}) };
    const before = prev ? componentCommands(prev, this.d.edge, l, this.nodeIp) : [];
    const swapped: { from: ComponentCommand; to: ComponentCommand }[] = [];
    for (const c of componentCommands(target, this.d.edge, l, this.nodeIp)) {
      let pid = findComponent(l.run, c);
      if (pid === undefined) {
        const old = before.find((b) => b.name === c.name && findComponent(l.run, b) !== undefined);
        if (old) swapped.push({ from: old, to: c });
        // Another command line under the pid file (the previous version's): that one goes first.
        await stopComponent(l.run, c.name, l.root);
        pid = startComponent(l.run, l.logs, c);
        // A swap is no restart; a start after the first is.
        const restarts = (components[c.name]?.restarts ?? (old ? 0 : -1)) + (old ? 0 : 1);
        components[c.name] = { running: true, healthy: false, pid, restarts };
        this.update(
          target,
          { phase: old ? 'Upgrading' : wasReady ? 'NotReady' : 'Starting', components },
          {
            step: old ? 'Swapped' : 'Started',
            message: `${c.name} ${old ? `swapped to ${target.template.name}@${target.template.version}` : 'started'} (pid ${pid})`,
          },
        );
        try {
          await waitHealthy(target, l, c, () => this.stopped);
        } catch (err) {
          if (!prev || !swapped.length) throw err;
          await this.rollBack(order, state, prev, swapped, l, (err as Error).message);
          throw new RolledBack((err as Error).message);
        }
        if (c.name === 'containerd') await importPauseImage(target, l);
        components[c.name] = { ...components[c.name]!, healthy: true };
        this.update(target, { components }, { step: 'Healthy', message: `${c.name} is healthy` });
      }
      components[c.name] = { running: true, healthy: true, pid, restarts: components[c.name]?.restarts ?? 0 };
    }

    // 4. The node Ready (the control plane sees it), then the report of every component.
    {
      const deadline = Date.now() + READY_WITHIN_MS;
      let node = await this.nodeNow(target, l);
      while (!node.ready && Date.now() < deadline && !this.stopped) {
        await sleep(2_000);
        node = await this.nodeNow(target, l);
      }
      if (!node.ready) {
        const why = `node ${this.d.edge} is not Ready after ${READY_WITHIN_MS / 1000} s: ${node.reason}`;
        if (prev && swapped.length) {
          await this.rollBack(order, state, prev, swapped, l, why);
          throw new RolledBack(why);
        }
        throw new Error(why);
      }
      if (!state.refused && (!state.running || orderKey(state.running) !== orderKey(target))) {
        const from = state.running;
        state.running = target;
        writeNodeState(this.d.dataDir, order.cluster, state);
        if (from) {
          removeUnusedArtifacts(l, target);
          this.update(
            target,
            {},
            {
              step: 'Upgraded',
              message: `upgraded from ${from.template.name}@${from.template.version} to ${target.template.name}@${target.template.version}`,
            },
          );
        }
      }
      if (target.role === 'control-plane') await reportDrain(order, target, l, this.reporting(target));
      await superviseNode(target, l, this.d.edge, this.nodeIp, node, state.refused?.reason, this.reporting(target));
    }
  }

  /** The configs of `o` (rewritten when a rollback goes back to the previous version's). */
  private writeConfigs(o: KeptOrder, l: NodeLayout): number {
    let wrote = 0;
    for (const [f, text] of nodeFiles(o, this.d.edge, l, this.nodeIp, this.podSubnet))
      wrote += writeIfChanged(f, text, 0o600) ? 1 : 0;
    return wrote;
  }

  /**
   * The node as the API server sees it. A worker's CNI config waits for the pod subnet the
   * controller-manager gives its node (until then the kubelet reports the network not ready).
   */
  private async nodeNow(o: KeptOrder, l: NodeLayout): Promise<NodeSeen> {
    const node = await nodeState(o, l, this.d.edge);
    if (o.role === 'worker' && node.podCIDR && node.podCIDR !== this.podSubnet) {
      this.podSubnet = node.podCIDR;
      if (this.writeConfigs(o, l))
        this.update(o, {}, { step: 'Configured', message: `pod network ${node.podCIDR} configured` });
    }
    return node;
  }

  /** Puts back the previous version's components (in reverse) and configs; the upgrade is not tried again. */
  private async rollBack(
    order: ClusterNodeOrder,
    state: NodeState,
    prev: KeptOrder,
    swapped: { from: ComponentCommand; to: ComponentCommand }[],
    l: NodeLayout,
    why: string,
  ): Promise<void> {
    const to = `${order.template.name}@${order.template.version}`;
    log.error({ cluster: order.cluster, to, why }, 'upgrade failed its health gate: rolling back');
    this.writeConfigs(prev, l);
    for (const s of [...swapped].reverse()) {
      await stopComponent(l.run, s.to.name, l.root);
      startComponent(l.run, l.logs, s.from);
      await waitHealthy(prev, l, s.from, () => this.stopped);
    }
    const reason =
      `the upgrade to ${to} was rolled back to ${prev.template.name}@${prev.template.version}: ${why}`.slice(0, 1000);
    state.refused = { key: orderKey(state.order), reason };
    writeNodeState(this.d.dataDir, order.cluster, state);
    this.update(prev, { phase: 'RolledBack', message: reason }, { step: 'RolledBack', message: reason });
  }

  /** The node's report and how to change it, for the supervision's steps (supervise.ts). */
  private reporting(o: KeptOrder): Reporting {
    return { cur: this.sameUid(o), update: (patch, event) => this.update(o, patch, event) };
  }

  private sameUid(o: { uid: string }): ClusterNodeReport | undefined {
    return this.report?.uid === o.uid ? this.report : undefined;
  }

  /**
   * Writes the report: `patch` over the current one, with `event` appended (when given). `o` is
   * the version the node is brought to or keeps; the report's `template` is always the order's.
   */
  private update(o: KeptOrder, patch: ReportPatch, event?: { step: string; message: string }): void {
    if (event) log.info({ cluster: o.cluster, step: event.step }, event.message);
    const ordered = readNodeState(this.d.dataDir, o.cluster)?.order ?? o;
    const next = nextReport(this.sameUid(o), o, `${ordered.template.name}@${ordered.template.version}`, patch, event);
    if (next) this.writeReport(next);
  }

  private writeReport(r: ClusterNodeReport | undefined): void {
    this.report = r;
    this.d.store.change<ReportDoc>(this.reportId, (d) => void setReportCluster(d, r));
  }
}
