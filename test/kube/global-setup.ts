/**
 * vitest globalSetup: makes sure the kube-apiserver (and controller-manager, scheduler) binaries
 * the kubernetes tests start, and the kubectl they run, exist before any test runs (test/kube/build.sh; a no-op with a warm cache, a one-time cold build on a
 * fresh machine, see docs/drivers.md), so that no test's hook timeout has to cover a build.
 *
 * A failed build does not stop the other tests: it is reported here, and every test file that
 * needs the API server fails with the same error (test/kube/harness.ts runs the build again).
 */
import { kubeBinary, type KubeComponent } from './harness.js';

/**
 * Built before the tests: the API server the kubernetes tests start, the controller-manager and
 * scheduler some start with it (harness `controllers: true`; the cluster tests stage them too),
 * the kubectl they run, and the client-go informer the hub's Kubernetes API is tested with.
 */
const COMPONENTS: KubeComponent[] = [
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubectl',
  'informer',
];

export default function setup(): void {
  for (const c of COMPONENTS) {
    try {
      kubeBinary(c);
    } catch (err) {
      console.error(`\n${c} is not available; the tests that use it will fail: ${(err as Error).message}\n`);
    }
  }
}
