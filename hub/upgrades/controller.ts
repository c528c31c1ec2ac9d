/**
 * @module The AgentUpgrade controller (docs/operations.md, "Upgrading edges from the hub"): for
 * each AgentUpgrade it selects edges, asks the rollout planner (core/rollout.ts) which may start
 * now (`maxUnavailable` at a time, pausing at `failureThreshold`), and records the upgrade order
 * of those edges (table `agent_upgrade_orders`, hub/state/agent-upgrades.ts), which is copied into
 * their spec documents (core/mailbox.ts `setSpecAgentUpgrade`, the one writer). The edges do the
 * rest (edge/upgrade/orders.ts) and report their progress in their report document, projected into
 * `agent_upgrade_progress` at report time: the orders and that projection are all the planner
 * reads back.
 *
 * Hub replicas (docs/architecture.md, "Hub replicas"): only the planning replica (the leader)
 * plans, from the shared tables, so `maxUnavailable` counts the whole fleet; each replica copies
 * the orders of the edges it serves into their documents (`holds`), an edge that connects before
 * its handshake is answered (`writeEdge`).
 *
 * An edge offline when the upgrade is applied gets its order written like any other (it counts
 * toward `maxUnavailable` while it is away) and upgrades when it returns and syncs. An edge
 * selected by several AgentUpgrades is held by the newest that has not finished there and would
 * not downgrade it (hub/upgrades/claims.ts); the planner records how each upgrade's part on each
 * edge ended (`agent_upgrade_outcomes`): history, shown in its status, never ordered again.
 *
 * At apply (inside the object's write transaction) the object is checked (hub/upgrades/check.ts),
 * and the binary's blob gets the reference `AgentUpgrade/NAME`, so garbage collection keeps it
 * while the object exists.
 */
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { parseDuration } from '../../core/durations.js';
import type { BlobDigest } from '../../core/blobs.js';
import { checkAgentUpgrade } from './check.js';
import {
  readReportAgentUpgrade,
  readSpecAgentUpgrade,
  putSpecAgentUpgrade,
  type AgentUpgradeOrder,
  type AgentUpgradeProgress,
  type ReportDoc,
  type SpecDoc,
} from '../../core/mailbox.js';
import type { AgentUpgrade, Edge } from '../../core/resources.js';
import type { ReplicaStore } from '../../sync/store.js';
import type { ObjectChange, ObjectStore } from '../objects.js';
import { edgesReached, schedulableEdges } from '../edges/phase.js';
import type { AgentUpgradeOutcome, AgentUpgradeRollouts } from '../state/agent-upgrades.js';
import type { HubState } from '../state/index.js';
import type { HubBlobs } from '../blobs/index.js';
import type { OrderEngine } from '../orders/engine.js';
import { AGENT_UPGRADE_ORDER } from '../../core/orders/kinds.js';
import { computeClaims } from './claims.js';
import { deleteEffects } from './delete-effects.js';
import { recordOutcomes, supersede } from './history.js';
import { planUpgrade, type ProjectView } from './plan.js';
import { upgradeStatus, type AgentUpgradeStatus, type PlannedEdge } from './status.js';

export type { AgentUpgradeEdgeStatus, AgentUpgradeStatus } from './status.js';

const log = createLogger('hub:upgrades');

/** How often rollouts are planned again: edges' reports and connections change without an object change. */
export const UPGRADE_TICK_MS = 2_000;

/** Whether an order given for the same upgrade and digest differs from the object's order now. */
const orderChanged = (a: AgentUpgradeOrder, b: AgentUpgradeOrder) =>
  a.deadlineMs !== b.deadlineMs ||
  !!a.allowDowngrade !== !!b.allowDowngrade ||
  a.release.signature !== b.release.signature;

/** What the planner knows of every edge: its recorded order and its reported progress. */
interface Known {
  orders: Map<string, AgentUpgradeOrder>;
  progress: Map<string, AgentUpgradeProgress>;
  /** Edges without a progress row, looked up in their report document once per pass (`progress`). */
  unprojected: Map<string, AgentUpgradeProgress | undefined>;
}

export class AgentUpgradeController {
  private timer: NodeJS.Timeout | undefined;
  private pending: Promise<void> | undefined;
  /** Hub replicas on PostgreSQL: whether this process plans. A SQLite hub plans. */
  leading: () => boolean = () => true;

