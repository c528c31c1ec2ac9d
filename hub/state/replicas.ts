/**
 * @module The hub replicas sharing one PostgreSQL (issue #22; docs/tunnel.md, "Across hub
 * replicas"): each running hub process has a row with the URL the other replicas reach it at, so a
 * tunnel request for an edge another replica serves (hub/state/leases.ts) is forwarded there. A row
 * is renewed with the leases and deleted when its replica stops; a replica that died leaves a row
 * that expires like its leases. The forwarding key signs requests one replica forwards to another
 * (hub/tunnel/forward.ts): made once by the first replica, the same for all of them.
 *
 * The rows are also what `outpost get replicas` shows (issue #42): a SQLite hub has one, its own.
 * On PostgreSQL, whether a replica is alive and which one plans are read from the database's own
 * view of the replicas' sessions (`pg_stat_activity`, `pg_locks`): a replica killed -9 loses its
 * session at once, while its row takes the lease time to expire.
 *
 * | table | |
 * |---|---|
 * | hub_replicas | id, url, started_at, expires_at, renewed_at |
 * | hub_forward_key | one row: the key replicas sign forwarded requests with |
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { REPLICA_ROW_KEPT_MS } from '../../core/durations.js';
import { LEASE_TTL_MS } from './leases.js';
import { all, isPostgres, migrateTables, one, run, type SqlDb } from './sql.js';

/** The advisory lock whose holder plans (any constant distinct from the migrations' lock): hub/replicas/. */
export const LEADER_LOCK = 0x6f75747072; // "outpr"

/**
 * The application_name of a replica's database session (hub/replicas/ `Replicas.start`), by which
 * PostgreSQL's views name it: at most 63 bytes, as PostgreSQL keeps (ids are ASCII).
 */
export function sessionName(id: string): string {
  return `outpost-hub ${id}`.slice(0, 63);
}

/**
 * The id of this hub process among the replicas: the one place it is made (edge_leases.replica
 * and hub_replicas.id hold it). Host and pid say where to look; the random part tells a restarted
 * process from the one before it with the same pid.
 */
export function newReplicaId(): string {
  return `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/**
 * Where the other replicas reach a hub that serves `url`, listening on `host`: that URL when it
 * listens on one address, else this machine's name (its hub-made certificate names it too).
 */
export function advertiseUrlOf(host: string, url: string, proto: 'http' | 'https', port: number): string {
  return host === '0.0.0.0' || host === '::' ? `${proto}://${os.hostname()}:${port}` : url;
}

/** `--advertise-url`, checked: an http(s) URL of a host and port, nothing after them. */
export function parseAdvertiseUrl(s: string): string {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw new Error(
      `--advertise-url ${s}: not a URL; give the URL other hub replicas reach this one at, e.g. https://hub-1.internal:7443`,
    );
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.pathname !== '/' || u.search || u.hash || u.username)
    throw new Error(
      `--advertise-url ${s}: give only https://HOST:PORT (http:// with --insecure-http), no path, query or credentials`,
    );
  return u.origin;
}

export interface HubReplica {
  id: string;
  url: string;
  startedAt: number;
  expiresAt: number;
}

/** A replica as `outpost get replicas` shows it. */
export interface ReplicaState extends HubReplica {
  renewedAt: number;
  /** Its database session is there (on PostgreSQL; on SQLite: it is this hub). */
  session: boolean;
  /** Its row has not expired and its session is there. */
  alive: boolean;
  /** It holds the planning lock (on SQLite: the one hub). */
  leader: boolean;
}

interface Row {
  id: string;
  url: string;
  started_at: number;
  expires_at: number;
}

const toReplica = (r: Row): HubReplica => ({
  id: r.id,
  url: r.url,
  startedAt: Number(r.started_at),
  expiresAt: Number(r.expires_at),
});

/**
 * Every replica with whether its session is there and whether it holds the planning lock, from
 * PostgreSQL's views of its own sessions (of this database only: other databases on the server
 * may have hubs of their own). A bigint advisory key shows as classid (high 32 bits) and objid.
 */
const PG_LIST = `
  SELECT r.id, r.url, r.started_at, r.expires_at, r.renewed_at,
    EXISTS (SELECT 1 FROM pg_stat_activity a
            WHERE a.datname = current_database() AND a.application_name = left('outpost-hub ' || r.id, 63)) AS session,
    EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
              AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND l.classid::bigint * 4294967296 + l.objid::bigint = ?
              AND a.application_name = left('outpost-hub ' || r.id, 63)) AS leader
  FROM hub_replicas r ORDER BY r.started_at, r.id`;

