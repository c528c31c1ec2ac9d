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
 *    healthy (edge/clusters/health.ts);
 * 4. wait for the node to be Ready; then supervise: a component that died is started again, and
 *    every component's health and the node's readiness are reported when they change.
 *
 * Without an order, or with another cluster's, the node of any other cluster on this edge is torn
 * down: its pods deleted through its API (the kubelet stops their containers and networks), the
 * components stopped, what containerd left killed, the mounts under its directory released, its
 * bridge deleted and its directory removed. Each step is reported (the report's `cluster`: phase,
 * step, components, node, the last events), and the report is removed once nothing is left.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  ARTIFACT_NAMES,
  ClusterNodeOrder,
  PkiBundle,
  ROLE_COMPONENTS,
  type ClusterNodeReport,
  type ComponentName,
  type ComponentReport,
  type NodeEvent,
  type NodePhase,
} from '../../core/cluster.js';
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
import { stageArtifact } from './artifacts.js';
import {
  bridgeName,
  componentCommands,
  nodeFiles,
  nodeLayout,
  type ComponentCommand,
  type NodeLayout,
} from './configs.js';
import { componentHealth, deleteAllPods, nodeState } from './health.js';
import {
  alive,
  deleteLink,
  descendants,
  findComponent,
  killAll,
  readPid,
  startComponent,
  stopComponent,
  strays,
  unmountUnder,
} from './processes.js';

const log = createLogger('edge:clusters');
const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How often a running node is looked at (components alive, health, readiness). */
export const SUPERVISE_MS = 5_000;
/** How long a component has to become healthy once started. */
const HEALTHY_WITHIN_MS = 180_000;
/** How long the node has to become Ready once its kubelet is healthy. */
const READY_WITHIN_MS = 240_000;
/** After a failed pass, the next one (a spec change starts one sooner). */
const RETRY_MS = 30_000;
const EVENTS_KEPT = 20;

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

/** What a node directory keeps of the order that made it (no PKI: that is on disk, 0600). */
interface NodeState {
  order: Omit<ClusterNodeOrder, 'pki'>;
}

export class ClusterFollower implements SpecFollower {
  readonly kind = CLUSTER_ORDER.name;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly specId;
  private readonly reportId;
  /** The node's report as this process last wrote it. */
  private report: ClusterNodeReport | undefined;

  constructor(private readonly d: ClusterFollowerDeps) {
    this.specId = mailboxDocId(d.edge, 'spec');
    this.reportId = mailboxDocId(d.edge, 'report');
    const doc = d.store.get<ReportDoc>(this.reportId);
    this.report = doc ? readReportCluster(doc) : undefined;
  }

