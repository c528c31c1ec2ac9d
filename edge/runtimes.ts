/**
 * @module Which runtimes this host can actually run workloads with, for the inventory (`describe
 * edge`, the `inventory.outpost.dev/runtime.NAME` labels). Found without running anything:
 * - `process`: always (the agent itself runs on Linux with /proc);
 * - `podman`: a `podman` executable on PATH;
 * - `kubernetes`: a cluster to talk to, not just a client: in a pod (KUBERNETES_SERVICE_HOST), the
 *   kubeconfig the edge was enrolled with, $KUBECONFIG, ~/.kube/config, or k3s' / kubeadm's admin
 *   kubeconfig. An installed `kubectl` alone (Debian's kubernetes-client) is not a cluster.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function executableOnPath(bin: string, env: NodeJS.ProcessEnv): boolean {
  for (const dir of (env.PATH ?? '').split(':').filter(Boolean)) {
    try {
      const f = path.join(dir, bin);
      fs.accessSync(f, fs.constants.X_OK);
      if (fs.statSync(f).isFile()) return true;
    } catch {
      // not here
    }
  }
  return false;
}

const fileExists = (f: string | undefined): boolean => {
  try {
    return !!f && fs.statSync(f).isFile();
  } catch {
    return false;
  }
};

/** Well-known admin kubeconfigs of single-node distributions. */
export const CLUSTER_KUBECONFIGS = ['/etc/rancher/k3s/k3s.yaml', '/etc/kubernetes/admin.conf'];

export function detectRuntimes(
  o: { env?: NodeJS.ProcessEnv; home?: string; kubeconfig?: string; clusterKubeconfigs?: string[] } = {},
): string[] {
  const env = o.env ?? process.env;
  const home = o.home ?? os.homedir();
  const runtimes = ['process'];
  if (executableOnPath('podman', env)) runtimes.push('podman');
  const kubeconfigs = [
    o.kubeconfig,
    ...(env.KUBECONFIG ?? '').split(':').filter(Boolean),
    path.join(home, '.kube', 'config'),
    ...(o.clusterKubeconfigs ?? CLUSTER_KUBECONFIGS),
  ];
  if (env.KUBERNETES_SERVICE_HOST || kubeconfigs.some(fileExists)) runtimes.push('kubernetes');
  return runtimes;
}
