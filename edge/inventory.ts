/**
 * @module What the edge tells the hub about itself: host, OS, architecture, CPU count and model,
 * memory, disks, network interfaces, DMI vendor/product/serial (hardware.ts, from /proc and
 * /sys), the runtimes actually usable here (runtimes.ts) and the last switch to an agent release
 * with the history of those that ended (edge/upgrade/switch.ts).
 */
import os from 'node:os';
import { readHardware } from './hardware.js';
import { RELEASE_HISTORY_MAX, type AgentReleaseState, type Inventory } from '../core/resources.js';
import { detectRuntimes } from './runtimes.js';
import type { UpgradeState } from './upgrade/switch.js';

export function collectInventory(
  driver: string,
  agentVersion: string,
  o: { kubeconfig?: string; agentRelease?: AgentReleaseState } = {},
): Inventory {
  return {
    hostname: os.hostname(),
    os: `${os.type()} ${os.release()}`,
    arch: os.arch(),
    cpus: os.cpus().length,
    memoryBytes: os.totalmem(),
    runtimes: detectRuntimes({ kubeconfig: o.kubeconfig }),
    driver,
    agentVersion,
    ...(o.agentRelease ? { agentRelease: o.agentRelease } : {}),
    ...readHardware(),
  };
}

/**
 * What the report says about the last release switch and the switches that ended before
 * (edge/upgrade/switch.ts): versions, states, times, the AgentUpgrade that ordered each and the
 * reasons; not the paths of the binaries or the snapshot.
 */
export function agentReleaseOf(u: UpgradeState | undefined): AgentReleaseState | undefined {
  if (!u) return undefined;
  const history = (u.history ?? []).slice(0, RELEASE_HISTORY_MAX).map((h) => ({
    version: h.version,
    previousVersion: h.previousVersion,
    state: h.state,
    startedAt: h.startedAt,
    at: h.at,
    ...(h.upgrade ? { upgrade: h.upgrade } : {}),
    ...(h.reason ? { reason: h.reason.slice(0, 1024) } : {}),
  }));
  return {
    version: u.version,
    state: u.state,
    previousVersion: u.previousVersion,
    at: u.at,
    ...(u.reason ? { reason: u.reason.slice(0, 1024) } : {}),
    ...(history.length ? { history } : {}),
  };
}