  constructor(
    private readonly state: HubState,
    private readonly objects: ObjectStore,
    /** Read for orders and reports from before the tables existed (a SQLite hub only). */
    private readonly store: ReplicaStore,
    /** Copies the recorded orders into the spec documents (hub/orders/engine.ts, kind `agent-upgrade`). */
    private readonly engine: OrderEngine,
    private readonly blobs: HubBlobs,
    private readonly releaseKeyPem: string,
    private readonly rollouts: AgentUpgradeRollouts,
    private readonly tickMs = UPGRADE_TICK_MS,
  ) {
    engine.register<AgentUpgradeOrder>({
      kind: AGENT_UPGRADE_ORDER,
      all: () => this.rollouts.orders(),
      of: (edge) => this.rollouts.order(edge),
      // A SQLite hub's documents may hold an order from before the table (specOrder): kept.
      withdrawAtHandshake: () => this.replicated,
      forgetEdge: (edge) => this.rollouts.forgetEdge(edge),
      // The rollout planner counts the edge's progress, whichever replica plans.
      project: (edge, report) => {
        this.rollouts.projectProgress(edge, report.agentUpgrade);
        return report.agentUpgrade !== undefined;
      },
      wake: () => this.mark(),
      // Checked inside the object's write transaction (throwing refuses it).
      onObjectChange: (c) => this.onObjectChange(c),
      onPeerObjectChange: (kind) => {
        if (kind === 'AgentUpgrade') this.mark();
      },
      handshakeReads: { edge: (edge) => this.rollouts.handshakeReads(edge) },
    });
  }

  /** With replicas the tables are the whole record (hub/orders/engine.ts `holds` is set then). */
  private get replicated(): boolean {
    return !!this.engine.holds;
  }

