/**
 * Runs the harness smoke test (`npx vitest run -c bench/vitest.config.ts`) until the root config
 * includes bench/**\/*.test.ts.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { include: ['bench/**/*.test.ts'], root: '.', testTimeout: 180_000, pool: 'forks' },
});
