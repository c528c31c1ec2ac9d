/**
 * vitest globalSetup: builds outpost-helm, the hub's Helm chart renderer (build/helm/build.sh: a
 * no-op with a warm cache, a one-time cold build of minutes on a fresh machine), before any test
 * runs, so that no test's hook timeout has to cover a build. A failed build is reported here; the
 * chart tests then fail with the same error (test/fixtures/helm.ts builds again).
 */
import { helmBinary } from './fixtures/helm.js';

export default function setup(): void {
  try {
    helmBinary();
  } catch (err) {
    console.error(`\noutpost-helm is not available; the chart tests will fail: ${(err as Error).message}\n`);
  }
}
