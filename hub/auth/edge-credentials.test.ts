import { afterEach, describe, expect, it } from 'vitest';
import { parseToken } from '../../sync/pinned-ca.js';
import {
  decommissionedAt,
  issueEdgeCredential,
  revokeEdgeCredential,
  verifyEdgeCredential,
} from './edge-credentials.js';
import { testDbs } from '../../test/fixtures/auth-db.js';

const dbs = testDbs();
afterEach(() => dbs.cleanup());

describe('edge credentials', () => {
  it('name their edge and verify to it', () => {
    const { db } = dbs.open();
    const token = issueEdgeCredential(db, 'edge-1');
    expect(token).toMatch(/^ope1\.edge-1\.[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
    expect(verifyEdgeCredential(db, token)).toEqual({ edge: 'edge-1' });
    expect(JSON.stringify(db.prepare('SELECT * FROM edge_credentials').all())).not.toContain(parseToken(token)!.secret);
  });

  it('a new credential replaces the previous one of that edge only', () => {
    const { db } = dbs.open();
    const old = issueEdgeCredential(db, 'edge-1');
    const other = issueEdgeCredential(db, 'edge-2');
    const fresh = issueEdgeCredential(db, 'edge-1');
    expect(verifyEdgeCredential(db, old)).toBeNull();
    expect(verifyEdgeCredential(db, fresh)).toEqual({ edge: 'edge-1' });
    expect(verifyEdgeCredential(db, other)).toEqual({ edge: 'edge-2' });
  });

  it('refuses a wrong secret, another edge name on a valid id, and garbage', () => {
    const { db } = dbs.open();
    const token = issueEdgeCredential(db, 'edge-1');
    issueEdgeCredential(db, 'edge-2');
    expect(verifyEdgeCredential(db, token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'))).toBeNull();
    // The name in the token is checked against the row, so an edge cannot claim another's name.
    expect(verifyEdgeCredential(db, token.replace('.edge-1.', '.edge-2.'))).toBeNull();
    expect(verifyEdgeCredential(db, 'ope1.edge-1')).toBeNull();
    expect(() => issueEdgeCredential(db, 'Bad_Name')).toThrow(/invalid edge name "Bad_Name"/);
  });

  it('revocation takes effect at once', () => {
    const { db } = dbs.open();
    const token = issueEdgeCredential(db, 'edge-1');
    expect(revokeEdgeCredential(db, 'edge-1')).toBe(true);
    expect(revokeEdgeCredential(db, 'edge-1')).toBe(false);
    expect(verifyEdgeCredential(db, token)).toBeNull();
  });

  it('remembers a decommissioned credential, for its holder only', () => {
    const { db } = dbs.open();
    const token = issueEdgeCredential(db, 'edge-1');
    const plain = issueEdgeCredential(db, 'edge-2');
    expect(decommissionedAt(db, token)).toBeUndefined();
    expect(revokeEdgeCredential(db, 'edge-1', { decommissioned: true, now: 1234 })).toBe(true);
    expect(revokeEdgeCredential(db, 'edge-2')).toBe(true);
    expect(verifyEdgeCredential(db, token)).toBeNull();
    expect(decommissionedAt(db, token)).toBe(1234);
    expect(decommissionedAt(db, plain)).toBeUndefined();
    expect(decommissionedAt(db, token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'))).toBeUndefined();
    // Enrolled again under the same name: a new credential that works.
    expect(verifyEdgeCredential(db, issueEdgeCredential(db, 'edge-1'))).toEqual({ edge: 'edge-1' });
  });
});
