/** The shared hub identity on SQLite files (the same suites run on PostgreSQL: test/hub-state-postgres.test.ts). */
import { afterEach } from 'vitest';
import { testDbs } from '../../test/fixtures/auth-db.js';
import { hubIdentitySuite, identityStoreSuite } from '../../test/fixtures/identity-suites.js';

const dbs = testDbs();
afterEach(() => dbs.cleanup());

identityStoreSuite(() => dbs.open().db);
hubIdentitySuite(() => dbs.open());
