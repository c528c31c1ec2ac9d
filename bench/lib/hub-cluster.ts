/**
 * @module The hubs under test: one `outpost hub` on SQLite in its --data (replicas 0, as every
 * scenario ran before issue #22), or N hub replicas on one PostgreSQL the harness starts itself
 * (TestPostgres: a throwaway cluster on loopback, fsync off, stopped and deleted with the run),
 * each replica its own process and --data, all with `--database URL`. Reads the PostgreSQL
 * server's CPU (its postmaster and backends) and which replica plans the fleet (the holder of the
 * leader's advisory lock, docs/operations.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import { newIdentityKey } from '../../hub/identity/key.js';
import { LEADER_LOCK } from '../../hub/replicas/index.js';
import { TestPostgres } from '../../test/fixtures/postgres.js';
import { HubProcess } from './hub-process.js';
import { treeCpuMs } from './sys.js';

export interface HubClusterOptions {
  runDir: string;
  /** 0: one hub on SQLite; N >= 1: N replicas on one PostgreSQL. */
  replicas: number;
  cpuProfDir?: string;
  /** The hub executable (dist/outpost); undefined: main.ts through tsx (`--hub-from-source`). */
  binary?: string;
}

export class HubCluster {
  readonly hubs: HubProcess[] = [];
  pg: TestPostgres | undefined;
  databaseUrl: string | undefined;
  private readonly stopPgAtExit = () => void this.pg?.stop();

  constructor(private readonly opts: HubClusterOptions) {
    const n = Math.max(1, opts.replicas);
    for (let i = 0; i < n; i++) {
      const suffix = opts.replicas ? `-${i + 1}` : '';
      this.hubs.push(
        new HubProcess({
          dataDir: path.join(opts.runDir, `hub${suffix}`),
          logFile: path.join(opts.runDir, `hub${suffix}.log`),
          cpuProfDir: opts.cpuProfDir,
          binary: opts.binary,
        }),
      );
    }
  }

  get replicas(): number {
    return this.opts.replicas;
  }

  /** Starts PostgreSQL (for replicas) and every hub; resolves when all of them listen. */
  async start(): Promise<void> {
    if (this.opts.replicas > 0) {
      this.pg = new TestPostgres();
      // A harness that dies must not leave a PostgreSQL server behind (pg_ctl stop is synchronous).
      process.once('exit', this.stopPgAtExit);
      await this.pg.start();
      this.databaseUrl = this.pg.createDatabase('hub');
      // One identity for the replicas (the shared admin token among it), as docs/operations.md sets them up.
      const keyFile = path.join(this.opts.runDir, 'identity.key');
      fs.writeFileSync(keyFile, newIdentityKey(), { mode: 0o600 });
      for (const h of this.hubs) h.setDatabase(this.databaseUrl, keyFile);
    }
    await Promise.all(this.hubs.map((h) => h.start()));
  }

  urls(): string[] {
    return this.hubs.map((h) => h.url);
  }

  /** Hubs whose process runs. */
  alive(): HubProcess[] {
    return this.hubs.filter((h) => h.running);
  }

  /** The index of the hub a sync URL (ws://HOST:PORT/...) points at, or -1. */
  indexOf(syncUrl: string): number {
    return this.hubs.findIndex((h) => h.url && syncUrl.startsWith(`${h.url.replace(/^http/, 'ws')}/`));
  }

  /** How many of the edges in `served` (edge -> sync URL) each hub serves. */
  countPerHub(served: Map<string, string>): number[] {
    const n = this.hubs.map(() => 0);
    for (const url of served.values()) {
      const i = this.indexOf(url);
      if (i >= 0) n[i]!++;
    }
    return n;
  }

  /** CPU time of the PostgreSQL server (postmaster and every backend), or undefined without one. */
  postgresCpuMs(): number | undefined {
    if (!this.pg) return undefined;
    const pid = this.postmasterPid();
    return pid === undefined ? undefined : treeCpuMs(pid);
  }

  private postmasterPid(): number | undefined {
    try {
      const first = fs.readFileSync(path.join(this.pg!.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0];
      return Number(first) || undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * The replica that plans the fleet: the session holding the leader's advisory lock names its
   * process (`outpost-hub HOST:PID:ID`, docs/operations.md). Undefined while nobody holds it.
   */
  leader(): HubProcess | undefined {
    if (!this.pg) return undefined;
    // A bigint advisory key shows in pg_locks as classid (high 32 bits) and objid (low 32 bits).
    const key = BigInt(LEADER_LOCK);
    const rows = this.pg.sql(
      `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.classid = ${key >> 32n} AND l.objid = ${key & 0xffffffffn} AND a.application_name LIKE 'outpost-hub %'`,
      'hub',
    );
    const pids = rows
      .split('\n')
      .filter(Boolean)
      .map((r) => Number(r.split(':')[1]));
    return this.alive().find((h) => pids.includes(h.pid));
  }

  async stop(): Promise<void> {
    await Promise.all(this.hubs.map((h) => h.stop().catch(() => undefined)));
    if (this.pg) {
      await this.pg.remove().catch(() => undefined);
      process.off('exit', this.stopPgAtExit);
    }
  }
}
