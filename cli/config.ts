/**
 * @module Where the CLI finds the hub: the config file `outpost login` writes
 * (`$OUTPOST_CONFIG` or `~/.config/outpost/config.json`, mode 0600 because it holds a token),
 * overridden per run by `OUTPOST_HUB` / `OUTPOST_TOKEN` (CI, scripts) and `OUTPOST_CA` (a PEM file).
 * The hub may be several URLs, its replicas' (`--hub A,B`, `OUTPOST_HUB=A,B`): the client moves on
 * to the next when one cannot be reached (cli/failover.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { certFingerprint, fetchPinnedCa, parseToken, splitPem } from '../sync/pinned-ca.js';
import type { HubConnection } from './client.js';
import { CliError } from './errors.js';

export interface CliConfig {
  /** The first of `hubs` (what a CLI of an older version reads). */
  hub: string;
  /** The URLs of the hub's replicas, in the order to try; absent when there is one. */
  hubs?: string[];
  token: string;
  /** PEM of the hub's CA, read once at login and checked against the token's pin. */
  ca?: string;
  /** Default project of the token (absent for an all-projects token). */
  project?: string;
}

export interface ConfigEnv {
  env: NodeJS.ProcessEnv;
  homedir: string;
}

export function configPath({ env, homedir }: ConfigEnv): string {
  return (
    env.OUTPOST_CONFIG || path.join(env.XDG_CONFIG_HOME || path.join(homedir, '.config'), 'outpost', 'config.json')
  );
}

export function readConfig(file: string): CliConfig | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError(`cannot read the CLI config ${file}: ${(err as Error).message}`, { cause: err });
  }
  let cfg: Partial<CliConfig>;
  try {
    cfg = JSON.parse(text) as Partial<CliConfig>;
  } catch (err) {
    throw new CliError(
      `the CLI config ${file} is not valid JSON: run \`outpost login --hub URL --token T\` to write it again`,
      { cause: err },
    );
  }
  if (typeof cfg?.hub !== 'string' || typeof cfg.token !== 'string') {
    throw new CliError(
      `the CLI config ${file} lacks "hub" or "token": run \`outpost login --hub URL --token T\` to write it again`,
    );
  }
  const hubs = Array.isArray(cfg.hubs) ? cfg.hubs.filter((h): h is string => typeof h === 'string') : [];
  return {
    hub: cfg.hub,
    ...(hubs.length > 1 ? { hubs } : {}),
    token: cfg.token,
    ...(typeof cfg.ca === 'string' ? { ca: cfg.ca } : {}),
    ...(typeof cfg.project === 'string' ? { project: cfg.project } : {}),
  };
}

/** The hub URLs of a config, in order. */
export function configHubs(cfg: CliConfig): string[] {
  return cfg.hubs?.length ? cfg.hubs : [cfg.hub];
}

/**
 * The hub URLs of `--hub` (given once or more, each one URL or several comma-separated) or of
 * OUTPOST_HUB: each an http(s) URL, without a trailing slash, each once, in the order given.
 * `what` names the source in the message of a bad one.
 */
export function parseHubList(values: string | readonly string[], what = '--hub'): string[] {
  const out: string[] = [];
  for (const v of typeof values === 'string' ? [values] : values)
    for (const raw of v.split(',')) {
      const h = raw.trim().replace(/\/+$/, '');
      if (!h) continue;
      let u: URL | undefined;
      try {
        u = new URL(h);
      } catch {
        u = undefined;
      }
      if (!u || (u.protocol !== 'https:' && u.protocol !== 'http:'))
        throw new CliError(
          `${what}: "${raw.trim()}" is not a hub URL: give https://HOST:PORT, or several comma-separated (the hub's replicas)`,
        );
      if (!out.includes(h)) out.push(h);
    }
  return out;
}

