/**
 * @module tunnel_proxy_sessions (schema: hub/state/schema/proxy-sessions.ts): the browser sessions
 * of the service proxy, whose rules are hub/tunnel/proxy-session.ts's. Links and cookies are stored
 * as sha256 hashes only.
 */
import type { Role } from '../../core/api/types.js';
import { migrateTables, one, run, type SqlDb } from './sql.js';

export interface ProxySessionRow {
  id: string;
  link_hash: Buffer | null;
  cookie_hash: Buffer | null;
  token_id: string;
  role: Role;
  project: string;
  edge: string;
  workload: string;
  port: number;
  expires_at: number;
}

export interface ProxySessionTables {
  /** Adds a session (its link unused), first deleting those expired at `now`. */
  create(r: Omit<ProxySessionRow, 'cookie_hash'> & { link_hash: Buffer; created_at: number }): void;
  get(id: string): ProxySessionRow | undefined;
  /** Trades the session's link for a cookie hash; false when the link was used already (only one exchange wins). */
  exchange(id: string, cookieHash: Buffer): boolean;
}

export function sqlProxySessionTables(db: SqlDb): ProxySessionTables {
  migrateTables(db, 'hub-tunnel');
  return {
    create(r) {
      run(db, 'DELETE FROM tunnel_proxy_sessions WHERE expires_at <= ?', r.created_at);
      run(
        db,
        'INSERT INTO tunnel_proxy_sessions (id, link_hash, token_id, role, project, edge, workload, port, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        r.id,
        r.link_hash,
        r.token_id,
        r.role,
        r.project,
        r.edge,
        r.workload,
        r.port,
        r.created_at,
        r.expires_at,
      );
    },
    get: (id) =>
      one<ProxySessionRow>(
        db,
        'SELECT id, link_hash, cookie_hash, token_id, role, project, edge, workload, port, expires_at FROM tunnel_proxy_sessions WHERE id = ?',
        id,
      ),
    exchange: (id, cookieHash) =>
      run(
        db,
        'UPDATE tunnel_proxy_sessions SET link_hash = NULL, cookie_hash = ? WHERE id = ? AND link_hash IS NOT NULL',
        cookieHash,
        id,
      ) === 1,
  };
}
