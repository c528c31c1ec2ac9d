/** Image tags and pins on SQLite files (the same suite runs on PostgreSQL: test/hub-state-postgres.test.ts). */
import { afterEach } from 'vitest';
import { testDbs } from '../../test/fixtures/auth-db.js';
import { imagePinSuite, imageTagSuite } from '../../test/fixtures/artifact-suites.js';

const dbs = testDbs();
afterEach(() => dbs.cleanup());

imageTagSuite(() => dbs.open());
imagePinSuite(() => dbs.open());
