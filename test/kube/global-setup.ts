/**
 * vitest globalSetup: makes sure the kube-apiserver binary the kubernetes tests start exists
 * before any test runs (test/kube/build.sh; a no-op with a warm cache, a one-time cold build on a
 * fresh machine, see docs/drivers.md), so that no test's hook timeout has to cover a build.
 *
 * A failed build does not stop the other tests: it is reported here, and every test file that
 * needs the API server fails with the same error (test/kube/harness.ts runs the build again).
 */
import { kubeApiServerBinary } from './harness.js';

export default function setup(): void {
  try {
    process.env.OUTPOST_KUBE_APISERVER = kubeApiServerBinary();
  } catch (err) {
    console.error(
      `\nkube-apiserver is not available; the kubernetes driver tests will fail: ${(err as Error).message}\n`,
    );
  }
}
