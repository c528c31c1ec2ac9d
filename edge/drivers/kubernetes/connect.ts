/**
 * @module Connecting the kubernetes driver to its cluster: which kubeconfig (the one given, else
 * the in-cluster service account when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config), and a
 * `/version` call, so that `start()` fails with the server's address when it cannot reach it.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, VersionApi } from '@kubernetes/client-node';
import { DriverError } from '../driver.js';

/** Whether the default cluster config is there: in a pod (KUBERNETES_SERVICE_HOST), or ~/.kube/config. */
export function defaultKubeconfigExists(): boolean {
  return !!process.env.KUBERNETES_SERVICE_HOST || existsSync(join(homedir(), '.kube', 'config'));
}

/** The loaded kubeconfig and the API server it points at, checked to answer. */
export async function connectCluster(kubeconfig: string | undefined): Promise<{ kc: KubeConfig; server: string }> {
  const kc = new KubeConfig();
  const path = kubeconfig ?? (process.env.KUBERNETES_SERVICE_HOST ? undefined : join(homedir(), '.kube', 'config'));
  try {
    if (path) kc.loadFromFile(path);
    else kc.loadFromCluster();
  } catch (err) {
    throw new DriverError(
      path
        ? `cannot load kubeconfig ${path}; pass --kubeconfig or point KUBECONFIG at a readable file`
        : 'cannot load the in-cluster service account config',
      { cause: err },
    );
  }
  const server = kc.getCurrentCluster()?.server;
  if (!server)
    throw new DriverError(`kubeconfig ${path ?? '(in-cluster)'} has no current cluster; set current-context`);
  try {
    await kc.makeApiClient(VersionApi).getCode();
  } catch (err) {
    throw new DriverError(
      `cannot reach the Kubernetes API server at ${server}: ${(err as Error).message}; check that the cluster runs and the kubeconfig credentials are valid`,
      { cause: err },
    );
  }
  return { kc, server };
}
