/**
 * @module The whole life of an edge on the hub, in one place: enrollment (join token), approval,
 * labels, drain and uncordon, decommission, clearing intents made on site; then its connections:
 * connect and disconnect (with their history, hub/edges/history.ts), heartbeats recorded in
 * batches, the periodic scan for edges that went quiet, and history retention. The API routes
 * (hub/api/edges.ts) keep only HTTP; the sync server's hooks call straight in here.
 *
 * Every change is one transaction of the hub's state; the scheduler hears of it after commit.
 */
import { OFFLINE_AFTER_MS } from '../../core/durations.js';
import { OutpostError } from '../../core/errors.js';
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { readReport, readSpec, type ReportDoc, type SpecDoc } from '../../core/mailbox.js';
import { API_VERSION, type Edge, type Inventory, type Labels } from '../../core/resources.js';
import type { ReplicaStore } from '../../sync/store.js';
import { enrollLabels, type JoinGrant } from '../auth/join-tokens.js';
import type { ObjectStore } from '../objects.js';
import type { HubState } from '../state/index.js';
import {
  pruneHistory,
  recordConnects,
  recordDisconnects,
  recordHubStop,
  type ConnectionFacts,
  type DisconnectionFacts,
  type PeerLookup,
} from './history.js';

const log = createLogger('hub:edges');

/**
 * Heartbeats are recorded in batches: one UPDATE per heartbeat, each its own commit, was ~0.3 ms
 * of hub CPU apiece, and 10,000 edges send 1,000 a second. last_seen lags at most this long,
 * against an offline threshold of three heartbeat intervals.
 */
export const HEARTBEAT_FLUSH_MS = 1_000;
/** History retention runs at start and this often (hub/edges/history.ts). */
export const PRUNE_INTERVAL_MS = 10 * 60_000;

export interface EnrollRequest {
  joinToken: string;
  name: string;
  labels?: Labels;
  inventory?: Inventory;
  sealKey?: string;
}

export interface EdgeLifecycleDeps {
  state: HubState;
  objects: ObjectStore;
  store: ReplicaStore;
  /** What the scheduler must hear: an edge's labels, approval or existence changed; or its status. */
  scheduler: { markEdge(name: string): void; markStatus(name: string, cause?: 'report' | 'connectivity'): void };
  /**
   * Every module of the hub forgets a decommissioned edge (hub/module.ts): the order engine's
   * kinds (the workloads' assignments and status among them) and the rest.
   */
  modules: { forgetEdge(edge: string): void };
  credentials: {
    /** Throws OutpostError('unauthorized', why) when expired, used up or unknown. */
    consumeJoinToken(token: string): JoinGrant;
    issueEdgeCredential(edge: string, sealKey?: string): string;
    decommissionEdgeCredential(edge: string): void;
  };
  /** Closes an edge's live connection (decommission). */
  disconnect(edge: string, message: string): void;
  requireApproval: boolean;
  /** Reads ahead what recording these edges' disconnections reads (hub/state/index.ts `prefetchDisconnects`). */
  readAheadDisconnects?(edges: string[]): void;
  /** This hub process among the replicas (hub/state/replicas.ts newReplicaId): its connections are its own. */
  replica: string;
  /** Whether another replica is alive, for the reason an edge's last connection there ended (hub/replicas/directory.ts). */
  peer?: PeerLookup;
}

export class EdgeLifecycle {
  private readonly seen = new Map<string, number>();
  /** Connections ended in this turn, recorded together at its end (`flushDisconnections`). */
  private ended: DisconnectionFacts[] = [];
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(private readonly deps: EdgeLifecycleDeps) {}

  /** The Edge object; not_found when the project holds no such edge. */
  get(project: string, name: string): Edge {
    const e = this.deps.objects.get<Edge>('Edge', project, name);
    if (!e) throw new OutpostError('not_found', `edge ${name} not found in project ${project}`);
    return e;
  }

  /**
   * Enrolls an edge with a join token. The token is consumed in the same transaction that creates
   * the edge: a failed enrollment gives the use back. It is checked before the name, so only a
   * token holder learns whether a name is taken.
   */
  enroll(req: EnrollRequest): { edge: string; project: string; credential: string; approved: boolean } {
    const { state, objects, credentials } = this.deps;
    const approved = !this.deps.requireApproval;
    const out = state.transaction(
      () => {
        const grant = credentials.consumeJoinToken(req.joinToken);
        if (state.edges.exists(req.name)) {
          throw new OutpostError(
            'conflict',
            `edge ${req.name} is already enrolled: start the agent with its existing data directory, or decommission it first (outpost edge decommission ${req.name}) to enroll it again`,
          );
        }
        const labels = enrollLabels(grant, req.labels);
        objects.apply(
          {
            apiVersion: API_VERSION,
            kind: 'Edge',
            metadata: { name: req.name, project: grant.project, labels, annotations: {} },
            spec: { unschedulable: false },
          } as Edge,
          { update: false, actor: 'enrollment' },
        );
        state.edges.enroll({ name: req.name, project: grant.project, approved, at: Date.now() });
        if (req.inventory) state.edges.storeInventory(req.name, req.inventory);
        state.events.record({
          project: grant.project,
          kind: 'Edge',
          name: req.name,
          reason: 'Enrolled',
          message: `edge ${req.name} enrolled${approved ? '' : ', waiting for approval (outpost edge approve ' + req.name + ')'}`,
        });
        return {
          edge: req.name,
          project: grant.project,
          credential: credentials.issueEdgeCredential(req.name, req.sealKey),
          approved,
        };
      },
      // Another hub process on the same file (a restore, a test) must not enroll the same token twice.
      { immediate: true },
    );
    log.info({ edge: req.name, project: out.project, approved }, 'edge enrolled');
    this.deps.scheduler.markEdge(req.name);
    return out;
  }

