/**
 * The hub's state modules on a real PostgreSQL (issue #22): the same suites that hub/state/*.test.ts
 * run on SQLite (test/fixtures/state-suites.ts), through the synchronous client, each test on a
 * fresh schema migrated from the hub's one list of migrations.
 */
import { afterAll, beforeAll, describe } from 'vitest';
import { migratePostgres } from '../hub/state/pg/schema.js';
import { SyncPostgres } from '../hub/state/pg/sync-client.js';
import { postgresHubState } from '../hub/state/index.js';
import { TestPostgres } from './fixtures/postgres.js';
import { edgeStateSuite, eventLogSuite, objectStateSuite } from './fixtures/state-suites.js';

const server = new TestPostgres();
let pg: SyncPostgres;
let url: string;
let schemas = 0;

beforeAll(async () => {
  await server.start();
  url = server.createDatabase('hub_state');
  pg = new SyncPostgres(url);
}, 60_000);

afterAll(async () => {
  await pg?.close();
  await server.remove();
});

/** A fresh schema on the one connection, migrated: what the suites get for each test. */
function fresh() {
  const schema = `t${++schemas}`;
  pg.exec(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
  migratePostgres(pg);
  return postgresHubState(pg);
}

describe('hub state on PostgreSQL', () => {
  objectStateSuite(fresh);
  edgeStateSuite(fresh);
  eventLogSuite(fresh);
});
