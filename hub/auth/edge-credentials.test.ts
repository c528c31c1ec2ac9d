/** Edge credentials on SQLite files (the suite runs on PostgreSQL too). */
import { afterEach } from 'vitest';
import { testDbs } from '../../test/fixtures/auth-db.js';
import { edgeCredentialSuite } from '../../test/fixtures/auth-suites.js';

const dbs = testDbs();
afterEach(() => dbs.cleanup());

edgeCredentialSuite(() => dbs.open());
