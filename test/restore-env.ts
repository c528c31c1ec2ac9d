/**
 * @module A setup file of the vitest projects whose workers run file after file (vitest.config.ts):
 * what a test file sets in process.env (OUTPOST_TEST_BACKEND for a `*.postgres.test.ts` file,
 * OUTPOST_TEST_SPAWN, a driver's binary path) is put back as it was when the file started, so the
 * next file of the same worker, and every process it spawns, starts from the same environment as
 * in a worker of its own.
 */
import { afterAll } from 'vitest';

const before = { ...process.env };

// Registered before the file's own hooks, so it runs after them (vitest runs them as a stack).
afterAll(() => {
  for (const k of Object.keys(process.env)) if (!(k in before)) delete process.env[k];
  Object.assign(process.env, before);
});
