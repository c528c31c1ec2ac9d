/**
 * @module `outpost cluster artifacts push DIR` (docs/clusters.md, "The artifact set"): uploads each
 * component of a Kubernetes distribution as a blob of the project and has the hub sign it with its
 * release key (an admin token for every project, as `outpost agent push`), then prints a
 * ClusterTemplate that names them, ready to edit and apply (`--global`: signed for every project, a
 * global template every project's Clusters may name). And `outpost cluster kubeconfig NAME`:
 * a kubeconfig that reaches the cluster's API through the hub's tunnel to its control-plane edge.
 *
 * DIR holds `etcd`, `kube-apiserver`, `kube-controller-manager`, `kube-scheduler`, `kubelet` and
 * `runc` (executables), `containerd/` (containerd, containerd-shim-runc-v2, ctr) and
 * `cni-plugins/` (bridge, host-local, loopback; more may be there), each directory pushed as one
 * tar, and `pause.tar`, the pause image as an OCI archive (`podman save --format oci-archive`).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import * as tar from 'tar';
import { ARCHIVE_ARTIFACTS, ARCHIVE_FILES, ARTIFACT_NAMES, type ArtifactName } from '../core/cluster.js';
import { DEFAULT_MEDIA_TYPE } from '../core/blobs.js';
import type { SignedRelease } from '../core/release.js';
import { API_VERSION } from '../core/resources.js';
import { pushBlob } from './cmd-blob.js';
import { kubeconfigFor } from './cmd-tunnel.js';
import { resolveConnection } from './config.js';
import { objectPath, openSession, type CliDeps } from './context.js';
import { CliError } from './errors.js';
import { toJson, toYaml } from './output.js';

/** Where an artifact is in DIR. */
function sourceOf(dir: string, name: ArtifactName): string {
  return path.join(dir, name === 'pause' ? 'pause.tar' : name);
}