  approve(project: string, name: string, actor: string): Edge {
    const e = this.get(project, name);
    this.deps.state.transaction(() => {
      this.deps.state.edges.approve(name);
      this.deps.state.events.record({
        project,
        kind: 'Edge',
        name,
        reason: 'Approved',
        message: `edge ${name} approved by ${actor}`,
      });
    });
    this.deps.scheduler.markEdge(name);
    return e;
  }

  /** Sets (a string) or removes (null) labels; the scheduler hears of it through the object change. */
  label(project: string, name: string, changes: Record<string, string | null>, actor: string): Edge {
    const e = this.get(project, name);
    const labels = { ...e.metadata.labels };
    for (const [k, v] of Object.entries(changes)) {
      if (v === null) delete labels[k];
      else labels[k] = v;
    }
    return this.deps.objects.apply(
      { ...e, metadata: { ...e.metadata, resourceVersion: undefined, labels } },
      { create: false, actor },
    ).object as Edge;
  }

  /** Drain (unschedulable: its workloads are removed) or uncordon (schedulable again). */
  setUnschedulable(project: string, name: string, unschedulable: boolean, actor: string): Edge {
    const { state, objects } = this.deps;
    const e = this.get(project, name);
    return state.transaction(() => {
      const r = objects.apply(
        { ...e, metadata: { ...e.metadata, resourceVersion: undefined }, spec: { ...e.spec, unschedulable } },
        { create: false, actor },
      );
      state.events.record({
        project,
        kind: 'Edge',
        name,
        reason: unschedulable ? 'Drained' : 'Uncordoned',
        message: `edge ${name} ${unschedulable ? 'drained: its workloads are being removed' : 'schedulable again'}`,
      });
      return r.object as Edge;
    });
  }

  /** Revokes the credential, closes the connection and forgets the edge: mailbox, assignments, status. */
  decommission(project: string, name: string, actor: string): void {
    const { state, store, objects } = this.deps;
    this.get(project, name);
    this.deps.credentials.decommissionEdgeCredential(name);
    this.deps.disconnect(name, `edge ${name} was decommissioned: its credential is revoked`);
    state.transaction(() => {
      store.delete(mailboxDocId(edgeName(name), 'spec'));
      store.delete(mailboxDocId(edgeName(name), 'report'));
      this.deps.modules.forgetEdge(name);
      state.edges.remove(name);
      objects.forget('Edge', project, name);
      state.events.record({
        project,
        kind: 'Edge',
        name,
        reason: 'Decommissioned',
        message: `edge ${name} decommissioned by ${actor}: credential revoked, mailbox forgotten`,
      });
    });
    this.deps.scheduler.markEdge(name);
  }

  /** Clears the intents made on site for a workload, up to the newest the hub has seen. */
  clearIntents(project: string, name: string, workload: string, actor: string): { cleared: number; upTo?: number } {
    const { store, state } = this.deps;
    const en = edgeName(this.get(project, name).metadata.name);
    const report = store.get<ReportDoc>(mailboxDocId(en, 'report'));
    const spec = store.get<SpecDoc>(mailboxDocId(en, 'spec'));
    if (!report || !spec) throw new OutpostError('not_found', `edge ${en} has not synced yet`);
    const intents = readReport(report).intents.filter((i) => i.workload === workload);
    const upTo = intents.reduce((m, i) => Math.max(m, i.seq), 0);
    if (upTo <= (readSpec(spec).intentsCleared[workload] ?? 0)) return { cleared: 0 };
    store.change<SpecDoc>(mailboxDocId(en, 'spec'), (d) => {
      d.intentsCleared[workload] = upTo;
    });
    state.events.record({
      project,
      kind: 'Edge',
      name: en,
      reason: 'IntentsCleared',
      message: `local intents for ${workload} up to #${upTo} cleared by ${actor}`,
    });
    return { cleared: intents.length, upTo };
  }

