/**
 * @module The edge's identity on disk: DATA/edge.json (mode 0600) holds the hub URL, the edge's
 * name and credential, the private key its Secrets are sealed to, and the hub's CA pinned at enrollment. Written once by enrollment;
 * afterwards `outpost edge --data DIR` needs nothing else.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { DRIVER_NAMES } from '../core/driver-kinds.js';
import type { DriverName } from './drivers/driver.js';

export const EdgeConfig = z.object({
  hub: z.string().url(),
  name: z.string(),
  project: z.string(),
  credential: z.string(),
  caPem: z.string().optional(),
  /** The hub's release public key (PEM), pinned at enrollment: agent upgrades must be signed by it. */
  releaseKey: z.string().max(1000).optional(),
  driver: z.enum(DRIVER_NAMES),
  kubeconfig: z.string().optional(),
  /** Private half of the X25519 key pair made at enrollment: opens the Secrets the hub sealed to this edge. */
  sealKey: z.string().optional(),
});
export type EdgeConfig = z.infer<typeof EdgeConfig>;

export function configPath(dataDir: string): string {
  return path.join(dataDir, 'edge.json');
}

export function readEdgeConfig(dataDir: string): EdgeConfig | undefined {
  const f = configPath(dataDir);
  if (!fs.existsSync(f)) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(f, 'utf8'));
  } catch (err) {
    throw new Error(
      `${f} is not valid JSON: restore it from a backup, or move the data directory away and enroll again`,
      { cause: err },
    );
  }
  const r = EdgeConfig.safeParse(raw);
  if (!r.success) throw new Error(`${f}: ${r.error.issues[0]?.path.join('.')}: ${r.error.issues[0]?.message}`);
  return r.data;
}

export function writeEdgeConfig(dataDir: string, cfg: EdgeConfig): void {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const f = configPath(dataDir);
  const tmp = `${f}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(cfg, null, 2), { mode: 0o600 });
  fs.renameSync(tmp, f);
}

export function driverName(s: string): DriverName {
  if (s === 'process' || s === 'podman' || s === 'kubernetes') return s;
  throw new Error(`--driver ${s}: use process, podman or kubernetes`);
}

/** The default edge name: the host name, made a valid DNS label. */
export function defaultEdgeName(): string {
  return os
    .hostname()
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63);
}
