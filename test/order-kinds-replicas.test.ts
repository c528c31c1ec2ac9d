/**
 * The four order kinds pass the acceptance suite (test/fixtures/order-kind-suite.ts) on two hub
 * replicas in this process sharing one PostgreSQL (docs/operations.md, "Hub replicas"): the edge
 * is served by the first, the second shares the tables (and writes the edge's parts from them
 * when it comes to serve it).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startHub } from '../hub/hub.js';
import { newIdentityKey } from '../hub/identity/key.js';
import { orderKindCases, type SuiteFleet } from './fixtures/order-kind-suite.js';
import { TestPostgres } from './fixtures/postgres.js';

const server = new TestPostgres();
let databases = 0;

beforeAll(async () => {
  await server.start();
}, 60_000);

afterAll(async () => {
  await server.stop();
});

/** Two replicas on a database of their own, one identity (one admin token), no malware scanner. */
async function replicaFleet(dir: string): Promise<SuiteFleet> {
  const database = server.createDatabase(`orders_${++databases}`);
  const identityKeyFile = path.join(dir, 'identity.key');
  fs.writeFileSync(identityKeyFile, newIdentityKey(), { mode: 0o600 });
  const start = (name: string) =>
    startHub({
      dataDir: path.join(dir, name),
      listen: '127.0.0.1:0',
      insecureHttp: true,
      database,
      identityKeyFile,
      scanner: { kind: 'none' },
    });
  const hub = await start('hub-a');
  const peer = await start('hub-b');
  return {
    hub,
    peer,
    hubUrls: `${hub.url},${peer.url}`,
    close: async () => {
      await peer.close();
      await hub.close();
    },
  };
}

orderKindCases(Object.assign(replicaFleet, { replicated: true }));
