/**
 * @module The scheduler: turns placements into each edge's desired state.
 *
 * For every placement it selects edges (label selector and/or names; approved, not drained),
 * customizes each workload for each edge, asks the rollout planner which edges may get new
 * content now, and records the result as assignments (edge, workload -> manifests, generation).
 * Then it writes the `spec` document of every edge whose assignments changed, and only those:
 * a label change on one edge rewrites at most that edge's mailbox.
 *
 * Work is queued (dirty placements and edges) and processed in one batch on the next tick, so a
 * burst of changes (an `apply -f dir/`, 1,000 reports arriving) costs one pass.
 */
import { cachedStatement, inTransaction } from '../../sync/sqlite.js';
import { createHash } from 'node:crypto';
import { customize, manifestHash } from '../../core/customize.js';
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { SUMMARY_DEBOUNCE_MS } from '../../core/durations.js';
import { createLogger } from '../../core/logger.js';
import { writeSpecTo } from '../../core/mailbox.js';
import type { Edge, Manifest, Placement, Registry, Workload } from '../../core/resources.js';
import { planRollout, skipOfflineAfterMs, type RolloutEdge, type RolloutPlan } from '../../core/rollout.js';
import { selectEdges } from '../../core/selector.js';
import { ensureMailbox } from '../../sync/mailbox.js';
import type { SqliteDatabase } from '../../sync/sqlite.js';
import type { ReplicaStore } from '../../sync/store.js';
import { recordEvent } from '../state/events.js';
import type { ObjectStore } from '../objects.js';
import type { HubSecrets } from '../secrets.js';
import { withRegistryAccess } from '../images/registries.js';
import { isOnline, schedulableEdges } from '../edges/phase.js';
import { edgeLiveness } from '../state/edges.js';

const log = createLogger('hub:scheduler');

export interface Assignment {
  edge: string;
  workload: string;
  project: string;
  placement: string;
  revision: number;
  contentKey: string;
  generation: number;
  manifests: Manifest[];
  error?: string;
}

interface AssignmentRow {
  edge: string;
  workload: string;
  project: string;
  placement: string;
  revision: number;
  content_key: string;
  generation: number;
  manifests: string;
  error: string | null;
}

const fromRow = (r: AssignmentRow): Assignment => ({
  edge: r.edge,
  workload: r.workload,
  project: r.project,
  placement: r.placement,
  revision: r.revision,
  contentKey: r.content_key,
  generation: r.generation,
  manifests: JSON.parse(r.manifests) as Manifest[],
  ...(r.error ? { error: r.error } : {}),
});

export function assignmentsForEdge(db: SqliteDatabase, edge: string): Assignment[] {
  return (
    cachedStatement(db, 'SELECT * FROM assignments WHERE edge = ? ORDER BY workload').all(edge) as AssignmentRow[]
  ).map(fromRow);
}

export function assignmentsForPlacement(db: SqliteDatabase, project: string, placement: string): Assignment[] {
  return (
    cachedStatement(db, 'SELECT * FROM assignments WHERE project = ? AND placement = ? ORDER BY edge, workload').all(
      project,
      placement,
    ) as AssignmentRow[]
  ).map(fromRow);
}

export function assignmentsForWorkload(db: SqliteDatabase, project: string, workload: string): Assignment[] {
  return (
    cachedStatement(db, 'SELECT * FROM assignments WHERE project = ? AND workload = ? ORDER BY edge').all(
      project,
      workload,
    ) as AssignmentRow[]
  ).map(fromRow);
}

interface Target {
  workload: string;
  revision: number;
  manifests: Manifest[];
  key: string;
  error?: string;
}

/** Rollout state of one placement, as the planner last decided. */
export interface RolloutStatus {
  phase: RolloutPlan['phase'];
  reason: string;
  counts: RolloutPlan['counts'];
  maxUnavailable: number;
  paused: boolean;
}

/** The assignment columns a spec document is written from (the content key stands for the manifests). */
interface KeyRow {
  workload: string;
  revision: number;
  content_key: string;
  generation: number;
  error: string | null;
}

/** Digest of everything writeSpec puts into a spec document: the edge's labels and its assignments. */
function specDigest(labels: string | undefined, keys: KeyRow[]): string {
  return createHash('sha256')
    .update(
      JSON.stringify([labels ?? '{}', keys.map((k) => [k.workload, k.revision, k.content_key, k.generation, k.error])]),
    )
    .digest('base64url');
}