  start(): void {
    this.timer = setInterval(() => this.mark(), this.tickMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Plans again soon (after the current write transaction commits). */
  mark(): void {
    if (this.pending) return;
    this.pending = new Promise<void>((resolve) =>
      setImmediate(() => {
        this.pending = undefined;
        try {
          this.tick();
        } catch (err) {
          log.warn({ err }, 'agent upgrade pass failed; it runs again on the next tick');
        }
        resolve();
      }),
    );
  }

  /**
   * Called inside the object write transaction: checks a new or changed AgentUpgrade (throwing
   * refuses the write) and keeps its blob reference; on delete, drops the reference, its history
   * and the orders it wrote. A new release (digest) starts over: its history goes.
   */
  onObjectChange(c: ObjectChange): void {
    if (c.kind !== 'AgentUpgrade') return;
    const after = c.after as AgentUpgrade | undefined;
    if (after) checkAgentUpgrade(after, this.releaseKeyPem, this.blobs);
    this.blobs.setReferences(c.project, 'AgentUpgrade', c.name, after ? [after.spec.release.digest as BlobDigest] : []);
    const before = c.before as AgentUpgrade | undefined;
    if (before && before.spec.release.digest !== after?.spec.release.digest)
      this.rollouts.forgetUpgrade(c.project, c.name);
    if (before) {
      // Edges this upgrade no longer selects (or all, when it is gone) lose its order, after commit.
      const keep = new Set(after ? this.selected(after) : []);
      const drop = this.selected(before).filter((e) => !keep.has(e));
      if (drop.length)
        setImmediate(() => {
          // After the commit, in a callback of its own: a throw here would end the hub.
          try {
            this.clearOrders(c.name, drop);
          } catch (err) {
            log.error(
              { err, upgrade: c.name, edges: drop },
              'could not withdraw the order from the edges it no longer selects',
            );
          }
        });
    }
    this.mark();
  }

  private selected(u: AgentUpgrade, live = this.state.edges.liveness(u.metadata.project)): string[] {
    return edgesReached(schedulableEdges(this.objects.list<Edge>('Edge', u.metadata.project), live), u.spec);
  }

  /** A project's upgrades (all of them, or `upgrades`) and who holds which edge (hub/upgrades/claims.ts). */
  private view(project: string, known: Known, upgrades?: AgentUpgrade[]): ProjectView {
    upgrades ??= this.objects.list<AgentUpgrade>('AgentUpgrade', project);
    const live = this.state.edges.liveness(project);
    const edges = schedulableEdges(this.objects.list<Edge>('Edge', project), live);
    const selected = new Map(upgrades.map((u) => [u.metadata.name, edgesReached(edges, u.spec)] as const));
    const versions = this.rollouts.agentVersions(project);
    const outcomes = this.rollouts.outcomes(project);
    const progress = new Map([...selected.values()].flat().map((e) => [e, this.progressOf(e, known)] as const));
    for (const [e, p] of progress) if (!p) progress.delete(e);
    const claims = computeClaims({
      upgrades,
      selected,
      outcomes,
      progress: progress as Map<string, AgentUpgradeProgress>,
      versions,
      now: Date.now(),
    });
    return { upgrades, selected, live, versions, outcomes, claims };
  }

  private progressOf(edge: string, known: Known): AgentUpgradeProgress | undefined {
    const p = known.progress.get(edge);
    if (p || this.replicated) return p;
    if (!known.unprojected.has(edge)) known.unprojected.set(edge, this.progress(edge));
    return known.unprojected.get(edge);
  }

  private order(u: AgentUpgrade): AgentUpgradeOrder {
    const { scope, version, digest, size, signature } = u.spec.release;
    return {
      upgrade: u.metadata.name,
      release: { scope, version, digest, size, signature } as AgentUpgradeOrder['release'],
      deadlineMs: parseDuration(u.spec.rollout.deadline),
      ...(u.spec.allowDowngrade ? { allowDowngrade: true } : {}),
    };
  }

  private plan(u: AgentUpgrade, v: ProjectView, known: Known) {
    return planUpgrade(
      u,
      v,
      (e) => known.orders.get(e) ?? this.specOrder(e),
      (e) => this.progressOf(e, known),
    );
  }

  /** The orders and the progress the planner reads: the tables, shared by every replica. */
  private known(): Known {
    return { orders: this.rollouts.orders(), progress: this.rollouts.progress(), unprojected: new Map() };
  }

  /**
   * An order in the edge's document the table lacks: written by a hub before the table existed
   * (a SQLite hub upgraded mid-rollout). With replicas, the tables are the record: undefined.
   */
  private specOrder(edge: string): AgentUpgradeOrder | undefined {
    if (this.replicated) return undefined;
    const doc = this.store.get<SpecDoc>(mailboxDocId(edgeName(edge), 'spec'));
    return doc ? readSpecAgentUpgrade(doc) : undefined;
  }

  /** As specOrder: a report not projected since the table existed (a SQLite hub only). */
  private progress(edge: string): AgentUpgradeProgress | undefined {
    if (this.replicated) return undefined;
    const doc = this.store.get<ReportDoc>(mailboxDocId(edgeName(edge), 'report'));
    return doc ? readReportAgentUpgrade(doc) : undefined;
  }

  /** The status the API shows: computed from the same inputs the rollout uses, writing nothing. */
  status(u: AgentUpgrade): AgentUpgradeStatus {
    const known = this.known();
    const v = this.view(u.metadata.project, known);
    const { plan, rows, claimed, newer, target } = this.plan(u, v, known);
    const updating = new Set(plan.update);
    const planned: PlannedEdge[] = rows.map((r) => ({
      edge: r.re.edge,
      online: r.online,
      ...(r.onTarget ? { onTarget: r.onTarget } : {}),
      ordered: r.re.writtenKey === target || updating.has(r.re.edge),
      ...(r.outcome ? { outcome: r.outcome } : {}),
    }));
    return upgradeStatus({
      version: u.spec.release.version,
      paused: u.spec.rollout.paused,
      plan,
      planned,
      claimed,
      newer,
      versions: v.versions,
    });
  }

  /**
   * What deleting `u` changes on its edges, in words (the API's answer to the delete, computed before
   * it): which edges keep what they run, which another AgentUpgrade takes and what it orders there.
   */
  deleteChanges(u: AgentUpgrade): string[] {
    const known = this.known();
    const before = this.view(u.metadata.project, known);
    const after = this.view(
      u.metadata.project,
      known,
      before.upgrades.filter((x) => x.metadata.name !== u.metadata.name),
    );
    return deleteEffects({ upgrade: u, before, after, orders: known.orders, progress: known.progress });
  }

  /**
   * One pass: the planner (the leader, with replicas) records the orders every AgentUpgrade's plan
   * allows now; then every process copies the orders of the edges it serves into their documents.
   */
  tick(): void {
    if (this.leading()) this.planAll();
    this.engine.copy(AGENT_UPGRADE_ORDER.name);
  }

  private planAll(): void {
    const byProject = new Map<string, AgentUpgrade[]>();
    for (const u of this.objects.list<AgentUpgrade>('AgentUpgrade', '*'))
      byProject.set(u.metadata.project, [...(byProject.get(u.metadata.project) ?? []), u]);
    const known = this.known();
    for (const [project, upgrades] of byProject) {
      const v = this.view(project, known, upgrades);
      for (const r of recordOutcomes(this.rollouts, project, v, (e) => this.progressOf(e, known)))
        this.outcomeEvent(project, r.upgrade, r.edge, r.outcome);
      for (const u of v.claims.ordered) this.planOne(u, v, known);
    }
  }

  /** How an edge's switch to the upgrade's release ended, as an event of the upgrade about that edge. */
  private outcomeEvent(project: string, u: AgentUpgrade, edge: string, o: AgentUpgradeOutcome): void {
    const version = u.spec.release.version;
    log.info({ project, upgrade: u.metadata.name, edge, state: o.state }, 'agent upgrade ended on an edge');
    this.state.events.record({
      project,
      kind: 'AgentUpgrade',
      name: u.metadata.name,
      edge,
      reason: o.state,
      message:
        o.state === 'Running'
          ? `edge ${edge} runs ${version}`
          : `edge ${edge} rolled back ${version}${o.reason ? `: ${o.reason}` : ''}`,
    });
  }

  private planOne(u: AgentUpgrade, v: ProjectView, known: Known): void {
    const project = u.metadata.project;
    const { plan, rows } = this.plan(u, v, known);
    const order = this.order(u);
    const byEdge = new Map(rows.map((r) => [r.re.edge, r]));
    const ordered = (e: string, again: boolean, online: boolean | undefined) => {
      log.info({ project, upgrade: u.metadata.name, edge: e, online, again }, 'agent upgrade ordered');
      this.state.events.record({
        project,
        kind: 'AgentUpgrade',
        name: u.metadata.name,
        edge: e,
        reason: 'Ordered',
        message: `edge ${e} ordered ${again ? 'again (the order changed) ' : ''}to switch to ${u.spec.release.version}${u.spec.allowDowngrade ? ' (allowDowngrade: even if it runs a newer version)' : ''}${online === false ? ' (offline: when it returns)' : ''}`,
      });
    };
    // An order already given changes in place when the object changes without a new digest
    // (allowDowngrade set after a refusal, another deadline): the planner sees no new target.
    for (const r of rows)
      if (!r.outcome && r.written && r.re.writtenKey === r.re.targetKey && orderChanged(r.written, order))
        if (this.rollouts.setOrder(r.re.edge, order)) ordered(r.re.edge, true, r.online);
    for (const e of plan.update) {
      const r = byEdge.get(e);
      if (!r?.synced || r.outcome) continue; // enrolled but never connected: its mailbox is made at the first sync
      if (this.rollouts.setOrder(e, order)) {
        ordered(e, false, r.online);
        supersede(this.rollouts, u, e, v, this.progressOf(e, known));
      }
    }
  }

  /**
   * Withdraws this upgrade's orders from edges it no longer selects: from the table, and from the
   * documents that hold it (one a previous run of this process wrote is not in the engine's memory).
   */
  private clearOrders(upgrade: string, edges: string[]): void {
    this.rollouts.withdraw(upgrade, edges);
    const holding = edges.filter((e) => {
      if (this.engine.holds && !this.engine.holds(e)) return false;
      const id = mailboxDocId(edgeName(e), 'spec');
      const doc = this.store.has(id) ? this.store.get<SpecDoc>(id) : undefined;
      return (doc && readSpecAgentUpgrade(doc))?.upgrade === upgrade;
    });
    this.engine.withdraw(AGENT_UPGRADE_ORDER.name, holding);
  }
}
