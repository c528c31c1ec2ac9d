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
 * selected by two AgentUpgrades follows the first by name; the other shows it as claimed.
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
  FAILED_UPGRADE_STATES,
  readReportAgentUpgrade,
  readSpecAgentUpgrade,
  putSpecAgentUpgrade,
  type AgentUpgradeOrder,
  type AgentUpgradeProgress,
  type ReportDoc,
  type SpecDoc,
} from '../../core/mailbox.js';
import type { AgentUpgrade, Edge } from '../../core/resources.js';
import { planRollout, type RolloutCounts, type RolloutEdge, type RolloutPhase } from '../../core/rollout.js';
import type { SqlDb } from '../state/sql.js';
import type { ReplicaStore } from '../../sync/store.js';
import { recordEvent } from '../state/events.js';
import type { ObjectChange, ObjectStore } from '../objects.js';
import { edgesReached, isOnline, schedulableEdges } from '../edges/phase.js';
import type { AgentUpgradeRollouts } from '../state/agent-upgrades.js';
import { edgeLiveness, sqlEdgeState } from '../state/edges.js';
import type { HubBlobs } from '../blobs/index.js';

const log = createLogger('hub:upgrades');

/** How often rollouts are planned again: edges' reports and connections change without an object change. */
export const UPGRADE_TICK_MS = 2_000;

/** One selected edge as `describe agentupgrade` shows it. */
export interface AgentUpgradeEdgeStatus {
  edge: string;
  /** `Waiting`: the rollout has not ordered it yet; `Claimed`: another AgentUpgrade holds it. */
  state: AgentUpgradeProgress['state'] | 'Waiting' | 'Claimed';
  percent?: number;
  reason?: string;
  /** The version the edge's agent runs now, as it last reported. */
  agentVersion?: string;
  online: boolean;
}

export interface AgentUpgradeStatus {
  phase: RolloutPhase;
  reason: string;
  counts: RolloutCounts;
  /** Edges running the release. */
  running: number;
  /** Edges that rolled back or could not take it (no space, refused). */
  rolledBack: number;
  maxUnavailable: number;
  edges: AgentUpgradeEdgeStatus[];
}

const keyOf = (upgrade: string, digest: string) => `${upgrade}@${digest}`;

/** Whether an order given for the same upgrade and digest differs from the object's order now. */
const orderChanged = (a: AgentUpgradeOrder, b: AgentUpgradeOrder) =>
  a.deadlineMs !== b.deadlineMs ||
  !!a.allowDowngrade !== !!b.allowDowngrade ||
  a.release.signature !== b.release.signature;

/** What the planner knows of every edge: its recorded order and its reported progress. */
interface Known {
  orders: Map<string, AgentUpgradeOrder>;
  progress: Map<string, AgentUpgradeProgress>;
}

export class AgentUpgradeController {
  private timer: NodeJS.Timeout | undefined;
  private pending: Promise<void> | undefined;
  /**
   * Per edge, the order (JSON) this process last wrote into its spec document: a pass copies only
   * what changed, without loading every document. Empty after a restart: each is loaded once.
   */
  private readonly written = new Map<string, string>();
  /**
   * Hub replicas on PostgreSQL: whether this process serves the edge (only those documents are
   * written here), and whether it plans. A SQLite hub serves every edge and plans.
   */
  holds: ((edge: string) => boolean) | undefined;
  leading: () => boolean = () => true;

