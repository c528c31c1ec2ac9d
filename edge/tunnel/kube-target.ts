/**
 * @module The cluster API target of a kubeconfig for the tunnel's `kube` requests. Kept apart from
 * http.ts so that @kubernetes/client-node is imported statically (esbuild tree-shakes it) and yet
 * loaded only when an edge first forwards a request to its cluster.
 */
import type https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { TunnelError } from '../../sync/tunnel.js';

export interface KubeTarget {
  url: URL;
  /** TLS material (ca, cert, key) for the target. */
  options: https.RequestOptions;
  /** Headers the edge adds (its own credential for the cluster API). */
  headers: Record<string, string>;
}

export async function readKubeTarget(kubeconfig: string): Promise<KubeTarget> {
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(kubeconfig);
  } catch (err) {
    throw new TunnelError(
      'unavailable',
      `the edge cannot read its kubeconfig ${kubeconfig}: ${(err as Error).message}`,
    );
  }
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new TunnelError('unavailable', `the edge's kubeconfig ${kubeconfig} has no current cluster`);
  const options: https.RequestOptions & { headers?: Record<string, string> } = {};
  await kc.applyToHTTPSOptions(options);
  const headers = { ...((options.headers ?? {}) as Record<string, string>) };
  delete options.headers;
  return { url: new URL(server), options, headers };
}
