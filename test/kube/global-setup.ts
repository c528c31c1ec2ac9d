/**
 * vitest globalSetup: makes sure the kube-apiserver binary the kubernetes tests start exists
 * before any test runs (test/kube/build.sh; a no-op with a warm cache, a one-time cold build on a
 * fresh machine, see docs/drivers.md), so that no test's hook timeout has to cover a build.
 */
import { kubeApiServerBinary } from './harness.js';

export default function setup(): void {
  process.env.OUTPOST_KUBE_APISERVER = kubeApiServerBinary();
}
