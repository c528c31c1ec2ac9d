/**
 * @module The scheduler: turns placements into each edge's desired state.
 *
 * For every placement it selects edges and customizes each workload for each of them
 * (targets.ts, cached), observes what each edge was written and reports and asks the rollout
 * planner which edges may get new content now (rollout.ts), records the result as assignments
 * (assign.ts, hub/state/assignments.ts), then has the order engine write the workloads part of
 * every edge whose assignments changed, and only those: the workloads are the engine's incremental
 * kind (hub/orders/engine.ts, spec-writer.ts its source). Work is queued and paced (queue.ts); an
 * edge's status change queues the placements it may move (status-marks.ts); per-edge gates hold a
 * placement's new version back (gates.ts, gate-waits.ts). With hub replicas on PostgreSQL only the
 * leader plans (peers.ts).
 * This file wires the parts and keeps the per-placement rollout state.
 */
import type { Placement, Registry, Workload } from '../../core/resources.js';
import { WORKLOAD_ORDERS } from '../../core/orders/workloads.js';
import type { ReplicaStore } from '../../sync/store.js';
import { withRegistryAccess } from '../images/registries.js';
import type { ObjectChange, ObjectStore } from '../objects.js';
import type { OrderEngine } from '../orders/engine.js';
import type { HubSecrets } from '../secrets.js';
import type { AssignmentKey, AssignmentStore, EdgeReads } from '../state/assignments.js';
import type { HubState } from '../state/index.js';
import { writeAssignments } from './assign.js';
import { WorkQueue, type Work } from './queue.js';
import type { EdgeGate } from './gates.js';
import { GateWaits } from './gate-waits.js';
import { failedEdges, observeEdges, planPlacement, skipDelayMs, type RolloutStatus } from './rollout.js';
import type { SchedulerPeers } from './peers.js';
import { SpecWriter } from './spec-writer.js';
import { StatusMarks } from './status-marks.js';
import { TargetCache, type ChartRendering, type ImagePinning } from './targets.js';

export type { RolloutStatus } from './rollout.js';
export type { EdgeGate, GateContext } from './gates.js';
export type { PeerMark, SchedulerPeers } from './peers.js';

/** Rounds of hand-over (a workload released by one placement, taken by another) within one pass. */
const HANDOVER_ROUNDS = 4;

export class Scheduler {
  private readonly assignments: AssignmentStore;
  private readonly edges: EdgeReads;
  private readonly queue: WorkQueue;
  private readonly targets: TargetCache;
  private readonly specs: SpecWriter;
  /**
   * Placements whose last pass left some selected edge short of its target (a rollout wave holds
   * it, or another placement owns the workload there): status changes can move such a rollout on,
   * so they are re-planned promptly. The others only refresh phase and counts.
   */
  private readonly heldBack = new Set<string>();
  private readonly rolloutStatus = new Map<string, RolloutStatus>();
  /** Workloads (`project/name`) a pass removed from some edge, with the placements that removed them. */
  private readonly released = new Map<string, Set<string>>();
  /** Per placement: a re-plan due when an offline edge passes `skipOfflineAfter` (no event marks that moment). */
  private readonly skipTimers = new Map<string, NodeJS.Timeout>();
  /** The gates (gates.ts), and which placements wait on which edge. */
  private readonly waits: GateWaits;
  /** Edges whose status changed this turn, planned together (planStatus). */
  private readonly statusMarks: StatusMarks;
  /** Hub replicas on PostgreSQL (usePeers); undefined on a SQLite hub. */
  private peers: SchedulerPeers | undefined;

