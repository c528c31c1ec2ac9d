/**
 * @module The health gate of a started component (docs/clusters.md, "On the site", "Upgrade"):
 * healthy within its deadline, or the reason with the end of its log (exited at start, or still
 * unhealthy); and the survey of a running node's components the supervision reports.
 */
import path from 'node:path';
import type { ComponentName, ComponentReport } from '../../core/cluster.js';
import type { ComponentCommand, NodeLayout, NodeSpec } from './configs.js';
import { componentHealth } from './health.js';
import { tail } from './node-state.js';
import { alive, findComponent, readPid } from './processes.js';

/** How long a component has to become healthy once started (the health gate of an upgrade too). */
export const HEALTHY_WITHIN_MS = 180_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type Components = Partial<Record<ComponentName, ComponentReport>>;

/** Resolves once `c` is healthy; throws why not (its log's end) when it exits or the deadline passes. */
export async function waitHealthy(
  o: NodeSpec,
  l: NodeLayout,
  c: ComponentCommand,
  stopped: () => boolean,
): Promise<void> {
  const deadline = Date.now() + HEALTHY_WITHIN_MS;
  const logEnd = () => tail(path.join(l.logs, `${c.name}.log`));
  let last = '';
  for (;;) {
    const pid = readPid(l.run, c.name);
    if (pid === undefined || !alive(pid)) throw new Error(`${c.name} exited at start; its log ends: ${logEnd()}`);
    const h = await componentHealth(c.name, o, l);
    if (h.healthy) return;
    last = h.message ?? '';
    if (Date.now() > deadline || stopped())
      throw new Error(
        `${c.name} is not healthy after ${HEALTHY_WITHIN_MS / 1000} s (${last}); its log ends: ${logEnd()}`,
      );
    await sleep(500);
  }
}

/** Each component of `commands`: running (its pid), healthy or why not, its restarts as counted before. */
export async function surveyComponents(
  o: NodeSpec,
  l: NodeLayout,
  commands: ComponentCommand[],
  before: Components,
): Promise<Components> {
  const out: Components = {};
  for (const c of commands) {
    const pid = findComponent(l.run, c);
    const h = pid !== undefined ? await componentHealth(c.name, o, l) : { healthy: false, message: 'not running' };
    out[c.name] = {
      running: pid !== undefined,
      healthy: h.healthy,
      ...(pid !== undefined ? { pid } : {}),
      restarts: before[c.name]?.restarts ?? 0,
      ...(h.message ? { message: h.message } : {}),
    };
  }
  return out;
}