/** Longest stretch of spec writes before the scheduler yields to sockets and the API. */
const SPEC_SLICE_MS = 20;

export class Scheduler {
  private readonly dirtyPlacements = new Set<string>();
  private readonly dirtyEdges = new Set<string>();
  private scheduled = false;
  private running = false;
  private dueAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  /**
   * Placements whose last pass left some selected edge short of its target (a rollout wave holds
   * it, or another placement owns the workload there): status changes can move such a rollout on,
   * so they are re-planned promptly. The others only refresh phase and counts.
   */
  private readonly heldBack = new Set<string>();
  private readonly rolloutStatus = new Map<string, RolloutStatus>();
  /** Bumped whenever an edge's labels, approval or schedulability may have changed. */
  private edgesVersion = 0;
  private readonly targetCache = new Map<
    string,
    { stamp: string; selected: string[]; targets: Map<string, Target[]>; targetKeys: Map<string, string> }
  >();
  /** combinedKey memo: the same few assignment sets recur on every edge and every pass. */
  private readonly keyMemo = new Map<string, string>();
  /** Edges whose spec document is to be written (by drainSpecs, in slices). */
  private readonly specQueue = new Set<string>();
  private draining = false;
  /** How long the last pass took: a status-triggered pass waits at least twice that. */
  private lastPassMs = 0;
  /** Resolves when the current batch is done (tests and the API's `?wait` use it). */
  private idleWaiters: (() => void)[] = [];
  /**
   * Workloads (`project/name`) a pass removed from some edge, with the placements that removed
   * them: other placements naming them may take them there.
   */
  private readonly released = new Map<string, Set<string>>();
  /** Per placement: a re-plan due when an offline edge passes `skipOfflineAfter` (no event marks that moment). */
  private readonly skipTimers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly db: SqliteDatabase,
    private readonly objects: ObjectStore,
    private readonly store: ReplicaStore,
    /** Seals each edge's Secret values to its own key when its spec document is written. */
    private readonly secrets: HubSecrets,
  ) {}

  markPlacement(project: string, name: string): void {
    this.dirtyPlacements.add(`${project}/${name}`);
    this.schedule();
  }

  /** The edge itself changed (labels, approval, drain, enrollment): re-select it everywhere and rewrite its spec. */
  markEdge(name: string): void {
    this.dirtyEdges.add(name);
    this.edgesVersion++;
    this.schedule();
  }

  /**
   * Only the edge's status changed (a report, a connect or disconnect): re-plan the rollouts of the
   * placements that have put something on it, debounced, so a thousand reports arriving together
   * cost one pass instead of a thousand, and no spec document is touched unless a rollout moves.
   */
  markStatus(name: string, cause: 'report' | 'connectivity' = 'report'): void {
    const rows = cachedStatement(this.db, 'SELECT DISTINCT project, placement FROM assignments WHERE edge = ?').all(
      name,
    ) as { project: string; placement: string }[];
    let marked = false;
    let advances = false;
    for (const r of rows) {
      const key = `${r.project}/${r.placement}`;
      // An edge coming or going changes a rollout only while something is still to be written or
      // awaited (online edges go first, the reason names offline ones): a Complete rollout stays
      // Complete, and skipping it is what keeps a reconnect storm of 10,000 edges from re-planning
      // the whole fleet every few hundred milliseconds.
      // (Unless it skipped an offline edge: that one coming back is to be written.)
      const st = this.rolloutStatus.get(key);
      if (cause === 'connectivity' && st?.phase === 'Complete' && !st.counts.skipped) continue;
      this.dirtyPlacements.add(key);
      marked = true;
      if (this.heldBack.has(key)) advances = true;
    }
    // A pass over a large fleet is long: waiting twice its duration keeps status passes under a
    // third of the hub's time however many reports arrive. When no rollout waits on status (every
    // selected edge already has its target written: a fleet-wide change in flight), a pass only
    // refreshes the phase and counts, and waits twenty times its duration (at most 5 s): at 10,000
    // edges a pass is ~0.2 s, passes every second took a third of the hub during a fan-out, and
    // at ten times its duration still a tenth. The summary (READY x/y) is read from the tables on
    // demand and never waits for a pass.
    if (marked) this.schedule(Math.min(Math.max(SUMMARY_DEBOUNCE_MS, (advances ? 2 : 20) * this.lastPassMs), 5_000));
  }

  markWorkload(project: string, name: string): void {
    for (const p of this.objects.list<Placement>('Placement', project))
      if (p.spec.workloads.includes(name)) this.markPlacement(project, p.metadata.name);
  }

  /**
   * Re-plans every placement and rewrites every spec document that does not hold what its edge's
   * assignments say (at start: a crash may have come between the two). The digests are compared
   * in four scans instead of edge by edge: at 10,000 edges that was 4.6 s of a reconnect storm.
   */
  markAll(): void {
    for (const p of this.objects.list<Placement>('Placement', '*'))
      this.dirtyPlacements.add(`${p.metadata.project}/${p.metadata.name}`);
    const labels = new Map(
      (
        cachedStatement(this.db, "SELECT name, labels FROM objects WHERE kind = 'Edge'").all() as {
          name: string;
          labels: string;
        }[]
      ).map((r) => [r.name, r.labels]),
    );
    const keys = new Map<string, KeyRow[]>();
    for (const r of cachedStatement(
      this.db,
      'SELECT edge, workload, revision, content_key, generation, error FROM assignments ORDER BY edge, workload',
    ).all() as (KeyRow & { edge: string })[]) {
      (keys.get(r.edge) ?? keys.set(r.edge, []).get(r.edge)!).push(r);
    }
    const written = new Map(
      (
        cachedStatement(this.db, 'SELECT edge, epoch, digest FROM spec_written').all() as {
          edge: string;
          epoch: string;
          digest: string;
        }[]
      ).map((r) => [r.edge, r]),
    );
    const epochs = new Map(this.store.list('edge/').map((d) => [d.id as string, d.epoch]));
    for (const { name } of cachedStatement(this.db, 'SELECT name FROM edge_runtime').all() as { name: string }[]) {
      const w = written.get(name);
      if (
        !w ||
        w.epoch !== epochs.get(mailboxDocId(edgeName(name), 'spec')) ||
        w.digest !== specDigest(labels.get(name), keys.get(name) ?? [])
      )
        this.specQueue.add(name);
    }
    this.schedule();
  }

  rollout(project: string, placement: string): RolloutStatus | undefined {
    return this.rolloutStatus.get(`${project}/${placement}`);
  }

  /** Resolves once no work is queued (no pass pending, every spec written). */
  idle(): Promise<void> {
    if (!this.scheduled && !this.draining) return Promise.resolve();
    // Whoever waits (a stopping hub, the API's ?wait) should not sit out a paced status pass.
    if (this.timer) this.schedule(0);
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private wakeIdle(): void {
    if (!this.scheduled && !this.draining) for (const w of this.idleWaiters.splice(0)) w();
  }

  /**
   * Writes queued spec documents in slices of SPEC_SLICE_MS, yielding to the event loop between
   * them: one placement change to 10,000 edges is ~30 s of writes, and a hub that blocked for all
   * of it answered no handshake, heartbeat or API call meanwhile (edges gave up waiting for their
   * welcome and redialled, which fed a storm). The first slice runs at once.
   */
  private drainSpecs(): void {
    if (this.draining) return;
    this.draining = true;
    const step = () => {
      const t0 = performance.now();
      const slice: string[] = [];
      try {
        // One transaction per slice: a commit per spec was a tenth of a fleet-wide change.
        this.store.batch(() => {
          for (const e of this.specQueue) {
            this.specQueue.delete(e);
            slice.push(e);
            this.writeSpec(e);
            if (performance.now() - t0 > SPEC_SLICE_MS) break;
          }
        });
      } catch {
        // One write failed and its slice rolled back: write those edges one at a time, so a bad
        // edge costs only itself (and is logged).
        for (const e of slice) {
          try {
            this.writeSpec(e);
          } catch (err) {
            log.error({ err, edge: e }, 'writing the spec document failed; it is written again on the next change');
          }
        }
      }
      if (this.specQueue.size) setImmediate(step);
      else {
        this.draining = false;
        this.wakeIdle();
      }
    };
    step();
  }

  /**
   * Runs a pass after `delayMs` (at once for 0). A pass already due sooner stands; one due later
   * (a paced status pass) is brought forward: an operator's change never waits for status pacing.
   */
  private schedule(delayMs = 0): void {
    const due = performance.now() + delayMs;
    if (this.scheduled) {
      if (this.running || due >= this.dueAt) return;
      clearTimeout(this.timer);
      clearImmediate(this.immediate);
      this.timer = undefined;
      this.immediate = undefined;
    }
    this.scheduled = true;
    this.dueAt = due;
    const pass = () => {
      this.timer = undefined;
      this.immediate = undefined;
      this.running = true;
      const t0 = performance.now();
      try {
        this.runBatch();
        this.lastPassMs = performance.now() - t0;
      } catch (err) {
        log.error({ err }, 'scheduling pass failed; it will run again on the next change');
      } finally {
        this.running = false;
        this.scheduled = false;
        if (this.dirtyPlacements.size || this.dirtyEdges.size) this.schedule();
        else this.wakeIdle();
      }
    };
    if (delayMs > 0) this.timer = setTimeout(pass, delayMs);
    else this.immediate = setImmediate(pass);
  }

  private runBatch(): void {
    const edges = new Set(this.dirtyEdges);
    this.dirtyEdges.clear();
    const placements = new Set(this.dirtyPlacements);
    this.dirtyPlacements.clear();
    // An edge change affects the placements of its project (its labels may now match or not).
    const edgeProjects = new Set<string>();
    for (const name of edges) {
      const row = cachedStatement(this.db, 'SELECT project FROM edge_runtime WHERE name = ?').get(name) as
        { project: string } | undefined;
      if (row) edgeProjects.add(row.project);
    }
    for (const project of edgeProjects)
      for (const p of this.objects.list<Placement>('Placement', project))
        placements.add(`${project}/${p.metadata.name}`);
    const touched = new Set<string>(edges);
    // A workload that left an edge (its placement deleted, narrowed or no longer naming it) may be
    // wanted there by another placement that was blocked: re-plan those in the same batch, before
    // any spec is written, so the edge is never told to remove a workload another placement still
    // selects (it gets the other placement's version instead). A few rounds at most; anything
    // still released after them goes to the next pass.
    let round = [...placements];
    for (let i = 0; round.length && i < 4; i++) {
      for (const key of round) {
        const [project, name] = key.split('/') as [string, string];
        for (const e of this.reconcilePlacement(project, name)) touched.add(e);
      }
      round = this.takeReleased();
    }
    for (const key of round) this.dirtyPlacements.add(key);
    for (const e of touched) this.specQueue.add(e);
    this.drainSpecs();
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

  /** One key for an edge's set of (workload, content key): equal sets, equal keys. */
  private combinedKey(ts: { workload: string; key: string }[]): string {
    const joined = ts
      .map((t) => `${t.workload}=${t.key}`)
      .sort()
      .join('\n');
    let key = this.keyMemo.get(joined);
    if (key === undefined) {
      if (this.keyMemo.size > 10_000) this.keyMemo.clear();
      key = createHash('sha256').update(joined).digest('hex').slice(0, 16);
      this.keyMemo.set(joined, key);
    }
    return key;
  }

  /** Recomputes one placement's assignments; returns the edges whose assignments changed. */
  private reconcilePlacement(project: string, name: string): string[] {
    const placement = this.objects.get<Placement>('Placement', project, name);
    // Without the manifests: parsing them for every edge on every pass is wasted work here.
    const before = (
      cachedStatement(
        this.db,
        'SELECT edge, workload, project, placement, revision, content_key, generation, error FROM assignments WHERE project = ? AND placement = ? ORDER BY edge, workload',
      ).all(project, name) as Omit<AssignmentRow, 'manifests'>[]
    ).map((r) => fromRow({ ...r, manifests: '[]' }));
    const changed = new Set<string>();
    if (!placement) {
      // Deleted: its workloads leave every edge it had placed them on.
      cachedStatement(this.db, 'DELETE FROM assignments WHERE project = ? AND placement = ?').run(project, name);
      cachedStatement(this.db, 'DELETE FROM rollouts WHERE project = ? AND placement = ?').run(project, name);
      this.rolloutStatus.delete(`${project}/${name}`);
      this.heldBack.delete(`${project}/${name}`);
      this.targetCache.delete(`${project}/${name}`);
      clearTimeout(this.skipTimers.get(`${project}/${name}`));
      this.skipTimers.delete(`${project}/${name}`);
      for (const a of before) {
        changed.add(a.edge);
        this.release(project, a.workload, name);
      }
      return [...changed];
    }
    const runtimes = edgeLiveness(this.db, project);
    const workloads = placement.spec.workloads
      .map((w) => this.objects.get<Workload>('Workload', project, w))
      .filter((w): w is Workload => !!w);
    const missingWorkloads = placement.spec.workloads.filter((w) => !workloads.some((x) => x.metadata.name === w));
    // An edge gets the pull credentials of the registries its workloads' images name (hub/images).
    const registries = this.objects.list<Registry>('Registry', project);

    // Which edges are selected and what each should run depend only on the placement, its
    // workloads and the edges themselves (labels, approval, schedulability: `edgesVersion`), not
    // on status: reuse them across the many status-only passes a rollout or a reconnect storm
    // makes (at 5,000 edges, re-selecting and customizing on every pass kept the hub busy for minutes).
    // The approved count too: approval is a runtime fact (edge_runtime), and a change of it that
    // did not come through markEdge must still re-select (the UI's scale test seeds it directly).
    let approved = 0;
    for (const l of runtimes.values()) if (l.approved) approved++;
    const stamp = `${placement.metadata.resourceVersion}|${workloads.map((w) => w.metadata.resourceVersion).join(',')}|${this.edgesVersion}|${approved}/${runtimes.size}|${registries.map((r) => r.metadata.resourceVersion).join(',')}`;
    let cache = this.targetCache.get(`${project}/${name}`);
    if (!cache || cache.stamp !== stamp) {
      const edgeObjs = this.objects.list<Edge>('Edge', project);
      const candidates = schedulableEdges(edgeObjs, runtimes);
      const selected = selectEdges(candidates, placement.spec);
      const byName = new Map(candidates.map((e) => [e.name, e]));
      const targets = new Map<string, Target[]>();
      const targetKeys = new Map<string, string>();
      for (const e of selected) {
        const edge = byName.get(e)!;
        const ts = workloads.map((w): Target => {
          const rules = placement.spec.customization;
          const r = customize(
            w.spec.manifests,
            { name: edge.name, labels: edge.labels, annotations: edge.annotations },
            rules,
            w.metadata.name,
          );
          const revision = (w.status as { revision?: number } | undefined)?.revision ?? 0;
          const withAccess = 'error' in r ? undefined : withRegistryAccess(this.secrets.box, registries, r.manifests);
          const error = 'error' in r ? r.error : this.secrets.cannotReceive(edge.name, withAccess!);
          if (error !== undefined)
            return {
              workload: w.metadata.name,
              revision,
              manifests: [],
              key: `error:${createHash('sha256').update(error).digest('hex').slice(0, 16)}`,
              error,
            };
          const manifests: Manifest[] = withAccess!;
          return { workload: w.metadata.name, revision, manifests, key: manifestHash(manifests) };
        });
        targets.set(e, ts);
        targetKeys.set(e, this.combinedKey(ts));
      }
      cache = { stamp, selected, targets, targetKeys };
      this.targetCache.set(`${project}/${name}`, cache);
    }
    const { selected, targets, targetKeys } = cache;

    // Another placement may already hold a workload on an edge (overlaps are refused at apply, but
    // an edge's labels can change later): the placement holding it keeps it, this one reports the
    // edge as blocked and never counts it ready. When the holder lets go, `released` re-plans this.
    const heldElsewhere = new Map(
      (
        cachedStatement(
          this.db,
          'SELECT edge, workload, placement FROM assignments WHERE project = ? AND placement <> ? AND workload IN (SELECT value FROM json_each(?))',
        ).all(project, name, JSON.stringify(placement.spec.workloads)) as {
          edge: string;
          workload: string;
          placement: string;
        }[]
      ).map((r) => [`${r.edge}/${r.workload}`, r.placement]),
    );

    const current = new Map<string, Assignment[]>();
    for (const a of before) (current.get(a.edge) ?? current.set(a.edge, []).get(a.edge)!).push(a);

    const statusRows = new Map(
      (
        cachedStatement(
          this.db,
          `SELECT s.edge, s.workload, s.observed_generation, s.phase FROM workload_status s JOIN assignments a ON a.edge = s.edge AND a.workload = s.workload WHERE a.project = ? AND a.placement = ?`,
        ).all(project, name) as { edge: string; workload: string; observed_generation: number; phase: string }[]
      ).map((r) => [`${r.edge}/${r.workload}`, r]),
    );

    const now = Date.now();
    const rolloutEdges: RolloutEdge[] = [];
    for (const e of selected) {
      let ts = targets.get(e)!;
      const cur = current.get(e) ?? [];
      let targetKey = targetKeys.get(e)!;
      const blocked: string[] = [];
      if (heldElsewhere.size) {
        for (const t of ts) {
          const holder = heldElsewhere.get(`${e}/${t.workload}`);
          if (holder) blocked.push(`${t.workload} (placement ${holder})`);
        }
        if (blocked.length) {
          // The edge's own part rolls out as usual: its target is what this placement may write.
          ts = ts.filter((t) => !heldElsewhere.has(`${e}/${t.workload}`));
          targetKey = ts.length ? this.combinedKey(ts) : 'blocked';
        }
      }
      const writtenKey = cur.length
        ? this.combinedKey(cur.map((a) => ({ workload: a.workload, key: a.contentKey })))
        : undefined;
      let observed: RolloutEdge['observed'];
      if (writtenKey && cur.length === ts.length) {
        let state: 'ready' | 'progressing' | 'failed' = 'ready';
        let observedState: 'paused' | undefined;
        for (const a of cur) {
          if (a.error) {
            state = 'failed';
            break;
          }
          const s = statusRows.get(`${e}/${a.workload}`);
          // Paused on site by a local intent: the edge holds what it has, whatever generation.
          if (s?.phase === 'Paused') {
            observedState = 'paused';
            break;
          }
          if (!s || s.observed_generation < a.generation) {
            state = 'progressing';
            continue;
          }
          if (s.phase === 'Failed' || s.phase === 'Degraded') {
            state = 'failed';
            break;
          }
          if (s.phase !== 'Ready') state = 'progressing';
        }
        observed = { key: writtenKey, state: observedState ?? state };
      }
      // Every workload of this edge held by another placement: nothing of this one to write or await.
      if (blocked.length && !ts.length) observed = { key: targetKey, state: 'ready' };
      const rt = runtimes.get(e);
      const online = isOnline(rt, now);
      const since = rt?.lastSeen ?? rt?.enrolledAt;
      rolloutEdges.push({
        edge: e,
        targetKey,
        writtenKey: blocked.length && !ts.length ? targetKey : writtenKey,
        observed,
        online,
        ...(online || since === undefined ? {} : { offlineForMs: now - since }),
        ...(blocked.length ? { blocked } : {}),
      });
    }
    const ackRow = cachedStatement(
      this.db,
      'SELECT acknowledged FROM rollouts WHERE project = ? AND placement = ?',
    ).get(project, name) as { acknowledged: string } | undefined;
    const acknowledged = ackRow ? (JSON.parse(ackRow.acknowledged) as Record<string, string>) : {};
    const plan = planRollout({
      placement: name,
      rollout: placement.spec.rollout,
      edges: rolloutEdges,
      acknowledgedFailures: acknowledged,
    });
    if (missingWorkloads.length) {
      // Refused at apply; a workload deleted later leaves the placement failed until it is back.
      plan.phase = 'Failed';
      plan.reason = `${missingWorkloads.length === 1 ? 'workload' : 'workloads'} ${missingWorkloads.join(', ')} not found in project ${project}: apply ${missingWorkloads.length === 1 ? 'it' : 'them'} or remove ${missingWorkloads.length === 1 ? 'it' : 'them'} from the placement; ${plan.reason}`;
    }
    this.armSkipTimer(project, name, placement, rolloutEdges, now);
    const prev = this.rolloutStatus.get(`${project}/${name}`);
    this.rolloutStatus.set(`${project}/${name}`, {
      phase: plan.phase,
      reason: plan.reason,
      counts: plan.counts,
      maxUnavailable: plan.maxUnavailable,
      paused: placement.spec.rollout.paused,
    });
    cachedStatement(
      this.db,
      'INSERT INTO rollouts (project, placement, phase, reason, acknowledged, updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(project, placement) DO UPDATE SET phase = excluded.phase, reason = excluded.reason, updated_at = excluded.updated_at',
    ).run(project, name, plan.phase, plan.reason, JSON.stringify(acknowledged), Date.now());
    if (prev && prev.phase !== plan.phase) {
      recordEvent(this.db, { project, kind: 'Placement', name, reason: `Rollout${plan.phase}`, message: plan.reason });
    }

    const write = new Set(plan.update);
    const byEdge = new Map(rolloutEdges.map((r) => [r.edge, r]));
    if (rolloutEdges.some((r) => r.writtenKey !== r.targetKey && !write.has(r.edge)))
      this.heldBack.add(`${project}/${name}`);
    else this.heldBack.delete(`${project}/${name}`);
    const tx = () =>
      inTransaction(this.db, () => {
        for (const e of selected) {
          const r = byEdge.get(e)!;
          // Already written exactly what it should run (equal keys: the same workloads with the same
          // content): nothing to do. Most edges on most passes, so this check comes first.
          if (r.writtenKey === r.targetKey) continue;
          if (!write.has(e)) continue; // the rollout holds this edge on what it has
          const cur = new Map((current.get(e) ?? []).map((a) => [a.workload, a]));
          for (const t of targets.get(e)!) {
            if (heldElsewhere.has(`${e}/${t.workload}`)) continue; // never taken over: see above
            const a = cur.get(t.workload);
            if (a && a.contentKey === t.key) continue;
            const observed =
              (
                cachedStatement(
                  this.db,
                  'SELECT observed_generation FROM workload_status WHERE edge = ? AND workload = ?',
                ).get(e, t.workload) as { observed_generation: number } | undefined
              )?.observed_generation ?? 0;
            const gen = Math.max(a?.generation ?? 0, observed) + 1;
            cachedStatement(
              this.db,
              `INSERT INTO assignments (edge, workload, project, placement, revision, content_key, generation, manifests, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT(edge, workload) DO UPDATE SET project = excluded.project, placement = excluded.placement, revision = excluded.revision, content_key = excluded.content_key, generation = excluded.generation, manifests = excluded.manifests, error = excluded.error`,
            ).run(e, t.workload, project, name, t.revision, t.key, gen, JSON.stringify(t.manifests), t.error ?? null);
            changed.add(e);
          }
          // Workloads the placement no longer names leave this edge.
          for (const a of cur.values()) {
            if (!targets.get(e)!.some((t) => t.workload === a.workload)) {
              cachedStatement(this.db, 'DELETE FROM assignments WHERE edge = ? AND workload = ?').run(e, a.workload);
              changed.add(e);
              this.release(project, a.workload, name);
            }
          }
        }
        // Edges no longer selected lose everything this placement gave them.
        const selectedSet = new Set(selected);
        for (const [e, as] of current) {
          if (selectedSet.has(e)) continue;
          for (const a of as) {
            cachedStatement(this.db, 'DELETE FROM assignments WHERE edge = ? AND workload = ? AND placement = ?').run(
              e,
              a.workload,
              name,
            );
            this.release(project, a.workload, name);
          }
          changed.add(e);
        }
      });
    tx();
    return [...changed];
  }

  /**
   * With `skipOfflineAfter` set, an offline edge the rollout still waits for is skipped once it has
   * been offline that long; nothing else happens at that moment, so a timer re-plans then.
   */
  private armSkipTimer(project: string, name: string, p: Placement, edges: RolloutEdge[], now: number): void {
    const key = `${project}/${name}`;
    clearTimeout(this.skipTimers.get(key));
    this.skipTimers.delete(key);
    const after = p.spec.rollout.skipOfflineAfter;
    if (after === undefined) return;
    const limit = skipOfflineAfterMs(after)!;
    let next = Infinity;
    for (const e of edges)
      if (e.offlineForMs !== undefined && e.offlineForMs <= limit && e.observed?.state !== 'ready')
        next = Math.min(next, limit - e.offlineForMs);
    if (next === Infinity) return;
    const t = setTimeout(() => this.markPlacement(project, name), next + 50);
    t.unref();
    this.skipTimers.set(key, t);
  }

  /** Writes an edge's spec document from its assignments (no-op when nothing differs). */
  writeSpec(edge: string): void {
    const rt = cachedStatement(this.db, 'SELECT name FROM edge_runtime WHERE name = ?').get(edge) as
      { name: string } | undefined;
    if (!rt) return;
    const e = edgeName(edge);
    const id = mailboxDocId(e, 'spec');
    const edgeObj = cachedStatement(this.db, "SELECT labels FROM objects WHERE kind = 'Edge' AND name = ?").get(
      edge,
    ) as { labels: string } | undefined;
    // The content key of every assignment stands for its manifests: labels plus these rows are
    // everything this writes, so an equal digest means the document already says it all (the
    // common case after a hub restart, which re-plans every edge) and it is not even loaded.
    const rows = cachedStatement(this.db, 'SELECT * FROM assignments WHERE edge = ? ORDER BY workload').all(
      edge,
    ) as AssignmentRow[];
    const digest = specDigest(edgeObj?.labels, rows);
    const written = cachedStatement(this.db, 'SELECT epoch, digest FROM spec_written WHERE edge = ?').get(edge) as
      { epoch: string; digest: string } | undefined;
    if (written && written.digest === digest && written.epoch === this.store.epoch(id)) return;
    ensureMailbox(this.store, e, 'hub');
    const labels = edgeObj?.labels ?? '{}';
    // Secret values leave the hub's key here and are sealed to this edge's: the document and its
    // history hold only what this edge can open (hub/secrets.ts).
    const workloads = rows.map(fromRow).map((a) => {
      const w = {
        name: a.workload,
        generation: a.generation,
        revision: a.revision,
        manifests: a.manifests,
        error: a.error,
      };
      if (a.error !== undefined) return w;
      try {
        return { ...w, manifests: this.secrets.sealForEdge(edge, a.manifests) };
      } catch (err) {
        log.error({ err, edge, workload: a.workload }, 'cannot seal Secrets for an edge');
        return { ...w, manifests: [], error: `the hub cannot seal this workload's Secrets: ${(err as Error).message}` };
      }
    });
    // Through the document's backend (core/mailbox.ts writeSpecTo): the hub never reads its spec
    // documents back, so no JS view is built for them on every write.
    this.store.changeBackend(id, (b) => writeSpecTo(b, JSON.parse(labels) as Record<string, string>, workloads));
    // Recorded after the change (in the same transaction when drainSpecs batches): a crash in
    // between only costs one more no-op pass, never a digest that claims content the document lacks.
    cachedStatement(
      this.db,
      'INSERT INTO spec_written (edge, epoch, digest) VALUES (?, ?, ?) ON CONFLICT(edge) DO UPDATE SET epoch = excluded.epoch, digest = excluded.digest',
    ).run(edge, this.store.epoch(id), digest);
  }

  /** `outpost rollout resume`: accept the current failures and go on. */
  resume(project: string, name: string): void {
    const placement = this.objects.get<Placement>('Placement', project, name);
    if (!placement) return;
    // Recompute the failures now and store them as acknowledged.
    const before = assignmentsForPlacement(this.db, project, name);
    const failures: Record<string, string> = {};
    const byEdge = new Map<string, Assignment[]>();
    for (const a of before) (byEdge.get(a.edge) ?? byEdge.set(a.edge, []).get(a.edge)!).push(a);
    for (const [e, as] of byEdge) {
      const failed = as.some((a) => {
        if (a.error) return true;
        const s = cachedStatement(
          this.db,
          'SELECT observed_generation, phase FROM workload_status WHERE edge = ? AND workload = ?',
        ).get(e, a.workload) as { observed_generation: number; phase: string } | undefined;
        return !!s && s.observed_generation >= a.generation && (s.phase === 'Failed' || s.phase === 'Degraded');
      });
      if (failed)
        failures[e] = createHash('sha256')
          .update(
            as
              .map((a) => `${a.workload}=${a.contentKey}`)
              .sort()
              .join('\n'),
          )
          .digest('hex')
          .slice(0, 16);
    }
    this.db
      .prepare(
        "INSERT INTO rollouts (project, placement, phase, reason, acknowledged, updated_at) VALUES (?, ?, 'Progressing', 'resumed', ?, ?) ON CONFLICT(project, placement) DO UPDATE SET acknowledged = excluded.acknowledged, updated_at = excluded.updated_at",
      )
      .run(project, name, JSON.stringify(failures), Date.now());
    this.markPlacement(project, name);
  }
}