  constructor(
    private readonly state: HubState,
    private readonly objects: ObjectStore,
    store: ReplicaStore,
    /** Seals each edge's Secret values to its own key when its spec document is written. */
    secrets: HubSecrets,
    /** The order engine: the workloads are its incremental kind (core/orders/workloads.ts). */
    private readonly orders: OrderEngine,
  ) {
    this.assignments = state.assignments;
    this.edges = state.schedulerEdges;
    this.specs = new SpecWriter(
      this.assignments,
      this.edges,
      store,
      (e, m) => secrets.sealForEdge(e, m),
      () => this.queue.wakeIdle(),
    );
    orders.registerIncremental({
      kind: WORKLOAD_ORDERS,
      writer: this.specs,
      // The edge's assignments and what its spec was written with go with it.
      forgetEdge: (edge) => {
        this.assignments.forgetEdge(edge);
        state.status.forgetEdge(edge);
      },
      // Every report may move a rollout: the workloads' status is projected (every replica), and
      // the placements that put something on the edge are re-planned, paced (markStatus).
      project: (edge, report) => {
        state.status.project(
          edge,
          Object.values(report.workloads).map((w) => ({
            workload: w.name,
            observedGeneration: w.observedGeneration,
            phase: w.phase,
            ...(w.message !== undefined ? { message: w.message } : {}),
            since: w.since,
            restarts: w.restarts,
            objects: w.objects,
          })),
        );
        return true;
      },
      wake: (edges) => {
        for (const e of edges) this.markStatus(e);
      },
      onObjectChange: (c) => this.onObjectChange(c),
      handshakeReads: {
        edge: (edge) => [...this.edges.handshakeReads(edge), ...this.assignments.handshakeReads(edge)],
      },
    });
    this.queue = new WorkQueue(
      (w) => this.pass(w),
      () => this.specs.busy || this.statusMarks.busy,
    );
    this.waits = new GateWaits(this.assignments);
    this.statusMarks = new StatusMarks(this.assignments, this.queue, {
      leading: () => this.leading,
      rolloutStatus: this.rolloutStatus,
      heldBack: this.heldBack,
      waits: this.waits,
    });
    this.targets = new TargetCache(
      (project) => objects.list('Edge', project),
      (e, m) => secrets.cannotReceive(e, m),
      {
        list: (project) => objects.list<Registry>('Registry', project),
        add: (registries, manifests) => withRegistryAccess(secrets.box, registries, manifests),
      },
    );
    this.targets.clusters = state.clusters;
  }

  /** An object changed: the placements, edges and workloads it concerns are planned again. */
  private onObjectChange(c: ObjectChange): void {
    if (c.kind === 'Edge') this.markEdge(c.name);
    else if (c.kind === 'Workload') this.markWorkload(c.project, c.name);
    else if (c.kind === 'Registry')
      // Which edges get its credentials depends on every placement's images: re-plan them all.
      this.markProject(c.project);
    else if (c.kind === 'Placement') this.markPlacement(c.project, c.name);
    // Its hosts changed with it: the placements that select it by name pick its control-plane edge.
    else if (c.kind === 'Cluster') this.markProject(c.project);
  }

  /** Images pinned to digests per revision (hub/images/pins.ts): what edges get names digests. */
  useImagePins(pins: ImagePinning): void {
    this.targets.images = pins;
  }

  /** Chart workloads rendered per edge (hub/catalog/chart-renders.ts). */
  useChartRendering(charts: ChartRendering): void {
    this.targets.charts = charts;
  }

  /**
   * Runs as one of several hub replicas: marks go to the leader unless this process leads, and
   * spec documents are written only for the edges this process serves.
   */
  usePeers(peers: SchedulerPeers): void {
    this.peers = peers;
    this.specs.serving = peers;
    this.statusMarks.gather = true;
  }

  /** Whether this process plans (always, on a SQLite hub). */
  get leading(): boolean {
    return !this.peers || this.peers.leading;
  }

  /**
   * This replica became the leader (plan everything from the tables) or stopped being it (what it
   * had queued and knew of rollouts goes: the new leader plans them again).
   */
  leadershipChanged(): void {
    if (this.leading) {
      this.markAll();
      return;
    }
    this.queue.clear();
    this.rolloutStatus.clear();
    this.heldBack.clear();
    for (const t of this.skipTimers.values()) clearTimeout(t);
    this.skipTimers.clear();
  }

  /** The leader changed these edges' assignments: write the specs of those this process serves. */
  specsChanged(edges: Iterable<string>): void {
    this.orders.enqueue(WORKLOAD_ORDERS.name, edges);
  }

  /**
   * Writes the spec documents (of the edges this process serves) that do not hold what their
   * assignments and labels say: another replica took over the planning, and the last edges its
   * predecessor named may not have been heard of.
   */
  rewriteStaleSpecs(): void {
    this.orders.enqueue(WORKLOAD_ORDERS.name, this.specs.stale());
  }

  /** Re-plans every placement of a project (its images were resolved). */
  markProject(project: string): void {
    for (const p of this.objects.list<Placement>('Placement', project)) this.markPlacement(project, p.metadata.name);
  }

  /** A precondition edges must meet before a placement's new version is written to them (gates.ts). */
  addGate(gate: EdgeGate): void {
    this.waits.add(gate);
  }

