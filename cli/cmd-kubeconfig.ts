/**
 * @module `outpost kubeconfig`: a kubeconfig for the hub's own Kubernetes API (`/k8s`,
 * docs/kubernetes-api.md), so kubectl and client-go programs drive Outpost's objects: the hub's
 * CA pinned (certificate-authority-data), the CLI's token as the credential, the CLI's project as
 * the context's namespace.
 */
import type { Command } from 'commander';
import { stringify as toYaml } from 'yaml';
import type { HubConnection } from './client.js';
import { resolveConnection } from './config.js';
import { openSession, type CliDeps } from './context.js';

/** The path the hub serves its Kubernetes API under (hub/k8s/index.ts). */
export const KUBE_API_PATH = '/k8s';

export function hubKubeconfig(conn: HubConnection, opts: { name: string; namespace: string }): string {
  const { name } = opts;
  return toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name,
        cluster: {
          server: `${conn.hub.replace(/\/+$/, '')}${KUBE_API_PATH}`,
          ...(conn.ca ? { 'certificate-authority-data': Buffer.from(conn.ca).toString('base64') } : {}),
        },
      },
    ],
    users: [{ name, user: { token: conn.token } }],
    contexts: [{ name, context: { cluster: name, user: name, namespace: opts.namespace } }],
    'current-context': name,
  });
}

export function registerKubeconfig(program: Command, deps: CliDeps): void {
  program
    .command('kubeconfig')
    .description("print a kubeconfig for the hub's Kubernetes API: kubectl and client-go drive Outpost's objects")
    .option('--name <name>', 'the name of the cluster, user and context in it', 'outpost')
    .addHelpText(
      'after',
      "\nThe hub CA is pinned in it and your token is its credential: keep it as secret as the token.\nThe namespace of its context is the project (--project, else the CLI's).\n\nExample:\n  outpost kubeconfig > outpost.yaml && kubectl --kubeconfig outpost.yaml get placements",
    )
    .action(async (o: { name: string }, cmd: Command) => {
      const { conn } = await resolveConnection({ env: deps.env, homedir: deps.homedir });
      const s = await openSession(cmd, deps);
      deps.stdout.write(hubKubeconfig({ ...conn, hub: s.client.hub }, { name: o.name, namespace: s.project }));
    });
}