  /**
   * The sync server accepted connections (those of one turn's handshakes: one transaction, a
   * reconnect storm is thousands). Called from the sync server's socket events (`recordBatch`).
   */
  connected(conns: ConnectionFacts[]): void {
    // An edge's earlier connection that ended is recorded before its new one.
    this.flushDisconnections();
    this.recordBatch(conns, (list) => recordConnects(this.deps.state, list, Date.now(), this.deps.peer), 'connection');
  }

  /**
   * A connection ended: recorded at the end of this turn with the others that ended in it (a
   * replica or a link going down ends thousands at once: one transaction and, on PostgreSQL, one
   * read ahead for all of them, instead of a round trip each blocking the hub).
   */
  disconnected(d: DisconnectionFacts): void {
    if (!this.ended.length) setImmediate(() => this.flushDisconnections());
    this.ended.push(d);
  }

  /** Records the connections that ended and were not recorded yet. */
  flushDisconnections(): void {
    const list = this.ended;
    if (!list.length) return;
    this.ended = [];
    try {
      this.deps.readAheadDisconnects?.(list.map((d) => d.edge));
    } catch (err) {
      // Only a read ahead: the record reads what it needs itself (and says why it cannot).
      log.debug({ err }, 'could not read ahead for the disconnections');
    }
    this.recordBatch(list, (l) => recordDisconnects(this.deps.state, l), 'disconnection');
  }

  /**
   * Records a batch in one transaction; a failure to record (the hub's database away) is logged,
   * not thrown into the event loop (the next connection of the edge records anew). A batch refused
   * for another reason is recorded edge by edge, so one edge's failure costs only its own record.
   */
  private recordBatch<T extends { edge: string }>(list: T[], record: (list: T[]) => void, what: string): void {
    try {
      record(list);
    } catch (err) {
      const unavailable = err instanceof OutpostError && err.code === 'unavailable';
      if (unavailable || list.length === 1)
        log.warn({ err, edges: list.map((x) => x.edge) }, `could not record the ${what}s`);
      else
        for (const x of list)
          try {
            record([x]);
          } catch (e) {
            log.warn({ err: e, edge: x.edge }, `could not record the ${what}`);
          }
    }
    for (const x of list) this.deps.scheduler.markStatus(x.edge, 'connectivity');
  }

  /** Remembered now, recorded with the next batch (HEARTBEAT_FLUSH_MS). */
  heartbeat(edge: string, at = Date.now()): void {
    this.seen.set(edge, at);
  }

  /** Records the heartbeats received since the last flush, in one transaction. */
  flushHeartbeats(): void {
    if (this.seen.size === 0) return;
    const batch = [...this.seen];
    this.seen.clear();
    try {
      this.deps.state.transaction(() => this.deps.state.edges.touch(batch));
    } catch (err) {
      log.warn({ err, edges: batch.length }, 'could not record heartbeats (retried with the next ones)');
      for (const [edge, at] of batch) if (!this.seen.has(edge)) this.seen.set(edge, at);
    }
  }

  /** Rollouts and Stale states depend on time passing: edges that went quiet are re-planned. */
  scanQuiet(now = Date.now()): string[] {
    let quiet: string[];
    try {
      quiet = this.deps.state.edges.quietSince(now - OFFLINE_AFTER_MS);
    } catch (err) {
      log.warn({ err }, 'could not look for edges gone quiet; looked for again shortly');
      return [];
    }
    for (const name of quiet) this.deps.scheduler.markStatus(name, 'connectivity');
    return quiet;
  }

  /** Deletes events and connection history past retention; logs and goes on when it fails. */
  prune(): void {
    try {
      const n = pruneHistory(this.deps.state);
      if (n.events || n.connections) log.info(n, 'pruned events and connection history past retention');
    } catch (err) {
      log.warn({ err }, 'pruning history failed; retried in 10 minutes');
    }
  }

  /** Starts the heartbeat flush, the quiet-edge scan and retention (at once, then periodically). */
  start(): void {
    this.prune();
    const every = (ms: number, fn: () => void) => {
      const t = setInterval(fn, ms);
      t.unref();
      this.timers.push(t);
    };
    every(HEARTBEAT_FLUSH_MS, () => this.flushHeartbeats());
    every(PRUNE_INTERVAL_MS, () => this.prune());
    every(OFFLINE_AFTER_MS / 3, () => this.scanQuiet());
  }

  /**
   * Stops the timers, records the last heartbeats, and ends this replica's open connections in the
   * tables, saying `why` (the signal, e.g.): one statement each, not one transaction and event per
   * edge (the sync server skips onDisconnect while closing). Returns how many edges were connected.
   */
  stop(why?: string): number {
    for (const t of this.timers.splice(0)) clearInterval(t);
    this.flushHeartbeats();
    this.flushDisconnections();
    const n = recordHubStop(this.deps.state, this.deps.replica, why);
    if (n > 0) log.info({ edges: n }, 'hub stopping: edges disconnected');
    return n;
  }
}