/** The Kubernetes version `kube-apiserver --version` reports (`Kubernetes v1.33.13`). */
function probeKubernetesVersion(file: string): string {
  let out: string;
  try {
    out = execFileSync(file, ['--version'], { timeout: 30_000, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  } catch (err) {
    throw new CliError(
      `cannot run ${file} --version here (${(err as Error).message.split('\n')[0]}): pass --kubernetes-version`,
    );
  }
  const m = /^Kubernetes (v\d+\.\d+\.\d+\S*)/.exec(out.trim());
  if (!m) throw new CliError(`${file} --version printed "${out.trim().slice(0, 80)}": pass --kubernetes-version`);
  return m[1]!;
}

/** Checks DIR holds every artifact; a directory artifact becomes a tar in `tmp` (fixed times: the same files, the same digest). */
async function collect(dir: string, tmp: string): Promise<Map<ArtifactName, string>> {
  const files = new Map<ArtifactName, string>();
  const missing: string[] = [];
  for (const name of ARTIFACT_NAMES) {
    const src = sourceOf(dir, name);
    if (!fs.existsSync(src)) {
      missing.push(path.basename(src) + (ARCHIVE_ARTIFACTS.includes(name) ? '/' : ''));
      continue;
    }
    if (!ARCHIVE_ARTIFACTS.includes(name)) {
      if (!fs.statSync(src).isFile()) throw new CliError(`${src} must be a file`);
      files.set(name, src);
      continue;
    }
    if (!fs.statSync(src).isDirectory()) throw new CliError(`${src} must be a directory of executables`);
    const inside = fs.readdirSync(src).sort();
    const lacking = (ARCHIVE_FILES[name] ?? []).filter((f) => !inside.includes(f));
    if (lacking.length) throw new CliError(`${src} lacks ${lacking.join(', ')}`);
    const out = path.join(tmp, `${name}.tar`);
    // Symbolic links are followed: the archive holds the files' bytes.
    await tar.c({ file: out, cwd: src, portable: true, mtime: new Date(0), follow: true }, inside);
    files.set(name, out);
  }
  if (missing.length)
    throw new CliError(
      `${dir} lacks ${missing.join(', ')}: it must hold etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, runc, containerd/, cni-plugins/ and pause.tar (docs/clusters.md)`,
    );
  return files;
}

export function registerClusterCommands(program: Command, deps: CliDeps): void {
  const cluster = program
    .command('cluster')
    .description('clusters at the sites: their artifacts, a kubeconfig for their API');
  cluster
    .command('kubeconfig')
    .description("print a kubeconfig that reaches the cluster's Kubernetes API through the hub with your token")
    .argument('<name>', 'the Cluster')
    .addHelpText(
      'after',
      "\nThe hub's tunnel reaches the API on the cluster's control-plane edge as the cluster's admin: a token\nthat may write in the project may write in the cluster, one that may read may read (not Secrets).\n\nExample:\n  outpost cluster kubeconfig store-17 > store-17.yaml && kubectl --kubeconfig store-17.yaml get nodes",
    )
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const c = await s.client.get<{ spec?: { controlPlane?: { edges?: string[] } } }>(
        objectPath(s.project, 'clusters', name),
      );
      const edge = c.spec?.controlPlane?.edges?.[0];
      if (!edge) throw new CliError(`cluster ${name} names no control-plane edge`);
      const { conn } = await resolveConnection({ env: deps.env, homedir: deps.homedir });
      deps.stdout.write(kubeconfigFor({ ...conn, hub: s.client.hub }, edge, `outpost-cluster-${name}`));
    });
  const artifacts = cluster.command('artifacts').description('the signed components of a Kubernetes distribution');
  artifacts
    .command('push')
    .description(
      'upload each component in DIR as a blob and have the hub sign it (an admin token for every project); prints a ClusterTemplate naming them',
    )
    .argument('<dir>', 'a directory holding the artifact set (docs/clusters.md, "The artifact set")')
    .option('--kubernetes-version <v>', 'the version of the set (default: DIR/kube-apiserver --version)')
    .option('--name <name>', 'name of the ClusterTemplate printed (default k8s-VERSION)')
    .option('--template-version <v>', 'spec.version of the ClusterTemplate printed', '1')
    .option(
      '--global',
      'sign the artifacts for every project and print a global ClusterTemplate (metadata.project "*"), which the Clusters of every project may name with scope: Global',
    )
    .option('-o, --output <format>', 'yaml or json', 'yaml')
    .action(
      async (
        dir: string,
        o: { kubernetesVersion?: string; name?: string; templateVersion: string; output: string; global?: boolean },
        cmd: Command,
      ) => {
        const version = o.kubernetesVersion ?? probeKubernetesVersion(path.join(dir, 'kube-apiserver'));
        const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-artifacts-'));
        try {
          const files = await collect(dir, tmp);
          const s = await openSession(cmd, deps);
          const signed: Record<string, SignedRelease> = {};
          for (const [name, file] of files) {
            const blob = await pushBlob(s, file, DEFAULT_MEDIA_TYPE);
            const { scan: _scan, ...artifact } = await s.client.post<SignedRelease & { scan?: unknown }>(
              `/api/v1/projects/${s.project}/cluster-artifacts`,
              { name, digest: blob.digest, version, ...(o.global ? { scope: '*' } : {}) },
            );
            signed[name] = artifact;
            deps.stderr.write(`${name}: ${blob.digest} signed\n`);
          }
          const template = {
            apiVersion: API_VERSION,
            kind: 'ClusterTemplate',
            metadata: {
              name:
                o.name ??
                `k8s-${version
                  .replace(/^v/, '')
                  .toLowerCase()
                  .replace(/[^a-z0-9]+/g, '-')}`,
              ...(o.global ? { project: '*' } : {}),
            },
            spec: { version: o.templateVersion, kubernetesVersion: version, artifacts: signed },
          };
          s.out.out.write(o.output === 'json' ? toJson(template) : toYaml(template));
        } finally {
          fs.rmSync(tmp, { recursive: true, force: true });
        }
      },
    );
}
