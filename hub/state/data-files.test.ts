/** Exported data files on SQLite files (the same suite runs on PostgreSQL: test/hub-state-postgres.test.ts). */
import { afterEach } from 'vitest';
import { testDbs } from '../../test/fixtures/auth-db.js';
import { dataFileSuite } from '../../test/fixtures/artifact-suites.js';

const dbs = testDbs();
afterEach(() => dbs.cleanup());

dataFileSuite(() => dbs.open());
