/**
 * kube-api-watch.test.ts again with the hub's tables in PostgreSQL (test/fixtures/backend.ts).
 */
import { afterAll } from 'vitest';
import { runOnPostgres } from '../fixtures/backend.js';

runOnPostgres(afterAll);
await import('./kube-api-watch.test.js');
