/**
 * @module Enrollment: trade a join token (which pins the hub's CA, k3s style) for this edge's own
 * credential, once. The CA is fetched and checked against the pin before anything is sent.
 */
import fs from 'node:fs';
import { isValidName } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import { newSealKeyPair } from '../core/secrets.js';
import type { Inventory } from '../core/resources.js';
import { requestJson } from '../sync/http-json.js';

import { fetchPinnedCa, parseToken } from '../sync/pinned-ca.js';
import { parseHubList, writeEdgeConfig, type EdgeConfig } from './config.js';
import type { DriverName } from './drivers/driver.js';

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

export async function enroll(o: EnrollOptions): Promise<EdgeConfig> {
  if (!isValidName(o.name))
    throw new Error(`--name ${o.name}: use 1-63 lower-case letters, digits or '-' (the hostname is the default)`);
  // Several URLs (hub replicas): the first that answers enrolls the edge; all are kept in edge.json.
  const hubs = parseHubList(o.hub);
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
  writeEdgeConfig(o.dataDir, cfg);
  log.info(
    { edge: o.name, project: cfg.project, approved: res.body.approved },
    res.body.approved ? 'enrolled' : 'enrolled; waiting for approval on the hub (outpost edge approve)',
  );
  return cfg;
}
