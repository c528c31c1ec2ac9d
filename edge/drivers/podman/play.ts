/**
 * @module Making a new version's pods with `podman kube play`: the claims whose volume does not
 * exist yet, the play secrets, the pods created stopped and then started. The previous version's
 * pods keep running unless the new ones cannot start beside them; a failed play removes the
 * half-made pods and returns the message the workload reports as Failed. The same play makes some
 * pods of the version that runs (`only`): those removed on site, beside the ones that run.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createLogger } from '../../../core/logger.js';
import type { WorkloadUnit } from '../driver.js';
import { podmanError } from './cli.js';
import type { PlannedPod, PodmanPlan } from './plan.js';
import { podsOfHash, removePods, type PodmanContext } from './pods.js';
import { missingImagesMessage, type PullFiles } from './pull.js';
import type { Scan } from './scan.js';
import { createSecrets, removeSecrets } from './secrets.js';

const log = createLogger('edge:driver:podman');

/** Which pods a play makes and whether it starts them; by default all of the plan's, started. */
export interface PlayPods {
  /** Only these pods of the plan (pods of the running version removed on site); the others run on untouched. */
  only?: PlannedPod[];
  /** Leave them created, not started: the workload is stopped on request. */
  created?: boolean;
}

/**
 * Creates the new pods stopped and starts them; returns the error message for phase Failed, or
 * undefined on success. `old` (the previous version's pods) keep running unless the new ones
 * cannot start beside them (a hostPort both hold): then the old ones are stopped for one more
 * try, and started again if the new ones still fail.
 */
export async function play(
  ctx: PodmanContext,
  unit: WorkloadUnit,
  plan: PodmanPlan,
  old: Scan['pods'],
  graceSeconds: number,
  access: PullFiles | undefined,
  which: PlayPods = {},
): Promise<string | undefined> {
  const file = join(ctx.store.root, 'play', `${unit.name}.yaml`);
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const claims: string[] = [];
  for (const c of plan.claimDocs)
    if ((await ctx.podman.run(['volume', 'exists', c.volume])).code !== 0) claims.push(c.yaml);
  const docs = which.only ? [...plan.configMapDocs, ...which.only.map((p) => p.yaml)] : [plan.yaml];
  await writeFile(file, [...claims, ...docs].join('---\n'), { mode: 0o600 });
  // The pods of the unit's version this play makes: never one that ran before it.
  const only = which.only && new Set(which.only.map((p) => p.podmanName));
  const made = async (): Promise<Scan['pods']> =>
    (await podsOfHash(ctx, unit.name, unit.hash)).filter((p) => !only || only.has(p.podmanName));
  let created = false;
  try {
    await createSecrets(ctx, unit.name, plan.secrets, dirname(file));
    // The images were pulled above; the authfile is for a pull kube play makes by its own policy.
    const r = await ctx.podman.run([
      'kube',
      'play',
      '--start=false',
      ...(access ? ['--authfile', access.authFile] : []),
      file,
    ]);
    created = true;
    if (r.code !== 0) {
      const message = await explainPlayFailure(ctx, plan, podmanError(r.stderr));
      log.warn({ workload: unit.name, err: message }, 'podman kube play failed');
      return message;
    }
    if (which.created) {
      created = false;
      log.info({ workload: unit.name, pods: which.only?.map((p) => p.name) }, 'pods made and left stopped');
      return undefined;
    }
    let started = await startPods(ctx, await made());
    if (started !== undefined && old.length) {
      log.warn({ workload: unit.name, err: started }, 'the new version cannot start beside the old; stopping the old');
      await ctx.podman.run(['pod', 'stop', '-t', String(graceSeconds), ...old.map((p) => p.id)]);
      started = await startPods(ctx, await made());
      if (started !== undefined) {
        const back = await ctx.podman.run(['pod', 'start', ...old.map((p) => p.id)]);
        if (back.code !== 0)
          log.error({ workload: unit.name, err: podmanError(back.stderr) }, 'the previous version did not start again');
      }
    }
    if (started !== undefined) {
      log.warn({ workload: unit.name, err: started }, 'the new version did not start');
      return `${which.only ? 'they' : 'the new version'} did not start: ${started}`;
    }
    created = false;
    log.info(
      {
        workload: unit.name,
        hash: unit.hash,
        generation: unit.generation,
        ...(which.only ? { pods: which.only.map((p) => p.name) } : {}),
      },
      which.only ? 'missing pods played again' : 'workload played',
    );
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    // A failed play leaves half-made pods (state Created) behind; the old version's are not touched.
    if (created)
      await removePods(ctx, unit.name, 0, await made()).catch((err) =>
        log.warn({ workload: unit.name, err }, 'cleaning up after a failed play'),
      );
    // Env values from secrets are copied into the containers at creation; the secrets are not needed after.
    await removeSecrets(ctx, unit.name).catch((err) => log.warn({ workload: unit.name, err }, 'removing play secrets'));
  }
}

/** Starts the (created) pods a play made; the error message if any did not start. */
async function startPods(ctx: PodmanContext, pods: Scan['pods']): Promise<string | undefined> {
  if (pods.length === 0) return 'podman kube play made no pod';
  const r = await ctx.podman.run(['pod', 'start', ...pods.map((p) => p.id)]);
  return r.code === 0 ? undefined : podmanError(r.stderr);
}

async function explainPlayFailure(ctx: PodmanContext, plan: PodmanPlan, podmanSaid: string): Promise<string> {
  const images = new Set<string>();
  for (const m of /image: *"?([^\s"]+)/g[Symbol.matchAll](plan.yaml)) images.add(m[1]);
  const missing: string[] = [];
  for (const img of images) if ((await ctx.podman.run(['image', 'exists', img])).code !== 0) missing.push(img);
  if (missing.length === 0) return `podman kube play failed: ${podmanSaid}`;
  return missingImagesMessage(missing, podmanSaid);
}
