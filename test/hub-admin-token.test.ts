/**
 * One first-start admin token per database for hub replicas on one PostgreSQL (issue #42, item 11;
 * hub/identity/admin-token.ts), with in-process hubs on a throwaway PostgreSQL: replicas given the
 * identity key all hold the same admin.token, made once; `token rotate-admin` through one is what
 * a replica started later takes; replicas without the key make no second token.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../hub/hub.js';
import { newIdentityKey } from '../hub/identity/key.js';
import { adminApi } from './fixtures/in-process-fleet.js';
import { TestPostgres } from './fixtures/postgres.js';
import { tempDir } from './helpers.js';

const server = new TestPostgres();
let dir: string;
const hubs: Hub[] = [];

const replica = async (name: string, database: string, identityKeyFile?: string): Promise<Hub> => {
  const h = await startHub({
    dataDir: path.join(dir, name),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    database,
    ...(identityKeyFile ? { identityKeyFile } : {}),
  });
  hubs.push(h);
  return h;
};

/** The admin tokens for every project the database holds, live or not. */
async function adminTokens(h: Hub): Promise<{ id: string; description: string; revokedAt?: string | null }[]> {
  const list = await adminApi<{
    items: { kind: string; id: string; role: string; project: string; description: string; revokedAt?: string }[];
  }>(h, 'GET', '/api/v1/tokens');
  return list.items.filter((t) => t.kind === 'api' && t.role === 'admin' && t.project === '*');
}

beforeAll(async () => {
  dir = tempDir('outpost-admin-token-');
  await server.start();
}, 120_000);

afterAll(async () => {
  for (const h of hubs) await h.close().catch(() => undefined);
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the first admin token of hub replicas', () => {
  it('with the identity key: made once, every replica holds it, a rotation reaches replicas started later', async () => {
    const database = server.createDatabase('keyed');
    const keyFile = path.join(dir, 'identity.key');
    fs.writeFileSync(keyFile, newIdentityKey(), { mode: 0o600 });
    const [a, b] = await Promise.all([replica('k-a', database, keyFile), replica('k-b', database, keyFile)]);
    expect([a.adminTokenCreated, b.adminTokenCreated].filter(Boolean)).toHaveLength(1);
    expect(b.adminToken).toBe(a.adminToken);
    expect(fs.readFileSync(path.join(dir, 'k-b', 'admin.token'), 'utf8').trim()).toBe(a.adminToken);
    expect(await adminTokens(a)).toHaveLength(1);

    const c = await replica('k-c', database, keyFile);
    expect(c.adminTokenCreated).toBe(false);
    expect(c.adminToken).toBe(a.adminToken);
    expect(await adminTokens(c)).toHaveLength(1);

    // Rotated through A: the old one is revoked, and a replica started afterwards takes the new one.
    const rotated = await adminApi<{ token: string }>(a, 'POST', '/api/v1/tokens/rotate-admin');
    const d = await replica('k-d', database, keyFile);
    expect(d.adminToken).toBe(rotated.token);
    const live = (await adminTokens(d)).filter((t) => !t.revokedAt);
    expect(live).toHaveLength(1);
  });

  it('without the key: the second replica makes none and says where to get it', async () => {
    const database = server.createDatabase('keyless');
    const a = await replica('n-a', database);
    const b = await replica('n-b', database);
    expect(a.adminTokenCreated).toBe(true);
    expect(b.adminTokenCreated).toBe(false);
    expect(fs.existsSync(path.join(dir, 'n-b', 'admin.token'))).toBe(false);
    expect(() => b.adminToken).toThrow(/copy its admin.token into/);
    // A's token works on B: one admin token for the database.
    const onB = await fetch(`${b.url}/api/v1/tokens`, { headers: { authorization: `Bearer ${a.adminToken}` } });
    expect(onB.status).toBe(200);
    expect(await adminTokens(a)).toHaveLength(1);
  });
});
