/**
 * @module Hub replicas on one PostgreSQL (issue #22; docs/architecture.md, "Hub replicas").
 *
 * - **One planner.** The replica holding a session advisory lock is the leader: only it runs the
 *   scheduler's passes, so rollout limits (`maxUnavailable`, the failure threshold) count the whole
 *   fleet. The others send it what they mark (placements, edges, status) over the bus (bus.ts).
 *   When the leader's session ends (the process died, its connection broke) PostgreSQL frees the
 *   lock and the next replica to ask takes it and plans everything again from the tables.
 * - **Each spec document written by the replica that serves its edge.** The leader's pass records
 *   assignments in the tables and names the edges it touched on the bus; each replica writes the
 *   documents of the edges connected to it (hub/scheduler/spec-writer.ts), and an edge that
 *   connects is written before its handshake is answered.
 *   A new leader tells the others so, and each writes the specs of its edges that do not hold what
 *   the tables say: the old leader may have died between recording a pass and naming its edges.
 * - **Everyone hears everything** for the API's change stream: objects written and statuses
 *   reported on another replica; and API tokens revoked on another replica, whose open streams
 *   here end at once.
 *
 * Sends are gathered (PG_GATHER, longer while they keep coming) and go with the client's next
 * round trip (sent again by it when the database was away); a session that comes back after a
 * loss may have missed messages, so the replica reads the tables again (`onResync`).
 *
 * - **Connections a dead replica left open end** (issue #42): the leader ends them at the time the
 *   dead one's lease expired (`renewMembership`), so no edge looks connected through a replica that
 *   is gone and its connection history never overlaps. A replica that could not renew for longer
 *   than its lease (its database was away) may have been taken for dead: it closes the connections
 *   the tables no longer say it serves, and those edges come back recorded anew.
 */
import { PG_GATHER, REPLICA_PING_MS, REPLICA_RETRY_MS } from '../../core/durations.js';
import { GatherPace } from '../../core/gather.js';
import { recordReplicaGone, replicaDiedReason } from '../edges/history.js';
import type { HubState } from '../state/index.js';
import { leaseRenewMs, type EdgeLeases } from '../state/leases.js';
import { LEADER_LOCK, sessionName, type HubReplicas } from '../state/replicas.js';
import { edgeName, isValidName, mailboxDocId } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import type { ChangeFeed } from '../changes/feed.js';
import type { TokenStreams } from '../auth/token-streams.js';
import type { Scheduler, SchedulerPeers } from '../scheduler/index.js';
import type { ReplicaSessionEvent, SyncPostgres } from '../state/pg/sync-client.js';
import { CHANNEL, parsePayload, publish, type BusMessage } from './bus.js';

const log = createLogger('hub:replicas');

export { LEADER_LOCK };

export interface ReplicaHooks {
  /** Whether this process serves the edge now (its connection is here). */
  holds(edge: string): boolean;
  /** The edges this process serves now. */
  served(): Iterable<string>;
  /** A message another replica sent. */
  onMessage(m: BusMessage): void;
  /** This process became the leader (true) or stopped being it (false). */
  onLeader(leading: boolean): void;
  /** The session is back after a loss: messages may have been missed; read the tables again. */
  onResync(): void;
}

type ListKind = 'placements' | 'edges' | 'specs' | 'report' | 'connectivity';

export class Replicas implements SchedulerPeers {
  private leader = false;
  private lostSession = false;
  private readonly lists: Record<ListKind, Set<string>> = {
    placements: new Set(),
    edges: new Set(),
    specs: new Set(),
    report: new Set(),
    connectivity: new Set(),
  };
  private readonly singles: BusMessage[] = [];
  private flushing: NodeJS.Timeout | undefined;
  private readonly pace = new GatherPace(PG_GATHER);
  private closed = false;

  constructor(
    private readonly pg: SyncPostgres,
    /** This process, as the others see it (the edge leases' replica id). */
    readonly id: string,
    private readonly hooks: ReplicaHooks,
  ) {}

  get leading(): boolean {
    return this.leader;
  }

  holds(edge: string): boolean {
    return this.hooks.holds(edge);
  }

  served(): Iterable<string> {
    return this.hooks.served();
  }

  start(): void {
    this.pg.startSession(
      {
        channel: CHANNEL,
        leaderKey: LEADER_LOCK,
        pingMs: REPLICA_PING_MS,
        retryMs: REPLICA_RETRY_MS,
        // Who holds the leader's lock, in pg_stat_activity (hub/state/replicas.ts `list`).
        name: sessionName(this.id),
      },
      (e) => this.onSession(e),
    );
  }

