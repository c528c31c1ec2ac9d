/**
 * @module Enrollment: trade a join token (which pins the hub's CA, k3s style) for this edge's own
 * credential, once. The CA is fetched and checked against the pin before anything is sent. At
 * every later start the agent takes the enrolled configuration from DATA/edge.json instead
 * (`enrollOnce`).
 */
import fs from 'node:fs';
import { isValidName } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import { newSealKeyPair } from '../core/secrets.js';
import type { Inventory } from '../core/resources.js';
import { requestJson } from '../sync/http-json.js';

import { fetchPinnedCa, parseToken } from '../sync/pinned-ca.js';
import {
  defaultEdgeName,
  driverName,
  hubUrls,
  parseHubList,
  parseInterconnectAddress,
  readEdgeConfig,
  writeEdgeConfig,
  type EdgeConfig,
} from './config.js';
import type { DriverName } from './drivers/driver.js';
import { collectInventory } from './inventory.js';

const log = createLogger('edge:enroll');

export interface EnrollOptions {
  dataDir: string;
  hub: string;
  joinToken: string;
  name: string;
  labels?: Record<string, string>;
  driver: DriverName;
  inventory: Inventory;
  kubeconfig?: string;
  /** `--interconnect-address` (parseInterconnectAddress: `auto` is none). */
  interconnectAddress?: string;
}

/**
 * The join token from `--join-token`, `OUTPOST_JOIN_TOKEN` (commander fills joinToken from it) or
 * `--join-token-file`. The file and the variable keep the token out of `ps`, where a command-line
 * argument stays for the agent's lifetime.
 */
export function resolveJoinToken(o: { joinToken?: string; joinTokenFile?: string }): string | undefined {
  if (o.joinTokenFile === undefined) return o.joinToken;
  if (o.joinToken !== undefined)
    throw new Error(
      '--join-token-file and --join-token (or OUTPOST_JOIN_TOKEN) are both set: give the join token one way',
    );
  let text: string;
  try {
    text = fs.readFileSync(o.joinTokenFile, 'utf8').trim();
  } catch (err) {
    throw new Error(`--join-token-file ${o.joinTokenFile}: ${(err as Error).message}`, { cause: err });
  }
  if (!text) throw new Error(`--join-token-file ${o.joinTokenFile} is empty: write the join token into it`);
  return text;
}

/** What `outpost edge` was given (edge/agent.ts `EdgeAgentOptions`). */
export interface EnrollOnceOptions {
  dataDir: string;
  hub?: string;
  joinToken?: string;
  name?: string;
  labels?: Record<string, string>;
  driver?: string;
  kubeconfig?: string;
  /** `--interconnect-address`: kept in edge.json; given again on a later start, it replaces it (`auto` clears it). */
  interconnectAddress?: string;
}

/**
 * This edge's configuration at start: enrolls with `--hub` and `--join-token` when the data
 * directory holds no edge yet, else takes DATA/edge.json (refusing a join token for another name,
 * and taking the hub's URLs from `--hub` when they changed). `agentVersion` goes into the inventory
 * sent with the enrollment.
 */
export async function enrollOnce(o: EnrollOnceOptions, agentVersion: string): Promise<EdgeConfig> {
  let config = readEdgeConfig(o.dataDir);
  const requestedDriver = driverName(o.driver ?? config?.driver ?? 'process');
  if (!config) {
    if (!o.hub || !o.joinToken)
      throw new Error(
        `${o.dataDir} holds no enrolled edge: pass --hub URL and --join-token T (create one on the hub with \`outpost token create\`)`,
      );
    const name = o.name ?? defaultEdgeName();
    config = await enroll({
      dataDir: o.dataDir,
      hub: o.hub,
      joinToken: o.joinToken,
      name,
      labels: o.labels,
      driver: requestedDriver,
      inventory: collectInventory(requestedDriver, agentVersion, { kubeconfig: o.kubeconfig }),
      kubeconfig: o.kubeconfig,
      ...(o.interconnectAddress !== undefined ? { interconnectAddress: o.interconnectAddress } : {}),
    });
  } else if (o.joinToken && o.name && o.name !== config.name) {
    throw new Error(
      `${o.dataDir} already belongs to edge ${config.name}: use another --data directory to enroll ${o.name}`,
    );
  } else if (o.hub) {
    // An enrolled edge given --hub again: the hub's URLs changed (a replica added, a new address).
    // The credential and the pinned CA stay; only where to dial changes.
    const hubs = parseHubList(o.hub);
    if (hubUrls(config).join(',') !== hubs.join(',')) {
      config = { ...config, hub: hubs[0]!, ...(hubs.length > 1 ? { hubs } : { hubs: undefined }) };
      writeEdgeConfig(o.dataDir, config);
      log.info({ hubs }, 'hub URLs updated from --hub');
    }
  }
  if (o.interconnectAddress !== undefined) {
    // Given again on a later start: where the pods reach this host changed (or is found again: auto).
    const address = parseInterconnectAddress(o.interconnectAddress);
    if (address !== config.interconnectAddress) {
      config = { ...config, interconnectAddress: address };
      writeEdgeConfig(o.dataDir, config);
      log.info({ address: address ?? 'auto' }, 'interconnect address updated from --interconnect-address');
    }
  }
  return config;
}

