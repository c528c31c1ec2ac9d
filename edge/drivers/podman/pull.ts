/**
 * @module Images for an apply: every image of the plan present locally, else pulled, before
 * anything running is touched. Pulls use the registry access of the workload's pull Secrets
 * (plan.ts `PullAccess`), written as files podman reads, which exist only while an apply pulls and
 * plays.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseImageRef } from '../../../core/images.js';
import { createLogger } from '../../../core/logger.js';
import { podmanError, type Podman } from './cli.js';
import type { PodmanPlan } from './plan.js';
import type { StateStore } from './state.js';

const log = createLogger('edge:driver:podman');

/** The registry access of one apply, as files podman reads. */
export interface PullFiles {
  authFile: string;
  certDirs: Map<string, string>;
  insecure: Set<string>;
}

/** podman pull flags for an image on `host`. */
function pullFlags(access: PullFiles | undefined, host: string): string[] {
  if (!access) return [];
  const cert = access.certDirs.get(host);
  return [
    '--authfile',
    access.authFile,
    ...(cert ? ['--cert-dir', cert] : []),
    ...(access.insecure.has(host) ? ['--tls-verify=false'] : []),
  ];
}

function pullDir(store: StateStore, workload: string): string {
  return join(store.root, 'pull', workload);
}

/**
 * Writes the plan's registry access for podman: `auth.json` (podman's --authfile) and one
 * `--cert-dir` per registry with a CA bundle, under DATADIR/podman/pull/WORKLOAD (0700/0600).
 */
export async function writePullAccess(
  store: StateStore,
  workload: string,
  plan: PodmanPlan,
): Promise<PullFiles | undefined> {
  if (!plan.pull) return undefined;
  const dir = pullDir(store, workload);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const authFile = join(dir, 'auth.json');
  await writeFile(authFile, plan.pull.authJson, { mode: 0o600 });
  const certDirs = new Map<string, string>();
  for (const [host, pem] of plan.pull.ca) {
    const d = join(dir, 'certs', host.replace(/[^A-Za-z0-9.-]/g, '_'));
    await mkdir(d, { recursive: true, mode: 0o700 });
    await writeFile(join(d, 'ca.crt'), pem, { mode: 0o600 });
    certDirs.set(host, d);
  }
  return { authFile, certDirs, insecure: plan.pull.insecure };
}

/** Deletes what `writePullAccess` wrote for the workload. */
export async function removePullAccess(store: StateStore, workload: string): Promise<void> {
  await rm(pullDir(store, workload), { recursive: true, force: true });
}

/** Every image of the plan present locally, pulling those that are not; the error message otherwise. */
export async function ensureImages(
  podman: Podman,
  workload: string,
  plan: PodmanPlan,
  access: PullFiles | undefined,
): Promise<string | undefined> {
  const failed: { image: string; why: string }[] = [];
  for (const image of plan.images) {
    if ((await podman.run(['image', 'exists', image])).code === 0) continue;
    const r = await podman.run(['pull', '--quiet', ...pullFlags(access, parseImageRef(image).registry), image]);
    if (r.code !== 0) failed.push({ image, why: podmanError(r.stderr) });
  }
  if (failed.length === 0) return undefined;
  log.warn({ workload, images: failed }, 'images missing; the running version is kept');
  return missingImagesMessage(
    failed.map((f) => f.image),
    failed.map((f) => f.why).join('; '),
  );
}

/** The message of phase Failed when images are not on this edge and could not be pulled. */
export function missingImagesMessage(images: string[], podmanSaid: string): string {
  return (
    `image ${images.join(', ')} is not on this edge and could not be pulled (is a registry reachable from here?); ` +
    `build or load it locally (podman load -i FILE, podman import) or fix the image name. podman said: ${podmanSaid}`
  );
}