  constructor(
    private readonly db: SqlDb,
    private readonly objects: ObjectStore,
    private readonly store: ReplicaStore,
    private readonly blobs: HubBlobs,
    private readonly releaseKeyPem: string,
    private readonly rollouts: AgentUpgradeRollouts,
    private readonly tickMs = UPGRADE_TICK_MS,
  ) {}

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
   * refuses the write) and keeps its blob reference; on delete, drops the reference and the
   * orders it wrote.
   */
  onObjectChange(c: ObjectChange): void {
    if (c.kind !== 'AgentUpgrade') return;
    const after = c.after as AgentUpgrade | undefined;
    if (after) checkAgentUpgrade(after, this.releaseKeyPem, this.blobs);
    this.blobs.setReferences(c.project, 'AgentUpgrade', c.name, after ? [after.spec.release.digest as BlobDigest] : []);
    const before = c.before as AgentUpgrade | undefined;
    if (before) {
      // Edges this upgrade no longer selects (or all, when it is gone) lose its order, after commit.
      const keep = new Set(after ? this.selected(after) : []);
      const drop = this.selected(before).filter((e) => !keep.has(e));
      if (drop.length) setImmediate(() => this.clearOrders(c.name, drop));
    }
    this.mark();
  }

  private selected(u: AgentUpgrade): string[] {
    const edges = schedulableEdges(
      this.objects.list<Edge>('Edge', u.metadata.project),
      edgeLiveness(this.db, u.metadata.project),
    );
    return edgesReached(edges, u.spec);
  }

  /** Edge -> the AgentUpgrade that holds it in this project (first by name). */
  private claims(project: string): Map<string, string> {
    const out = new Map<string, string>();
    for (const u of this.objects.list<AgentUpgrade>('AgentUpgrade', project))
      for (const e of this.selected(u)) if (!out.has(e)) out.set(e, u.metadata.name);
    return out;
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

  private plan(u: AgentUpgrade, claims: Map<string, string>, known: Known = this.known()) {
    const name = u.metadata.name;
    const project = u.metadata.project;
    const target = keyOf(name, u.spec.release.digest);
    const live = edgeLiveness(this.db, project);
    const now = Date.now();
    const mine = this.selected(u).filter((e) => claims.get(e) === name);
    const claimed = this.selected(u).filter((e) => claims.get(e) !== name);
    const rows = mine.map((e) => {
      const written = known.orders.get(e) ?? this.specOrder(e);
      const progress = known.progress.get(e) ?? this.progress(e);
      const online = isOnline(live.get(e), now);
      const re: RolloutEdge = {
        edge: e,
        targetKey: target,
        online,
        ...(written ? { writtenKey: keyOf(written.upgrade, written.release.digest) } : {}),
        ...(progress
          ? {
              observed: {
                key: keyOf(progress.upgrade, progress.digest),
                state:
                  progress.state === 'Running'
                    ? ('ready' as const)
                    : FAILED_UPGRADE_STATES.includes(progress.state)
                      ? ('failed' as const)
                      : ('progressing' as const),
              },
            }
          : {}),
      };
      return { re, written, progress, online, synced: live.get(e)?.lastSeen !== undefined };
    });
    const plan = planRollout({
      placement: name,
      rollout: u.spec.rollout,
      edges: rows.map((r) => r.re),
      advice: {
        resume: `raise spec.rollout.failureThreshold of AgentUpgrade ${name}`,
        fix: 'apply a fixed release (a new digest starts over)',
      },
    });
    return { plan, rows, claimed, target };
  }

  /** The orders and the progress the planner reads: the tables, shared by every replica. */
  private known(): Known {
    return { orders: this.rollouts.orders(), progress: this.rollouts.progress() };
  }

  /**
   * An order in the edge's document the table lacks: written by a hub before the table existed
   * (a SQLite hub upgraded mid-rollout). With replicas, the tables are the record: undefined.
   */
  private specOrder(edge: string): AgentUpgradeOrder | undefined {
    if (this.holds) return undefined;
    const doc = this.store.get<SpecDoc>(mailboxDocId(edgeName(edge), 'spec'));
    return doc ? readSpecAgentUpgrade(doc) : undefined;
  }

  /** As specOrder: a report not projected since the table existed (a SQLite hub only). */
  private progress(edge: string): AgentUpgradeProgress | undefined {
    if (this.holds) return undefined;
    const doc = this.store.get<ReportDoc>(mailboxDocId(edgeName(edge), 'report'));
    return doc ? readReportAgentUpgrade(doc) : undefined;
  }

  /** The status the API shows: computed from the same inputs the rollout uses, writing nothing. */
  status(u: AgentUpgrade): AgentUpgradeStatus {
    const { plan, rows, claimed, target } = this.plan(u, this.claims(u.metadata.project));
    const updating = new Set(plan.update);
    const runtimes = new Map(rows.map((r) => [r.re.edge, this.agentVersion(r.re.edge)] as const));
    const edges: AgentUpgradeEdgeStatus[] = rows.map((r) => {
      const onTarget = r.progress && keyOf(r.progress.upgrade, r.progress.digest) === target ? r.progress : undefined;
      const ordered = r.re.writtenKey === target || updating.has(r.re.edge);
      const agentVersion = runtimes.get(r.re.edge);
      return {
        edge: r.re.edge,
        state: onTarget ? onTarget.state : ordered ? 'Pending' : 'Waiting',
        ...(onTarget?.percent !== undefined ? { percent: onTarget.percent } : {}),
        ...(onTarget?.reason ? { reason: onTarget.reason } : {}),
        ...(agentVersion ? { agentVersion } : {}),
        online: r.online,
      };
    });
    for (const e of claimed) {
      const other = this.claims(u.metadata.project).get(e);
      edges.push({ edge: e, state: 'Claimed', reason: `AgentUpgrade ${other} holds this edge`, online: false });
    }
    edges.sort((a, b) => (a.edge < b.edge ? -1 : 1));
    return {
      phase: plan.phase,
      reason: plan.reason,
      counts: plan.counts,
      running: edges.filter((e) => e.state === 'Running').length,
      rolledBack: edges.filter((e) => (FAILED_UPGRADE_STATES as readonly string[]).includes(e.state)).length,
      maxUnavailable: plan.maxUnavailable,
      edges,
    };
  }

  private agentVersion(edge: string): string | undefined {
    const rt = sqlEdgeState(this.db).get(edge);
    return rt?.inventory?.agentVersion ?? rt?.agentVersion;
  }

  /**
   * One pass: the planner (the leader, with replicas) records the orders every AgentUpgrade's plan
   * allows now; then every process copies the orders of the edges it serves into their documents.
   */
  tick(): void {
    if (this.leading()) this.planAll();
    this.writeHeld(this.rollouts.orders());
  }

  private planAll(): void {
    const all = this.objects.list<AgentUpgrade>('AgentUpgrade', '*');
    const claimsByProject = new Map<string, Map<string, string>>();
    const known = this.known();
    for (const u of all) {
      const project = u.metadata.project;
      if (!claimsByProject.has(project)) claimsByProject.set(project, this.claims(project));
      const { plan, rows } = this.plan(u, claimsByProject.get(project)!, known);
      const order = this.order(u);
      const byEdge = new Map(rows.map((r) => [r.re.edge, r]));
      // An order already given changes in place when the object changes without a new digest
      // (allowDowngrade set after a refusal, another deadline): the planner sees no new target.
      const ordered = (e: string, again: boolean, online: boolean | undefined) => {
        log.info({ project, upgrade: u.metadata.name, edge: e, online, again }, 'agent upgrade ordered');
        recordEvent(this.db, {
          project,
          kind: 'AgentUpgrade',
          name: u.metadata.name,
          reason: 'Ordered',
          message: `edge ${e} ordered ${again ? 'again (the order changed) ' : ''}to switch to ${u.spec.release.version}${u.spec.allowDowngrade ? ' (allowDowngrade: even if it runs a newer version)' : ''}${online === false ? ' (offline: when it returns)' : ''}`,
        });
      };
      for (const r of rows)
        if (r.written && r.re.writtenKey === r.re.targetKey && orderChanged(r.written, order))
          if (this.rollouts.setOrder(r.re.edge, order)) ordered(r.re.edge, true, r.online);
      for (const e of plan.update) {
        const r = byEdge.get(e);
        if (!r?.synced) continue; // enrolled but never connected: its mailbox is made at the first sync
        if (this.rollouts.setOrder(e, order)) ordered(e, false, r.online);
      }
    }
  }

  /** Copies the recorded orders into the documents of the edges this process serves (what changed). */
  private writeHeld(orders: Map<string, AgentUpgradeOrder>): void {
    for (const [e, order] of orders)
      if ((!this.holds || this.holds(e)) && this.written.get(e) !== JSON.stringify(order)) this.writeDoc(e, order);
    for (const e of [...this.written.keys()])
      if (!orders.has(e)) {
        if (!this.holds || this.holds(e)) this.writeDoc(e, undefined);
        else this.written.delete(e); // the replica serving it withdraws it; writeEdge if it comes back
      }
  }

  /**
   * Writes one edge's upgrade order into its spec document as recorded. Called before the edge's
   * handshake is answered (hub/sync-endpoint.ts `beforeWelcome`): an edge that moves to this replica finds
   * its order (or its withdrawal) in the first spec it gets.
   */
  writeEdge(edge: string): void {
    const order = this.rollouts.order(edge);
    // A SQLite hub's documents may hold an order from before the table (specOrder): kept.
    if (!order && !this.holds) return;
    this.writeDoc(edge, order);
  }

  private writeDoc(edge: string, order: AgentUpgradeOrder | undefined): void {
    const id = mailboxDocId(edgeName(edge), 'spec');
    if (!this.store.has(id)) return;
    // This runs at every handshake on a hub replica: a document that holds the order is not loaded.
    this.store.changePart(
      id,
      'agent-upgrade',
      JSON.stringify(order ?? null),
      (b) => putSpecAgentUpgrade(b, order),
      order ? `agent upgrade ${order.upgrade}` : 'agent upgrade withdrawn',
    );
    if (order) this.written.set(edge, JSON.stringify(order));
    else this.written.delete(edge);
  }

  private clearOrders(upgrade: string, edges: string[]): void {
    this.rollouts.withdraw(upgrade, edges);
    for (const e of edges) {
      if (this.holds && !this.holds(e)) continue;
      const id = mailboxDocId(edgeName(e), 'spec');
      if (!this.store.has(id)) continue;
      const doc = this.store.get<SpecDoc>(id);
      if ((doc && readSpecAgentUpgrade(doc))?.upgrade !== upgrade) continue;
      this.writeDoc(e, undefined);
    }
  }
}