/** Written to a temporary file with mode 0600 and renamed, so the token is never readable by others, even briefly. */
export function writeConfig(file: string, cfg: CliConfig): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, JSON.stringify(cfg, null, 2) + '\n', { mode: 0o600 });
    fs.chmodSync(tmp, 0o600);
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw new CliError(
      `cannot write the CLI config ${file}: ${(err as Error).message}; set OUTPOST_CONFIG to a writable path`,
      { cause: err },
    );
  }
}

/** Reads a CA file given with --ca or OUTPOST_CA; when the token pins a CA, the file must hold that very certificate. */
export function readCaFile(file: string, pin: string | undefined): string {
  let pem: string;
  try {
    pem = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read the CA file ${file}: ${(err as Error).message}`, { cause: err });
  }
  const certs = splitPem(pem);
  if (certs.length === 0)
    throw new CliError(`the CA file ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  if (pin) {
    const match = certs.find((c) => certFingerprint(c) === pin);
    if (!match) {
      throw new CliError(
        `the CA file ${file} does not contain the CA the token pins (sha256 ${pin}): use the hub's ca.pem (GET /api/v1/tls/ca.pem) or leave --ca out to fetch it`,
      );
    }
    return match;
  }
  return pem;
}

/**
 * The CA to trust for the hub at `hubs` (its replicas share one): a CA file if given, else `known`
 * if it matches the token's pin, else the pinned CA read from the first URL that gives it. A token
 * without a pin (a hub with --insecure-http, or a certificate from a public CA) uses no CA of its
 * own: node's default trust store.
 */
export async function caFor(
  hubs: string | readonly string[],
  token: string,
  opts: { caFile?: string; known?: string },
): Promise<string | undefined> {
  const list = typeof hubs === 'string' ? [hubs] : hubs;
  const pin = parseToken(token)?.caFingerprint;
  if (opts.caFile) return readCaFile(opts.caFile, pin);
  if (opts.known && (!pin || splitPem(opts.known).some((c) => certFingerprint(c) === pin))) return opts.known;
  if (!pin) return undefined;
  const plain = list.find((h) => !/^https:/i.test(h));
  if (plain)
    throw new CliError(`the token pins a CA, so the hub speaks TLS: use https:// in the hub URL (got ${plain})`);
  let first: unknown;
  for (const hub of list)
    try {
      return await fetchPinnedCa(hub, pin);
    } catch (err) {
      first ??= err;
    }
  throw new CliError(
    `${(first as Error).message}${(first as Error).cause instanceof Error ? ` (${((first as Error).cause as Error).message})` : ''}`,
    { cause: first },
  );
}

/** The connection of this run: env overrides the config file field by field. */
export async function resolveConnection(
  ce: ConfigEnv,
): Promise<{ conn: HubConnection; project?: string; projectKnown: boolean }> {
  const file = configPath(ce);
  const cfg = readConfig(file);
  const hubs = ce.env.OUTPOST_HUB ? parseHubList(ce.env.OUTPOST_HUB, 'OUTPOST_HUB') : cfg && configHubs(cfg);
  const hub = hubs?.[0];
  const token = ce.env.OUTPOST_TOKEN || cfg?.token;
  if (!hubs || !hub || !token) {
    throw new CliError(
      `not logged in to a hub (no ${file}): run \`outpost login --hub URL --token T\`, or set OUTPOST_HUB and OUTPOST_TOKEN`,
    );
  }
  // The stored CA belongs to the stored hub (its replicas share it); an OUTPOST_HUB elsewhere needs its own.
  const known = cfg && hubs.every((h) => configHubs(cfg).includes(h)) ? cfg.ca : undefined;
  const ca = await caFor(hubs, token, { caFile: ce.env.OUTPOST_CA || undefined, known });
  // Login stored the token's project (none for an all-projects token); a token from the
  // environment has to be asked (whoami) by the caller when the project matters.
  const fromConfig = cfg?.token === token;
  return {
    conn: { hub, ...(hubs.length > 1 ? { hubs } : {}), token, ...(ca ? { ca } : {}) },
    ...(fromConfig && cfg?.project ? { project: cfg.project } : {}),
    projectKnown: fromConfig,
  };
}