  /** How long the last pass took (status passes are paced by it). */
  get lastPassMs(): number {
    return this.queue.lastPassMs;
  }

  set lastPassMs(ms: number) {
    this.queue.lastPassMs = ms;
  }

  markPlacement(project: string, name: string): void {
    if (!this.leading) this.peers!.send({ t: 'placements', keys: [`${project}/${name}`] });
    else this.queue.addPlacement(`${project}/${name}`);
  }

  /** The edge itself changed (labels, approval, drain, enrollment): re-select it everywhere and rewrite its spec. */
  markEdge(name: string): void {
    this.targets.edgesChanged();
    if (!this.leading) this.peers!.send({ t: 'edges', edges: [name] });
    else this.queue.addEdge(name);
  }

  /**
   * Only the edge's status changed (a report, a connect or disconnect): re-plan the rollouts of the
   * placements that have put something on it, paced (WorkQueue.statusDelay), so a thousand reports
   * arriving together cost one pass, and no spec document is touched unless a rollout moves.
   */
  markStatus(name: string, cause: 'report' | 'connectivity' = 'report'): void {
    // Every replica hears of it (their change streams); the leader plans with it.
    this.peers?.send({ t: 'status', edges: [name], cause });
    this.planStatus(name, cause);
  }

  /** markStatus's planning, on the leader (also for the statuses other replicas send it). */
  planStatus(name: string, cause: 'report' | 'connectivity'): void {
    this.statusMarks.add(name, cause);
  }

  markWorkload(project: string, name: string): void {
    for (const p of this.objects.list<Placement>('Placement', project))
      if (p.spec.workloads.includes(name)) this.markPlacement(project, p.metadata.name);
  }

  /** Re-plans every placement and rewrites every spec document that does not hold what it should. */
  markAll(): void {
    if (this.leading)
      for (const p of this.objects.list<Placement>('Placement', '*'))
        this.queue.addPlacement(`${p.metadata.project}/${p.metadata.name}`);
    this.rewriteStaleSpecs();
  }

  rollout(project: string, placement: string): RolloutStatus | undefined {
    if (this.leading) return this.rolloutStatus.get(`${project}/${placement}`);
    // A replica that does not plan shows what the leader recorded.
    const r = this.assignments.rolloutRecord(project, placement);
    if (!r?.progress) return undefined;
    const p = JSON.parse(r.progress) as Pick<RolloutStatus, 'counts' | 'maxUnavailable' | 'paused'>;
    return { phase: r.phase as RolloutStatus['phase'], reason: r.reason, ...p };
  }

  /** Resolves once no work is queued (no pass pending, every spec written). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** `outpost rollout resume`: accept the current failures and go on. */
  resume(project: string, name: string): void {
    if (!this.objects.get<Placement>('Placement', project, name)) return;
    const failures = failedEdges(
      this.assignments.keysForPlacement(project, name),
      this.assignments.statusForPlacement(project, name),
    );
    this.assignments.acknowledge(project, name, failures);
    this.markPlacement(project, name);
  }

  private pass(work: Work): void {
    // Leadership went while the pass was due: the new leader plans it.
    if (!this.leading) return;
    // An edge change affects the placements of its project (its labels may now match or not).
    const placements = new Set(work.placements);
    const projects = new Set<string>();
    for (const name of work.edges) {
      const project = this.edges.project(name);
      if (project !== undefined) projects.add(project);
    }
    for (const project of projects)
      for (const p of this.objects.list<Placement>('Placement', project))
        placements.add(`${project}/${p.metadata.name}`);
    const touched = new Set<string>(work.edges);
    // A workload that left an edge (its placement deleted, narrowed or no longer naming it) may be
    // wanted there by another placement that was blocked: re-plan those in the same batch, before
    // any spec is written, so the edge is never told to remove a workload another placement still
    // selects (it gets the other placement's version instead). A few rounds at most; anything
    // still released after them goes to the next pass.
    let round = [...placements];
    for (let i = 0; round.length && i < HANDOVER_ROUNDS; i++) {
      for (const key of round) {
        const [project, name] = key.split('/') as [string, string];
        for (const e of this.reconcilePlacement(project, name)) touched.add(e);
      }
      round = this.takeReleased();
    }
    for (const key of round) this.queue.addPlacement(key);
    // Other replicas write the specs of the edges they serve; this one, those it serves.
    if (touched.size) this.peers?.send({ t: 'specs', edges: [...touched] });
    this.orders.enqueue(WORKLOAD_ORDERS.name, touched);
  }