  /** Queues a message for the other replicas (sent within PG_GATHER, with what else was queued by then). */
  send(m: BusMessage): void {
    if (this.closed) return;
    switch (m.t) {
      case 'placements':
        for (const k of m.keys) this.lists.placements.add(k);
        break;
      case 'edges':
      case 'specs':
        for (const e of m.edges) this.lists[m.t].add(e);
        break;
      case 'status':
        for (const e of m.edges) this.lists[m.cause].add(e);
        break;
      default:
        this.singles.push(m);
    }
    this.flushing ??= setTimeout(() => this.flush(), this.pace.nextMs);
  }

  /** Stops sending (the hub closes); its session ends with the database client. */
  close(): void {
    this.closed = true;
    clearTimeout(this.flushing);
  }

  private flush(): void {
    this.flushing = undefined;
    const out: BusMessage[] = [...this.singles];
    const { placements, edges, specs, report, connectivity } = this.lists;
    if (placements.size) out.push({ t: 'placements', keys: [...placements] });
    if (edges.size) out.push({ t: 'edges', edges: [...edges] });
    if (specs.size) out.push({ t: 'specs', edges: [...specs] });
    if (report.size) out.push({ t: 'status', cause: 'report', edges: [...report] });
    if (connectivity.size) out.push({ t: 'status', cause: 'connectivity', edges: [...connectivity] });
    this.pace.taken(this.singles.length + Object.values(this.lists).reduce((n, s) => n + s.size, 0));
    // Deferred (SyncPostgres.defer): the notifications go with the next statement, or within
    // PG_GATHER, instead of a transaction of their own (three round trips a turn); the client
    // sends them again when the database was away.
    for (const m of out) publish(this.pg, this.id, m);
    this.singles.length = 0;
    for (const s of Object.values(this.lists)) s.clear();
  }

  private onSession(e: ReplicaSessionEvent): void {
    if (this.closed) return;
    if ('notify' in e) {
      const msg = parsePayload(e.notify);
      if (msg && msg.from !== this.id) this.hooks.onMessage(msg.m);
    } else if ('leader' in e) {
      if (e.leader === this.leader) return;
      this.leader = e.leader;
      log.info(
        { replica: this.id },
        e.leader ? 'this hub replica now plans the fleet (leader)' : 'this hub replica no longer plans the fleet',
      );
      this.hooks.onLeader(e.leader);
      if (e.leader) this.send({ t: 'leader' });
    } else if ('down' in e) {
      this.lostSession = true;
      log.warn({ error: e.error }, 'lost the replica session to the database; connecting again');
    } else if ('up' in e && this.lostSession) {
      this.lostSession = false;
      log.info('the replica session is back: reading what may have been missed from the tables');
      this.hooks.onResync();
    }
  }
}

/** What the replica wiring needs of the hub (hub/hub.ts). */
export interface ReplicaWiring {
  pg: SyncPostgres;
  /** This process's replica id (the edge leases'). */
  id: string;
  scheduler: Scheduler;
  /** Whether an edge's connection is on this process. */
  connected(edge: string): boolean;
  /** The edges connected to this process. */
  connections(): string[];
  changes: ChangeFeed;
  /** The open streams of API tokens: another replica revoked some; after a lost session, read them all again. */
  tokens: Pick<TokenStreams, 'revoked' | 'recheck'>;
  /** Another replica wrote an object of this kind (controllers that tick may go at once). */
  objectWritten(kind: string): void;
}

/**
 * Joins this hub process to its replicas: the scheduler plans only while leading, every replica
 * writes the specs of the edges it serves, and what others write or hear reaches the change stream.
 */
export function startReplicas(w: ReplicaWiring): Replicas {
  const { scheduler, changes } = w;
  const replicas = new Replicas(w.pg, w.id, {
    holds: w.connected,
    served: w.connections,
    onLeader: () => scheduler.leadershipChanged(),
    onResync: () => {
      scheduler.markAll();
      w.tokens.recheck();
    },
    onMessage: (m) => {
      switch (m.t) {
        case 'object':
          changes.notify(m.project, 'objects');
          w.objectWritten(m.kind);
          break;
        case 'placements':
          if (scheduler.leading)
            for (const key of m.keys) {
              const [project, name] = key.split('/') as [string, string];
              if (project && name) scheduler.markPlacement(project, name);
            }
          break;
        case 'edges':
          // Only the leader: a replica that does not plan would send them on again.
          if (scheduler.leading) for (const e of m.edges) scheduler.markEdge(e);
          break;
        case 'status':
          for (const e of m.edges) scheduler.planStatus(e, m.cause);
          if (changes.subscribers)
            for (const e of m.edges) if (isValidName(e)) changes.notifyDoc(mailboxDocId(edgeName(e), 'report'));
          break;
        case 'specs':
          scheduler.specsChanged(m.edges);
          break;
        case 'leader':
          scheduler.rewriteStaleSpecs();
          break;
        case 'revoked':
          w.tokens.revoked(m.tokens);
          break;
      }
    },
  });
  scheduler.usePeers(replicas);
  replicas.start();
  return replicas;
}

