/**
 * The fast tier (`npm run test:unit`): unit tests only, no hub or edge process, no socket, no
 * podman, no kube-apiserver; pure modules, and the hub's state modules and scheduler parts on
 * in-memory SQLite. Seconds, for a loop while changing those parts. `npm test` (vitest.config.ts)
 * runs everything, these included, and is what CI runs.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'core/**/*.test.ts',
      'cli/args.test.ts',
      'sync/tunnel.test.ts',
      'sync/wasm-sync.test.ts',
      'hub/state/**/*.test.ts',
      'hub/identity/*.test.ts',
      'hub/edges/**/*.test.ts',
      'hub/scheduler/{queue,targets,rollout,assign,spec-writer,status-marks,gate-waits}.test.ts',
      'hub/orders/*.test.ts',
      'hub/module.test.ts',
      'edge/orders/*.test.ts',
      'hub/replicas/bus.test.ts',
      'hub/upgrades/claims.test.ts',
      'hub/auth/{edge-credentials,roles,tokens}.test.ts',
      'hub/tunnel/{proxy-session,forward}.test.ts',
      'hub/state/catalog.test.ts',
      'hub/images/cache.test.ts',
      'ui/src/diff.test.ts',
      'ui/src/format.test.ts',
      'ui/src/yaml.test.ts',
      'ui/src/components/components.test.ts',
      'test/architecture.test.ts',
    ],
    pool: 'forks',
    // Without isolation, as in `npm test` (vitest.config.ts says what a file must then keep to).
    isolate: false,
    maxWorkers: 2,
  },
});
