/** @module Picks the runtime driver named in the edge's configuration. */
import path from 'node:path';
import type { Driver, DriverName } from './driver.js';
import { createKubernetesDriver } from './kubernetes/index.js';
import { createPodmanDriver } from './podman/index.js';
import { createProcessDriver } from './process/index.js';

export function createDriver(name: DriverName, dataDir: string, opts: { kubeconfig?: string } = {}): Driver {
  const dir = path.join(dataDir, 'runtime', name);
  switch (name) {
    case 'process':
      return createProcessDriver({ dataDir: dir });
    case 'podman':
      return createPodmanDriver({ dataDir: dir });
    case 'kubernetes':
      return createKubernetesDriver({ dataDir: dir, ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}) });
  }
}