/** What renewing this replica's membership needs (hub/hub.ts). */
export interface Membership {
  /** Only with replicas on PostgreSQL: a SQLite hub serves every edge of its file. */
  leases: EdgeLeases | undefined;
  registry: HubReplicas;
  /** How long this replica's leases and row last unrenewed (`--replica-lease`); renewed thrice in it. */
  leaseMs: number;
  /** The connection history: the leader ends what dead replicas left open there. */
  state: HubState;
  /** The edges connected to this process. */
  connections(): string[];
  /** Closes this process's connection of an edge another replica took since. */
  replaced(edge: string): void;
  /** Closes these connections of this process: after `awayMs` without renewing, the tables no longer have them. */
  leaseLost(edges: string[], awayMs: number): void;
  /** Whether this replica plans (the leader ends the connections of dead replicas). */
  leading(): boolean;
  /** The URL the other replicas reach this one at (known once it listens). */
  advertiseUrl(): string;
}

/**
 * Three times per lease (leaseRenewMs): renews this replica's edge leases in one statement and closes its own,
 * older connection of each edge another replica took since (hub/state/leases.ts); renews its row
 * in hub_replicas, registering again if it expired (the database was away); the leader ends the
 * connections dead replicas left open. Failures are logged and tried again at the next tick.
 */
export function renewMembership(m: Membership): NodeJS.Timeout {
  let renewedAt = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    try {
      for (const edge of m.leases?.renew(m.connections(), now) ?? []) m.replaced(edge);
    } catch (err) {
      log.warn({ err }, 'could not renew the edge leases (retried)');
    }
    try {
      const url = m.advertiseUrl();
      if (url && !m.registry.renew(now)) m.registry.register(url, now);
      // Away past the lease: the leader may have ended this replica's connections in the tables
      // (it does when this replica's session was gone too); those it did are closed, to come back.
      if (m.leases && now - renewedAt > m.leaseMs) {
        const recorded = new Set(m.state.edges.connectedVia(m.registry.self));
        const lost = m.connections().filter((e) => !recorded.has(e));
        if (lost.length) {
          log.warn(
            { edges: lost.length, awayMs: now - renewedAt },
            'this hub replica could not renew past its lease, and its connections were ended in the tables meanwhile: closing them (the edges come back)',
          );
          m.leaseLost(lost, now - renewedAt);
        }
      }
      renewedAt = now;
    } catch (err) {
      log.warn({ err }, "could not renew this replica's row in hub_replicas (retried)");
    }
    if (m.leases && m.leading())
      try {
        endDeadReplicas(m.state, m.registry, now);
      } catch (err) {
        log.warn({ err }, 'could not end the connections of dead hub replicas (retried)');
      }
  }, leaseRenewMs(m.leaseMs));
  timer.unref();
  return timer;
}

/**
 * Ends the connections that replicas which died left open, once their lease expired: those with
 * no session and an expired row (a replica paused, or slow to renew, keeps its session and its
 * connections), or no row at all (gone for a day). Rows without a replica are left to the edges'
 * next connections: a replica of an older version may still be writing them.
 */
export function endDeadReplicas(state: HubState, registry: HubReplicas, now = Date.now()): void {
  const open = state.edges.openReplicas().filter((r): r is string => r !== null && r !== registry.self);
  if (!open.length) return;
  const rows = new Map(registry.list(now).map((r) => [r.id, r]));
  for (const id of open) {
    const r = rows.get(id);
    if (r && (r.session || r.expiresAt > now)) continue;
    const n = recordReplicaGone(state, id, r?.expiresAt, replicaDiedReason(id, r?.url));
    log.warn({ replica: id, edges: n }, 'a hub replica died: ended the connections it left open');
  }
}

/**
 * A SQLite hub is the only one of its file: the connections its earlier runs left open (a kill, a
 * crash) end, at the end of their lease (never after now), and their rows go.
 */
export function endEarlierRuns(state: HubState, registry: HubReplicas, now = Date.now()): void {
  const rows = new Map(registry.list(now).map((r) => [r.id, r]));
  for (const id of state.edges.openReplicas()) {
    if (id === registry.self) continue;
    const r = id === null ? undefined : rows.get(id);
    const n = recordReplicaGone(
      state,
      id,
      r ? Math.min(r.expiresAt, now) : undefined,
      `the hub${id === null ? '' : ` (${id})`} stopped without recording it: killed, or it crashed`,
    );
    if (n) log.info({ replica: id, edges: n }, "ended the connections the hub's last run left open");
  }
  for (const id of rows.keys()) if (id !== registry.self) registry.forget(id);
}