export async function enroll(o: EnrollOptions): Promise<EdgeConfig> {
  if (!isValidName(o.name))
    throw new Error(`--name ${o.name}: use 1-63 lower-case letters, digits or '-' (the hostname is the default)`);
  // Several URLs (hub replicas): the first that answers enrolls the edge; all are kept in edge.json.
  const hubs = parseHubList(o.hub);
  // Checked before the hub is asked: a refusal after it enrolled the edge would leave it enrolled there only.
  if (o.interconnectAddress !== undefined) parseInterconnectAddress(o.interconnectAddress);
  const t = parseToken(o.joinToken);
  if (!t || t.kind !== 'join')
    throw new Error(
      '--join-token: this is not a join token (it starts with opj1.); create one on the hub with `outpost token create`',
    );
  let lastError: unknown;
  for (const hub of hubs) {
    let answered = false;
    try {
      return await enrollAt(o, hub, hubs, () => (answered = true));
    } catch (err) {
      if (answered || hubs.length === 1) throw err;
      log.warn({ hub, err: (err as Error).message }, 'hub unreachable for enrollment; trying the next URL');
      lastError = err;
    }
  }
  throw new Error(`none of the hub URLs answered (${hubs.join(', ')}): check --hub and the network`, {
    cause: lastError,
  });
}

/** Enrolls through one hub URL; `answered` is called once the hub has answered (a refusal is final). */
async function enrollAt(o: EnrollOptions, hub: string, hubs: string[], answered: () => void): Promise<EdgeConfig> {
  const t = parseToken(o.joinToken)!;
  let caPem: string | undefined;
  if (hub.startsWith('https:')) {
    if (!t.caFingerprint)
      throw new Error(
        'the join token carries no CA pin but the hub URL is https: create the token on a hub that serves TLS, or use an http:// URL for a hub started with --insecure-http',
      );
    caPem = await fetchPinnedCa(hub, t.caFingerprint);
  }
  // A new key pair at every enrollment: a re-enrolled edge cannot open what was sealed before.
  const keys = newSealKeyPair();
  const res = await requestJson<{
    edge?: string;
    project?: string;
    credential?: string;
    approved?: boolean;
    releaseKey?: string;
    error?: { message: string };
  }>(`${hub}/api/v1/enroll`, {
    body: { joinToken: o.joinToken, name: o.name, labels: o.labels, inventory: o.inventory, sealKey: keys.publicKey },
    ca: caPem,
  });
  answered();
  if (res.status !== 201 || !res.body.credential) {
    throw new Error(
      `the hub refused enrollment (HTTP ${res.status}): ${res.body.error?.message ?? JSON.stringify(res.body)}`,
    );
  }
  const cfg: EdgeConfig = {
    hub,
    ...(hubs.length > 1 ? { hubs } : {}),
    name: o.name,
    project: res.body.project!,
    credential: res.body.credential,
    sealKey: keys.privateKey,
    ...(caPem ? { caPem } : {}),
    // Pinned like the CA: only releases signed by this key are ever run (edge/upgrade/).
    ...(typeof res.body.releaseKey === 'string' ? { releaseKey: res.body.releaseKey } : {}),
    driver: o.driver,
    ...(o.kubeconfig ? { kubeconfig: o.kubeconfig } : {}),
  };
  const address = o.interconnectAddress === undefined ? undefined : parseInterconnectAddress(o.interconnectAddress);
  if (address) cfg.interconnectAddress = address;
  writeEdgeConfig(o.dataDir, cfg);
  log.info(
    { edge: o.name, project: cfg.project, approved: res.body.approved },
    res.body.approved ? 'enrolled' : 'enrolled; waiting for approval on the hub (outpost edge approve)',
  );
  return cfg;
}