  /** The placements naming a workload some pass just removed from an edge (and forgets those workloads). */
  private takeReleased(): string[] {
    const out = new Set<string>();
    for (const [key, by] of this.released) {
      const [project, workload] = key.split('/') as [string, string];
      for (const p of this.objects.list<Placement>('Placement', project))
        if (p.spec.workloads.includes(workload) && !(by.size === 1 && by.has(p.metadata.name)))
          out.add(`${project}/${p.metadata.name}`);
    }
    this.released.clear();
    return [...out];
  }

  private release(project: string, workload: string, placement: string): void {
    const key = `${project}/${workload}`;
    (this.released.get(key) ?? this.released.set(key, new Set()).get(key)!).add(placement);
  }

  /** Recomputes one placement's assignments; returns the edges whose assignments changed. */
  private reconcilePlacement(project: string, name: string): Set<string> {
    const key = `${project}/${name}`;
    const placement = this.objects.get<Placement>('Placement', project, name);
    const before = this.assignments.keysForPlacement(project, name);
    if (!placement) {
      // Deleted: its workloads leave every edge it had placed them on.
      this.assignments.transaction(() => {
        this.assignments.removePlacement(project, name);
        this.assignments.removeRollout(project, name);
      });
      this.rolloutStatus.delete(key);
      this.heldBack.delete(key);
      this.targets.forget(project, name);
      clearTimeout(this.skipTimers.get(key));
      this.skipTimers.delete(key);
      this.waits.setWaiting(key, []);
      for (const a of before) this.release(project, a.workload, name);
      return new Set(before.map((a) => a.edge));
    }
    const runtimes = this.state.edges.liveness(project);
    const workloads = placement.spec.workloads
      .map((w) => this.objects.get<Workload>('Workload', project, w))
      .filter((w): w is Workload => !!w);
    const missing = placement.spec.workloads.filter((w) => !workloads.some((x) => x.metadata.name === w));
    const selection = this.targets.get(placement, workloads, runtimes);
    const heldElsewhere = this.assignments.heldElsewhere(project, name, placement.spec.workloads);
    const current = new Map<string, AssignmentKey[]>();
    for (const a of before) (current.get(a.edge) ?? current.set(a.edge, []).get(a.edge)!).push(a);
    const now = Date.now();
    const edges = observeEdges({
      selection,
      current,
      heldElsewhere,
      status: this.assignments.statusForPlacement(project, name),
      runtimes,
      now,
    });
    this.waits.ask(key, placement, edges, selection.targets);
    const plan = planPlacement(
      placement,
      edges,
      this.assignments.rolloutRecord(project, name)?.acknowledged ?? {},
      missing,
    );
    this.armSkipTimer(project, name, skipDelayMs(placement, edges));
    const prev = this.rolloutStatus.get(key);
    this.rolloutStatus.set(key, {
      phase: plan.phase,
      reason: plan.reason,
      counts: plan.counts,
      maxUnavailable: plan.maxUnavailable,
      paused: placement.spec.rollout.paused,
    });
    this.assignments.saveRollout(
      project,
      name,
      plan.phase,
      plan.reason,
      JSON.stringify({
        counts: plan.counts,
        maxUnavailable: plan.maxUnavailable,
        paused: placement.spec.rollout.paused,
      }),
    );
    if (prev && prev.phase !== plan.phase)
      this.state.events.record({
        project,
        kind: 'Placement',
        name,
        reason: `Rollout${plan.phase}`,
        message: plan.reason,
      });
    const write = new Set(plan.update);
    if (edges.some((r) => r.writtenKey !== r.targetKey && !write.has(r.edge))) this.heldBack.add(key);
    else this.heldBack.delete(key);
    const { changed, released } = writeAssignments(this.assignments, {
      project,
      placement: name,
      selection,
      current,
      heldElsewhere,
      edges,
      update: write,
    });
    for (const w of released) this.release(project, w, name);
    return changed;
  }

  private armSkipTimer(project: string, name: string, delayMs: number | undefined): void {
    const key = `${project}/${name}`;
    clearTimeout(this.skipTimers.get(key));
    this.skipTimers.delete(key);
    if (delayMs === undefined) return;
    const t = setTimeout(() => this.markPlacement(project, name), delayMs + 50);
    t.unref();
    this.skipTimers.set(key, t);
  }
}
