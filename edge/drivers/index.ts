/**
 * @module Picks the runtime driver named in the edge's configuration. Drivers are loaded on demand:
 * an edge running processes never loads the Kubernetes client (tens of MB of heap).
 */
import path from 'node:path';
import type { Driver, DriverName } from './driver.js';

export async function createDriver(
  name: DriverName,
  dataDir: string,
  opts: {
    kubeconfig?: string;
    clusterKubeconfig?: () => string | undefined;
    processStableMs?: number;
    interconnectAddress?: string;
  } = {},
): Promise<Driver> {
  const dir = path.join(dataDir, 'runtime', name);
  switch (name) {
    case 'process':
      return (await import('./process/index.js')).createProcessDriver({
        dataDir: dir,
        ...(opts.processStableMs !== undefined ? { stableMs: opts.processStableMs } : {}),
      });
    case 'podman':
      return (await import('./podman/index.js')).createPodmanDriver({ dataDir: dir });
    case 'kubernetes':
      return (await import('./kubernetes/index.js')).createKubernetesDriver({
        dataDir: dir,
        ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}),
        ...(opts.clusterKubeconfig ? { clusterKubeconfig: opts.clusterKubeconfig } : {}),
        ...(opts.interconnectAddress ? { interconnectAddress: opts.interconnectAddress } : {}),
      });
  }
}
