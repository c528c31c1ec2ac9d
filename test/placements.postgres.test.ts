/**
 * placements.test.ts again with the hub's tables in PostgreSQL (issue #22: one behavioural suite, two
 * backends; test/fixtures/backend.ts).
 */
import { afterAll } from 'vitest';
import { runOnPostgres } from './fixtures/backend.js';

runOnPostgres(afterAll);
await import('./placements.test.js');
