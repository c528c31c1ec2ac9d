/** The catalog's tables on SQLite files (the same suite runs on PostgreSQL: test/hub-state-postgres.test.ts). */
import { afterEach } from 'vitest';
import { testDbs } from '../../test/fixtures/auth-db.js';
import { catalogStateSuite } from '../../test/fixtures/artifact-suites.js';

const dbs = testDbs();
afterEach(() => dbs.cleanup());

catalogStateSuite(() => dbs.open());
