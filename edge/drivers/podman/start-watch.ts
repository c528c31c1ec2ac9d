/**
 * @module Making sure a start took: after `pod start` on request (actions.ts) and when an apply
 * finds containers left down (apply.ts). Podman 4.3 (Debian 12) can undo a start of ours: the
 * cleanup process of the run a `pod stop` just ended may act after our `pod start` and leave a
 * container exited (code 137, no restart), which podman's restart policy then never restarts
 * (podman PRs 17077 "Set StoppedByUser earlier", fixed in 4.4, and 18267 for issue 18259, 4.5).
 * So the workload's containers are watched for a few seconds after a start, and one that stays
 * down is started once more. What this misses, status catches later (status.ts `leftDown`).
 */
import { createLogger } from '../../../core/logger.js';
import { DriverError } from '../driver.js';
import { podmanError } from './cli.js';
import { scanOne, type PodmanContext } from './pods.js';
import type { Scan } from './scan.js';
import { LEFT_DOWN_MS, leftDown, wantsRunning } from './status.js';

const log = createLogger('edge:driver:podman');

/**
 * How long containers are watched after a start. The old run's cleanup process was started when
 * that run exited, inside `pod stop`, so it acts soon after our `pod start`; how soon under load is
 * not known (the race was seen once, in CI, and never reproduced). A start on request costs this
 * much more; what comes later, status reports as drift.
 */
export const START_WATCH_MS = 3_000;
/**
 * Between looks. A container down at two looks in a row, unchanged, was not restarted by podman in
 * between (measured here: 0.17-0.47 s from an exit to podman's restart at load average 5) and is
 * started once more; a start of ours that races podman's own restart is harmless (podman skips a
 * restart of a running container). Whether that second start took is judged like status does, by
 * LEFT_DOWN_MS, so a crash loop that podman is slow to restart does not fail the start.
 */
export const START_POLL_MS = 500;

type Container = Scan['containers'][number];

/** What changes when podman restarts a container, or anything else touches it. */
const look = (c: Container): string => `${c.state}|${c.startedAt}|${c.finishedAt}|${c.restarts}`;
const label = (c: Container): string => `${c.pod}/${c.container}`;

/**
 * Watches `name`'s containers for START_WATCH_MS after a start: a container its restart policy
 * wants running that stays down is started once more (logged at warn), and watched until it runs
 * or is left down (LEFT_DOWN_MS). Throws a DriverError when one is left down after that; the state
 * file no longer says stopped, so status reports it as drift (`modified`) and the reconciler
 * applies the workload again.
 */
export async function watchStart(ctx: PodmanContext, name: string): Promise<void> {
  let until = Date.now() + START_WATCH_MS;
  const retried = new Set<string>();
  let before = new Map<string, string>();
  for (;;) {
    const down = (await scanOne(ctx, name)).containers.filter(wantsRunning);
    const now = Date.now();
    const hopeless = down.filter((c) => retried.has(c.id) && leftDown(c, now));
    if (hopeless.length)
      throw new DriverError(
        `starting ${name}: ${hopeless.map((c) => `${label(c)} (${c.state}, exit code ${c.exitCode})`).join(', ')} stopped right after the start and stays down after a second one; see its logs`,
      );
    const stuck = down.filter((c) => !retried.has(c.id) && before.get(c.id) === look(c));
    before = new Map(down.map((c) => [c.id, look(c)]));
    if (stuck.length) {
      for (const c of stuck) {
        log.warn(
          { workload: name, container: label(c), state: c.state, exitCode: c.exitCode },
          'a container stopped right after the start (podman 4.3 stop/restart race?); starting it again',
        );
        retried.add(c.id);
      }
      await startContainers(ctx, name, stuck);
      until = Math.max(until, Date.now() + LEFT_DOWN_MS + START_POLL_MS);
    }
    if (Date.now() >= until) return;
    await new Promise((r) => setTimeout(r, START_POLL_MS));
  }
}

/**
 * Starts the containers status reports as left down (`leftDown`), then watches them like a start
 * on request. For an apply of the version that runs: it is how drift of this kind is put back.
 */
export async function startLeftDown(ctx: PodmanContext, name: string, seen: Scan): Promise<void> {
  const now = Date.now();
  const left = seen.containers.filter((c) => leftDown(c, now));
  if (left.length === 0) return;
  log.warn(
    { workload: name, containers: left.map(label) },
    'containers podman left down although their restart policy wants them running; starting them',
  );
  await startContainers(ctx, name, left);
  await watchStart(ctx, name);
}

/** `podman start` of single containers: it starts the pod's infra container too when that is down. */
async function startContainers(ctx: PodmanContext, name: string, containers: Container[]): Promise<void> {
  const r = await ctx.podman.run(['start', ...containers.map((c) => c.id)]);
  if (r.code !== 0)
    throw new DriverError(
      `starting ${containers.map(label).join(', ')} of ${name} again: ${podmanError(r.stderr) || `podman start exited with ${r.code}`}`,
    );
}
