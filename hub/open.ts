/**
 * @module What a hub opens before anything else, in order: a wrong flag, URL or unreachable
 * database ends the start at once. The identity key, PostgreSQL (migrated), the record of where
 * this directory's hub keeps its tables (for `outpost hub backup --data`), the replicas' shared
 * identity into --data, then TLS, which reads it.
 */
import fs from 'node:fs';
import { recordTablesAtStart } from './database-marker.js';
import { shareHubIdentity } from './identity/index.js';
import { loadIdentityKey, type IdentityKey } from './identity/key.js';
import type { HubOptions } from './options.js';
import { postgresHubState, type HubState } from './state/index.js';
import { openPostgres } from './state/pg/open.js';
import type { SyncPostgres } from './state/pg/sync-client.js';
import { hubTls, type HubTls } from './tls.js';

export interface OpenedHub {
  identityKey: IdentityKey | undefined;
  /** Undefined: the hub's tables are in its SQLite file. */
  pg: SyncPostgres | undefined;
  /** The hub's tables on that PostgreSQL; undefined: in its SQLite file (opened with the store). */
  pgState: HubState | undefined;
  /** Undefined: plain HTTP (`--insecure-http`). */
  tls: HubTls | undefined;
}

export async function openHub(opts: HubOptions, listenHost: string): Promise<OpenedHub> {
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  if (opts.identityKeyFile && !opts.database)
    throw new Error(
      '--identity-key is for hub replicas sharing a database: give --database too, or drop --identity-key',
    );
  const identityKey = opts.identityKeyFile ? loadIdentityKey(opts.identityKeyFile) : undefined;
  const pg = opts.database ? await openPostgres(opts.database) : undefined;
  recordTablesAtStart(opts.dataDir, opts.database);
  // The replicas' one identity into --data before TLS, secrets and the release key are read there.
  const pgState = pg && postgresHubState(pg);
  if (pgState)
    await shareHubIdentity(pgState.identity, {
      dataDir: opts.dataDir,
      key: identityKey,
      ownCa: !opts.insecureHttp && !(opts.tlsCert && opts.tlsKey),
    });
  const tls = await hubTls({ ...opts, listenHost });
  return { identityKey, pg, pgState, tls };
}