  check(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch((err: unknown) => log.warn({ err }, 'cluster pass failed; retried'))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.check();
        }
      });
  }

  connected(): void {
    this.check();
  }

  /** Stops following (the components keep running: the next agent finds them). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private later(ms: number): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => this.check(), ms);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    const spec = this.d.store.get<SpecDoc>(this.specId);
    const order = spec ? readSpecCluster(spec) : undefined;
    // Any other node on this edge (another cluster, or this name made again) goes first.
    for (const name of this.nodeDirs()) {
      const held = this.readState(name);
      if (order && name === order.cluster && held?.order.uid === order.uid) continue;
      await this.teardown(name, held);
    }
    if (!order) {
      if (this.report) this.writeReport(undefined);
      return;
    }
    if (this.report && this.report.uid !== order.uid) this.writeReport(undefined);
    try {
      await this.converge(order);
      this.later(this.d.superviseMs ?? SUPERVISE_MS);
    } catch (err) {
      const message = (err as Error).message.slice(0, 1000);
      log.error({ cluster: order.cluster, err: message }, 'cluster node failed; retried');
      this.update(order, { phase: 'Failed', message }, { step: 'Failed', message });
      this.later(RETRY_MS);
    }
  }

  private nodeDirs(): string[] {
    try {
      return fs.readdirSync(path.join(this.d.dataDir, 'clusters'));
    } catch {
      return [];
    }
  }

  private readState(cluster: string): NodeState | undefined {
    try {
      const raw = JSON.parse(fs.readFileSync(nodeLayout(this.d.dataDir, cluster).state, 'utf8')) as NodeState;
      const parsed = ClusterNodeOrder.omit({ pki: true }).safeParse(raw.order);
      return parsed.success ? { order: parsed.data } : undefined;
    } catch {
      return undefined;
    }
  }

  /** Brings the node to what the order says, one idempotent step after the other. */
  private async converge(o: ClusterNodeOrder): Promise<void> {
    const l = nodeLayout(this.d.dataDir, o.cluster);
    const { pki: _pki, ...kept } = o;
    fs.mkdirSync(l.root, { recursive: true, mode: 0o700 });
    writeIfChanged(l.state, JSON.stringify({ order: kept } satisfies NodeState), 0o600);
    const wasReady = this.report?.uid === o.uid && this.report.phase === 'Ready';

    // 1. Stage.
    const missing = ARTIFACT_NAMES.filter((n) => !fs.existsSync(l.artifact(n, o.spec.artifacts[n].digest)));
    if (missing.length) {
      this.update(o, { phase: 'Staging' }, { step: 'Staging', message: `fetching ${missing.join(', ')}` });
      for (const n of missing)
        await stageArtifact(
          {
            blobs: this.d.blobs,
            transfers: this.d.transfers,
            trust: { releaseKey: this.d.releaseKey, project: this.d.project },
          },
          n,
          o.spec.artifacts[n],
          l.artifact(n, o.spec.artifacts[n].digest),
        );
      this.update(
        o,
        { phase: 'Starting' },
        { step: 'Staged', message: `${ARTIFACT_NAMES.length} artifacts verified and installed` },
      );
    }

    // 2. Configure.
    if (!this.d.sealKey)
      throw new Error('this edge has no seal key (enrolled by an older agent): enroll it again to run a cluster node');
    const bundle = PkiBundle.parse(JSON.parse(openOnEdge(this.d.sealKey, o.pki)));
    let wrote = 0;
    fs.mkdirSync(l.pki, { recursive: true, mode: 0o700 });
    for (const [f, text] of Object.entries(bundle)) wrote += writeIfChanged(path.join(l.pki, f), text, 0o600) ? 1 : 0;
    for (const [f, text] of nodeFiles(o, this.d.edge, l)) wrote += writeIfChanged(f, text, 0o600) ? 1 : 0;
    if (wrote)
      this.update(
        o,
        { phase: wasReady ? 'Ready' : 'Starting' },
        { step: 'Configured', message: `${wrote} PKI and config files written` },
      );

    // 3. Start what is not running, in order, each healthy before the next.
    const components: Partial<Record<ComponentName, ComponentReport>> = { ...(this.sameUid(o)?.components ?? {}) };
    for (const c of componentCommands(o, this.d.edge, l)) {
      let pid = findComponent(l.run, c);
      if (pid === undefined) {
        // Another command line under the pid file (an older order's): that one goes first.
        await stopComponent(l.run, c.name, l.root);
        pid = startComponent(l.run, l.logs, c);
        const restarts = (components[c.name]?.restarts ?? -1) + 1;
        components[c.name] = { running: true, healthy: false, pid, restarts };
        this.update(
          o,
          { phase: wasReady ? 'NotReady' : 'Starting', components },
          { step: 'Started', message: `${c.name} started (pid ${pid})` },
        );
        await this.waitHealthy(o, l, c);
        if (c.name === 'containerd') await this.importPause(o, l);
        this.update(
          o,
          { components: { ...components, [c.name]: { ...components[c.name]!, healthy: true } } },
          { step: 'Healthy', message: `${c.name} is healthy` },
        );
      }
      components[c.name] = { running: true, healthy: true, pid, restarts: components[c.name]?.restarts ?? 0 };
    }

    // 4. The node Ready (the control plane sees it), then the report of every component.
    if (o.role === 'control-plane') {
      const deadline = Date.now() + READY_WITHIN_MS;
      let node = await nodeState(o, l, this.d.edge);
      while (!node.ready && Date.now() < deadline && !this.stopped) {
        await sleep(2_000);
        node = await nodeState(o, l, this.d.edge);
      }
      if (!node.ready)
        throw new Error(`node ${this.d.edge} is not Ready after ${READY_WITHIN_MS / 1000} s: ${node.reason}`);
      await this.supervise(o, l, node);
    }
  }

  /** One look at a running node: components alive and healthy, the node's readiness; reported when it changed. */
  private async supervise(
    o: ClusterNodeOrder,
    l: NodeLayout,
    node: { ready: boolean; kubeletVersion?: string; reason?: string },
  ): Promise<void> {
    const components: Partial<Record<ComponentName, ComponentReport>> = {};
    const prev = this.sameUid(o)?.components ?? {};
    for (const c of componentCommands(o, this.d.edge, l)) {
      const pid = findComponent(l.run, c);
      const h = pid !== undefined ? await componentHealth(c.name, o, l) : { healthy: false, message: 'not running' };
      components[c.name] = {
        running: pid !== undefined,
        healthy: h.healthy,
        ...(pid !== undefined ? { pid } : {}),
        restarts: prev[c.name]?.restarts ?? 0,
        ...(h.message ? { message: h.message } : {}),
      };
    }
    const allHealthy = Object.values(components).every((c) => c.healthy);
    const phase: NodePhase = node.ready && allHealthy ? 'Ready' : 'NotReady';
    const was = this.sameUid(o)?.phase;
    this.update(
      o,
      { phase, components, node, message: undefined },
      was !== phase
        ? phase === 'Ready'
          ? { step: 'NodeReady', message: `node ${this.d.edge} is Ready (kubelet ${node.kubeletVersion ?? '?'})` }
          : { step: 'NotReady', message: node.reason ?? 'a component is not healthy' }
        : undefined,
    );
  }

  private sameUid(o: ClusterNodeOrder): ClusterNodeReport | undefined {
    return this.report?.uid === o.uid ? this.report : undefined;
  }

  private async waitHealthy(o: ClusterNodeOrder, l: NodeLayout, c: ComponentCommand): Promise<void> {
    const deadline = Date.now() + HEALTHY_WITHIN_MS;
    let last = '';
    for (;;) {
      const pid = readPid(l.run, c.name);
      if (pid === undefined || !alive(pid))
        throw new Error(`${c.name} exited at start; its log ends: ${tail(path.join(l.logs, `${c.name}.log`))}`);
      const h = await componentHealth(c.name, o, l);
      if (h.healthy) return;
      last = h.message ?? '';
      if (Date.now() > deadline || this.stopped)
        throw new Error(
          `${c.name} is not healthy after ${HEALTHY_WITHIN_MS / 1000} s (${last}); its log ends: ${tail(path.join(l.logs, `${c.name}.log`))}`,
        );
      await sleep(500);
    }
  }

  /** Imports the pause image into containerd's k8s.io namespace, once (its name is the template's). */
  private async importPause(o: ClusterNodeOrder, l: NodeLayout): Promise<void> {
    const ctr = path.join(l.artifact('containerd', o.spec.artifacts.containerd.digest), 'ctr');
    const base = ['--address', path.join(l.run, 'containerd.sock'), '--namespace', 'k8s.io'];
    const { stdout } = await run(ctr, [...base, 'images', 'ls', '-q']);
    if (stdout.split('\n').includes(o.spec.pauseImage)) return;
    await run(ctr, [...base, 'images', 'import', l.artifact('pause', o.spec.artifacts.pause.digest)], {
      timeout: 120_000,
    });
    const after = (await run(ctr, [...base, 'images', 'ls', '-q'])).stdout.split('\n');
    if (!after.includes(o.spec.pauseImage))
      throw new Error(
        `the pause artifact holds ${after.filter(Boolean).join(', ') || 'no image'}, not ${o.spec.pauseImage} (the template's pauseImage)`,
      );
  }

  /** Stops and removes a node that no order asks for any more (see the module comment). */
  private async teardown(cluster: string, held: NodeState | undefined): Promise<void> {
    const l = nodeLayout(this.d.dataDir, cluster);
    const o = held?.order;
    log.info({ cluster }, 'cluster node no longer ordered: tearing it down');
    if (o && this.report?.uid === o.uid)
      this.update(
        { ...o, pki: '' },
        { phase: 'Deleting' },
        { step: 'Deleting', message: 'stopping the components and removing the node' },
      );
    if (o) {
      const cmds = componentCommands({ ...o, pki: '' }, this.d.edge, l);
      const running = (n: ComponentName) => {
        const c = cmds.find((x) => x.name === n);
        return c ? findComponent(l.run, c) !== undefined : false;
      };
      // The pods first, while the API server and the kubelet run: the kubelet stops their
      // containers and tears down their networks. Nothing recreates them once the
      // controller-manager and scheduler are stopped.
      if (o.role === 'control-plane' && running('kube-apiserver') && running('kubelet')) {
        await stopComponent(l.run, 'kube-controller-manager', l.root);
        await stopComponent(l.run, 'kube-scheduler', l.root);
        try {
          await deleteAllPods({ ...o, pki: '' }, l);
          const deadline = Date.now() + 60_000;
          while (shims(l.root).length && Date.now() < deadline) await sleep(500);
        } catch (err) {
          log.warn({ cluster, err }, 'deleting the pods through the API failed; their processes are killed instead');
        }
      }
    }
    for (const name of ['kubelet', 'kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd'] as const)
      await stopComponent(l.run, name, l.root);
    // What containerd started outlives it: its shims and their containers.
    const left = strays(l.root).filter((p) => !(cmdName(p) ?? '').endsWith('/containerd'));
    await killAll([...descendants(left), ...left]);
    await stopComponent(l.run, 'containerd', l.root);
    const rest = strays(l.root);
    await killAll([...descendants(rest), ...rest]);
    const stuck = await unmountUnder(l.root);
    if (o) await deleteLink(bridgeName(o.uid));
    if (stuck.length) throw new Error(`cannot unmount ${stuck.slice(0, 3).join(', ')}: the node's directory stays`);
    fs.rmSync(l.root, { recursive: true, force: true });
    if (o && this.report?.uid === o.uid) this.writeReport(undefined);
    log.info({ cluster }, 'cluster node removed');
  }

  /** Writes the report: `patch` over the current one, with `event` appended (when given). */
  private update(
    o: ClusterNodeOrder,
    patch: Partial<Pick<ClusterNodeReport, 'phase' | 'message' | 'components' | 'node'>>,
    event?: { step: string; message: string },
  ): void {
    const cur = this.sameUid(o);
    const now = Date.now();
    const events: NodeEvent[] = [...(cur?.events ?? [])];
    if (event) {
      const at = Math.max(now, (events.at(-1)?.at ?? 0) + 1);
      events.push({ at, step: event.step, message: event.message.slice(0, 512) });
      log.info({ cluster: o.cluster, step: event.step }, event.message);
    }
    const next: ClusterNodeReport = {
      cluster: o.cluster,
      uid: o.uid,
      role: o.role,
      template: `${o.template.name}@${o.template.version}`,
      phase: patch.phase ?? cur?.phase ?? 'Staging',
      step: event?.step ?? cur?.step ?? 'Reserved',
      components: patch.components ?? cur?.components ?? {},
      events: events.slice(-EVENTS_KEPT),
      at: cur?.at ?? now,
    };
    const message = 'message' in patch ? patch.message : event?.step === 'Failed' ? event.message : cur?.message;
    if (message) next.message = message.slice(0, 1024);
    const node = patch.node ?? cur?.node;
    if (node) next.node = node;
    const same = cur && JSON.stringify({ ...cur, at: 0 }) === JSON.stringify({ ...next, at: 0 });
    if (same) return;
    next.at = now;
    this.writeReport(next);
  }

  private writeReport(r: ClusterNodeReport | undefined): void {
    this.report = r;
    this.d.store.change<ReportDoc>(this.reportId, (d) => void setReportCluster(d, r));
  }
}

/** Writes a file when its text differs (0600 by default); true when it wrote. */
function writeIfChanged(file: string, text: string, mode: number): boolean {
  try {
    if (fs.readFileSync(file, 'utf8') === text) return false;
  } catch {
    /* absent */
  }
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, text, { mode });
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, file);
  return true;
}

function tail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').slice(-1500);
  } catch {
    return '(no log)';
  }
}

function cmdName(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
  } catch {
    return undefined;
  }
}

/** The containerd shims of a node (one per pod sandbox). */
function shims(root: string): number[] {
  return strays(root).filter((p) => (cmdName(p) ?? '').endsWith('containerd-shim-runc-v2'));
}
