/** The schema component `hub-tunnel`: tunnel_proxy_sessions (hub/state/proxy-sessions.ts). Never renumber or edit a shipped migration. */
import type { Migration } from '../../../sync/sqlite.js';

export const PROXY_SESSION_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE tunnel_proxy_sessions (
        id TEXT PRIMARY KEY,
        link_hash BLOB,   -- NULL once the link was traded for a cookie
        cookie_hash BLOB, -- NULL until then
        token_id TEXT NOT NULL,
        role TEXT NOT NULL,
        project TEXT NOT NULL,
        edge TEXT NOT NULL,
        workload TEXT NOT NULL,
        port INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX tunnel_proxy_sessions_expiry ON tunnel_proxy_sessions (expires_at);
    `,
  },
];
