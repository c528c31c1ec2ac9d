/**
 * @module `outpost edge uninstall [--yes]`: the undo of `outpost edge install`, for an edge that
 * was decommissioned (or is being retired). In order: stop and disable the service (systemctl,
 * when there is one), make sure no agent still runs on the data directory, remove every workload
 * with the edge's own driver (processes killed, pods and volumes removed), remove the unit file,
 * reload systemd, delete the data directory. Without --yes it only says what it would do.
 * "No agent still runs" is the data directory's lock (edge/agent-lock.ts), held to the end.
 * A step that fails stops the uninstall with the data directory still there, so it can be run again.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { absolute } from '../core/install.js';
import { AgentLock, AgentLockBusy, agentLockPath, describeHolder } from './agent-lock.js';
import { configPath, readEdgeConfig } from './config.js';
import { readDecommissioned } from './decommission.js';
import { createDriver } from './drivers/index.js';
import { EDGE_UNIT } from './install.js';

export interface EdgeUninstallOptions {
  dataDir: string;
  unitDir: string;
  yes?: boolean;
  /** The systemctl to run (found on PATH by default); none found: the unit steps are skipped. */
  systemctl?: string;
}

function onPath(bin: string): string | undefined {
  if (bin.includes('/')) return fs.existsSync(bin) ? bin : undefined;
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    const f = path.join(dir, bin);
    try {
      fs.accessSync(f, fs.constants.X_OK);
      return f;
    } catch {
      // next
    }
  }
  return undefined;
}

/** True when an agent answers on DATA/agent.sock. */
function agentRunning(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(socketPath);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export async function uninstallEdge(o: EdgeUninstallOptions): Promise<string> {
  const dataDir = absolute(o.dataDir);
  const unitFile = path.join(absolute(o.unitDir), EDGE_UNIT);
  const config = readEdgeConfig(dataDir);
  const marker = readDecommissioned(dataDir);
  if (!config && !marker)
    throw new Error(
      `${dataDir} is not an edge data directory (no ${path.basename(configPath(dataDir))}); pass --data with the directory the agent ran on`,
    );
  const systemctl = onPath(o.systemctl ?? 'systemctl');
  const hasUnit = fs.existsSync(unitFile);
  const steps = [
    hasUnit && systemctl ? `stop and disable ${EDGE_UNIT} (systemctl disable --now ${EDGE_UNIT})` : undefined,
    config ? `remove every workload of edge ${config.name} (driver ${config.driver})` : undefined,
    hasUnit ? `remove ${unitFile}${systemctl ? ' and reload systemd' : ''}` : undefined,
    `delete ${dataDir}`,
  ].filter((s): s is string => s !== undefined);
  const status = marker ? 'decommissioned' : 'NOT decommissioned: the hub still lists it (outpost edge decommission)';
  if (!o.yes)
    throw new Error(
      `outpost edge uninstall would (edge ${config?.name ?? '?'}, ${status}):\n${steps.map((s) => `  - ${s}\n`).join('')}nothing was changed; run again with --yes`,
    );

  let out = '';
  const run = (args: string[]): void => {
    try {
      execFileSync(systemctl!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      const e = err as { stderr?: Buffer; message: string };
      throw new Error(`systemctl ${args.join(' ')} failed: ${e.stderr?.toString().trim() || e.message}`);
    }
    out += `systemctl ${args.join(' ')}\n`;
  };
  if (hasUnit && systemctl) run(['disable', '--now', EDGE_UNIT]);
  // Held until this process exits (the directory goes with it): no agent starts on it while its
  // workloads are removed. An agent that still runs holds it: refused with its pid.
  const lock = new AgentLock(dataDir, { what: 'outpost edge uninstall' });
  try {
    await lock.acquire();
  } catch (err) {
    if (!(err instanceof AgentLockBusy)) throw err;
    const who = err.holder ? `: ${describeHolder(err.holder)}` : ` (${agentLockPath(dataDir)} is locked)`;
    const kill = err.holder ? ` (kill ${err.holder.pid})` : '';
    throw new Error(
      `an edge agent still runs on ${dataDir}${who}, not under systemd?: stop it first${kill}, then run outpost edge uninstall again; nothing was removed`,
    );
  }
  // An agent of a release that predates the lock does not take it, but answers on its socket.
  if (await agentRunning(path.join(dataDir, 'agent.sock')))
    throw new Error(
      `an edge agent still runs on ${dataDir} (not under systemd?): stop it first, then run outpost edge uninstall again; nothing was removed`,
    );
  if (config) {
    const driver = await createDriver(config.driver, dataDir, { kubeconfig: config.kubeconfig });
    try {
      await driver.start();
      for (const w of await driver.list()) {
        await driver.remove(w.name);
        out += `removed workload ${w.name}\n`;
      }
    } catch (err) {
      throw new Error(`removing the workloads with the ${config.driver} driver failed; the data directory is kept`, {
        cause: err,
      });
    } finally {
      await driver.close();
    }
  }
  if (hasUnit) {
    fs.rmSync(unitFile, { force: true });
    out += `removed ${unitFile}\n`;
    if (systemctl) run(['daemon-reload']);
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
  out += `deleted ${dataDir}\n`;
  return `${out}edge ${config?.name ?? ''} uninstalled${marker ? '' : ' (the hub still lists it: outpost edge decommission NAME --yes)'}\n`;
}
