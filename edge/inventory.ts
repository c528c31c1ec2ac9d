/** @module What the edge tells the hub about itself: host, OS, architecture, CPU, memory, runtimes found. */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import type { Inventory } from '../core/resources.js';

function has(bin: string, args = ['--version']): boolean {
  try {
    execFileSync(bin, args, { stdio: 'ignore', timeout: 3_000 });
    return true;
  } catch {
    return false;
  }
}

export function collectInventory(driver: string, agentVersion: string): Inventory {
  const runtimes = ['process'];
  if (has('podman')) runtimes.push('podman');
  if (process.env.KUBERNETES_SERVICE_HOST || has('kubectl', ['version', '--client'])) runtimes.push('kubernetes');
  return {
    hostname: os.hostname(),
    os: `${os.type()} ${os.release()}`,
    arch: os.arch(),
    cpus: os.cpus().length,
    memoryBytes: os.totalmem(),
    runtimes,
    driver,
    agentVersion,
  };
}
