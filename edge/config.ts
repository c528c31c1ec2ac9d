/**
 * @module The edge's identity on disk: DATA/edge.json (mode 0600) holds the hub URL, the edge's
 * name and credential, the private key its Secrets are sealed to, and the hub's CA pinned at enrollment. Written once by enrollment;
 * afterwards `outpost edge --data DIR` needs nothing else.
 */
import fs from 'node:fs';
import { isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { DRIVER_NAMES } from '../core/driver-kinds.js';
import type { DriverName } from './drivers/driver.js';

/** Hub URLs an edge may list (replicas). */
export const MAX_HUB_URLS = 16;

export const EdgeConfig = z.object({
  /** The hub URL enrollment went through (the first to try). */
  hub: z.string().url(),
  /** All the hub's URLs (replicas), in the order tried; absent: `hub` alone. */
  hubs: z.array(z.string().url()).min(1).max(MAX_HUB_URLS).optional(),
  name: z.string(),
  project: z.string(),
  credential: z.string(),
  caPem: z.string().optional(),
  /** The hub's release public key (PEM), pinned at enrollment: agent upgrades must be signed by it. */
  releaseKey: z.string().max(1000).optional(),
  driver: z.enum(DRIVER_NAMES),
  kubeconfig: z.string().optional(),
  /**
   * The kubernetes driver: the address of this host the cluster's pods reach it at, where the
   * interconnect imports listen and their Endpoints point (`--interconnect-address`; absent: found
   * from the cluster's Nodes, docs/interconnect.md).
   */
  interconnectAddress: z.string().optional(),
  /** Private half of the X25519 key pair made at enrollment: opens the Secrets the hub sealed to this edge. */
  sealKey: z.string().optional(),
});
export type EdgeConfig = z.infer<typeof EdgeConfig>;

/** The hub URLs the edge dials, in order. */
export function hubUrls(cfg: Pick<EdgeConfig, 'hub' | 'hubs'>): string[] {
  return cfg.hubs?.length ? cfg.hubs : [cfg.hub];
}

/**
 * `--hub` as given: one URL, or several separated by commas (hub replicas behind no load
 * balancer). Each must be an http(s) URL without a path; throws naming the bad one and the form.
 */
export function parseHubList(s: string): string[] {
  const urls = s
    .split(',')
    .map((u) => u.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  if (urls.length === 0) throw new Error('--hub is empty: give the hub URL, e.g. https://hub.example.com:7443');
  if (urls.length > MAX_HUB_URLS) throw new Error(`--hub names ${urls.length} URLs: at most ${MAX_HUB_URLS}`);
  for (const u of urls) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(u);
    } catch {
      /* reported below */
    }
    if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') || parsed.pathname !== '/')
      throw new Error(
        `--hub ${u}: not a hub URL: use https://HOST:PORT (several: https://hub-a:7443,https://hub-b:7443)`,
      );
  }
  return urls;
}

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

/**
 * `--interconnect-address` as given: an IPv4 or IPv6 address of this host the cluster's pods reach
 * (not loopback or unspecified: an Endpoints may not name those), or `auto` (undefined: found from
 * the cluster's Nodes). Throws naming the problem.
 */
export function parseInterconnectAddress(s: string): string | undefined {
  const a = s.trim();
  if (a === 'auto') return undefined;
  if (isIP(a) === 0)
    throw new Error(
      `--interconnect-address ${s}: not an IP address: give the address of this host the cluster's pods reach, e.g. 10.0.0.5 (or auto)`,
    );
  if (a.startsWith('127.') || a === '::1' || a === '0.0.0.0' || a === '::')
    throw new Error(
      `--interconnect-address ${a}: a loopback or unspecified address, which the cluster's pods do not reach and an Endpoints may not name: give an address of this host on the pods' network`,
    );
  return a;
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