export class HubReplicas {
  constructor(
    private readonly db: SqlDb,
    /** This process (newReplicaId). */
    readonly self: string,
    /** How long its row lasts unrenewed: its lease (`--replica-lease`). */
    readonly ttlMs = LEASE_TTL_MS,
  ) {
    migrateTables(db, 'hub-replicas');
  }

  /**
   * This replica is up and reachable at `url` (its advertise URL). The rows of replicas that died
   * long ago go at the same time: each start of a hub process adds a row (a new id).
   */
  register(url: string, now = Date.now()): void {
    run(this.db, 'DELETE FROM hub_replicas WHERE expires_at < ?', now - REPLICA_ROW_KEPT_MS);
    run(
      this.db,
      `INSERT INTO hub_replicas (id, url, started_at, expires_at, renewed_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET url = excluded.url, expires_at = excluded.expires_at, renewed_at = excluded.renewed_at`,
      this.self,
      url,
      now,
      now + this.ttlMs,
      now,
    );
  }

  /** Renewed with the leases (LEASE_RENEW_MS); false when the row was gone (then call register again). */
  renew(now = Date.now()): boolean {
    return (
      run(
        this.db,
        'UPDATE hub_replicas SET expires_at = ?, renewed_at = ? WHERE id = ?',
        now + this.ttlMs,
        now,
        this.self,
      ) > 0
    );
  }

  /**
   * Every replica with a row (those that died within REPLICA_ROW_KEPT_MS too), oldest first: alive
   * or not, and which one plans. On SQLite this hub is the only one that can be alive, and plans.
   */
  list(now = Date.now()): ReplicaState[] {
    type ListRow = Row & { renewed_at: number | null; session?: boolean; leader?: boolean };
    const pg = isPostgres(this.db);
    const rows = pg
      ? all<ListRow>(this.db, PG_LIST, LEADER_LOCK)
      : all<ListRow>(
          this.db,
          'SELECT id, url, started_at, expires_at, renewed_at FROM hub_replicas ORDER BY started_at, id',
        );
    return rows.map((r) => {
      const expiresAt = Number(r.expires_at);
      const session = pg ? !!r.session : r.id === this.self;
      const live = expiresAt > now && session;
      return {
        ...toReplica(r),
        renewedAt: r.renewed_at === null ? expiresAt - this.ttlMs : Number(r.renewed_at),
        session,
        alive: live,
        leader: live && (pg ? !!r.leader : r.id === this.self),
      };
    });
  }

  /**
   * The live replicas whose lease is not this one's (`--replica-lease` differs): a row renewed at
   * `renewed_at` lasts its replica's lease, so the row itself says it. Rows of versions that did
   * not record `renewed_at` say nothing.
   */
  otherLeases(now = Date.now()): { id: string; url: string; leaseMs: number }[] {
    return all<{ id: string; url: string; expires_at: number; renewed_at: number }>(
      this.db,
      'SELECT id, url, expires_at, renewed_at FROM hub_replicas WHERE id <> ? AND expires_at > ? AND renewed_at IS NOT NULL ORDER BY id',
      this.self,
      now,
    )
      .map((r) => ({ id: r.id, url: r.url, leaseMs: Number(r.expires_at) - Number(r.renewed_at) }))
      .filter((r) => r.leaseMs !== this.ttlMs);
  }

  /** Forgets another replica's row (a SQLite hub, the only one of its file, forgets the runs before it). */
  forget(id: string): void {
    run(this.db, 'DELETE FROM hub_replicas WHERE id = ?', id);
  }

  /** This replica stops: the others stop forwarding to it at once. */
  remove(): void {
    run(this.db, 'DELETE FROM hub_replicas WHERE id = ?', this.self);
  }

  /** A replica whose row has not expired; undefined for one that stopped or died. */
  live(id: string, now = Date.now()): HubReplica | undefined {
    const r = one<Row>(
      this.db,
      'SELECT id, url, started_at, expires_at FROM hub_replicas WHERE id = ? AND expires_at > ?',
      id,
      now,
    );
    return r && toReplica(r);
  }

  /**
   * The key every replica signs forwarded requests with: the first replica to ask makes it, the
   * others read the same row (an insert that does nothing when one is there, then a read).
   */
  forwardKey(): Buffer {
    run(
      this.db,
      'INSERT INTO hub_forward_key (id, key) VALUES (1, ?) ON CONFLICT(id) DO NOTHING',
      randomBytes(32).toString('base64'),
    );
    const r = one<{ key: string }>(this.db, 'SELECT key FROM hub_forward_key WHERE id = 1');
    if (!r) throw new Error('hub_forward_key: the row just inserted is not there');
    return Buffer.from(r.key, 'base64');
  }
}
