/**
 * @module `outpost login`: pin the hub's CA from the token, check the token works, write the config
 * file. `--hub` may name the URLs of the hub's replicas (comma-separated, or the flag again): every
 * command then fails over between them (cli/failover.ts).
 */
import fs from 'node:fs';
import type { WhoAmI } from '../core/api/types.js';
import type { Command } from 'commander';
import { parseToken, TOKEN_PREFIX } from '../sync/pinned-ca.js';
import { HubClient } from './client.js';
import { caFor, configPath, parseHubList, readConfig, writeConfig } from './config.js';
import { openSession, outputOf, type CliDeps } from './context.js';
import { UsageError } from './errors.js';
import { line } from './output.js';

/** Partial: a hub of another version may leave a field out; the CLI shows '-' for it. */
type WhoAmIView = Partial<WhoAmI>;

interface DeviceStart {
  handle: string;
  verificationUri: string;
  verificationUriComplete?: string;
  userCode: string;
  expiresIn: number;
  interval: number;
}

interface SessionView {
  status: 'pending' | 'done';
  token?: string;
  person?: string;
  project?: string;
  role?: string;
  expiresAt?: number;
}

/**
 * `login --oidc`: the device flow, run by the hub with its client at the identity provider (the
 * CLI never holds the client secret). The person opens the URL, enters the code and signs in; the
 * CLI polls the hub until the hub has their session, whose token goes into the config like an
 * API token's. The hub refreshes the session with the provider; when it ends, log in again.
 */
async function loginOidc(
  deps: CliDeps,
  hubs: string[],
  project: string | undefined,
  caFile: string | undefined,
): Promise<void> {
  const out = outputOf(deps);
  const hub = hubs[0]!;
  const several = hubs.length > 1 ? { hubs } : {};
  const caGiven = caFile ? await caFor(hubs, '', { caFile }) : undefined;
  const anon = new HubClient({ hub, ...several, token: '', ...(caGiven ? { ca: caGiven } : {}) });
  const start = await anon.post<DeviceStart>('/api/v1/auth/oidc/device', project ? { project } : {});
  line(
    out.out,
    `to sign in, open ${start.verificationUriComplete ?? start.verificationUri} in a browser${start.verificationUriComplete ? '' : ` and enter the code ${start.userCode}`} (code ${start.userCode}); waiting...`,
  );
  const deadline = deps.now() + start.expiresIn * 1000;
  let done: SessionView | undefined;
  while (!done) {
    if (deps.now() > deadline)
      throw new UsageError('the sign-in was not completed in time: run `outpost login --oidc` again');
    await deps.sleep(Math.max(1, start.interval) * 1000);
    const r = await anon.post<SessionView>('/api/v1/auth/oidc/device/poll', { handle: start.handle });
    if (r.status === 'done') done = r;
  }
  const token = done.token!;
  // The session token pins the hub's CA as API tokens do: read it now if it was not given.
  const ca = caGiven ?? (await caFor(hubs, token, {}));
  const file = configPath({ env: deps.env, homedir: deps.homedir });
  writeConfig(file, {
    hub,
    ...several,
    token,
    ...(ca ? { ca } : {}),
    ...(done.project ? { project: done.project } : {}),
  });
  line(
    out.out,
    `logged in to ${hub} as ${done.person} (${done.role} in project ${done.project}; the session ends by ${new Date(done.expiresAt ?? 0).toISOString()} or at logout); config written to ${file}`,
  );
}

export function registerLogin(program: Command, deps: CliDeps): void {
  program
    .command('login')
    .description('connect the CLI to a hub: checks the token and writes the CLI config (mode 0600)')
    .option(
      '--hub <url>',
      "the hub URL, e.g. https://hub.example:8443, or its replicas' URLs comma-separated or --hub again (default: $OUTPOST_HUB)",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option('--token <token>', 'an API token (opt1....) (default: $OUTPOST_TOKEN)')
    .option('--oidc', "sign in as a person with the hub's identity provider (device flow: open the URL it prints)")
    .option(
      '--ca <file>',
      "the hub's CA certificate (PEM); default: read it from the hub and check it against the token's pin",
    )
    .addHelpText(
      'after',
      '\nThe config file is $OUTPOST_CONFIG or ~/.config/outpost/config.json. With several hub URLs (the\nreplicas of one hub), a command that cannot reach one tries the next, and says which one answered.\n\nExamples:\n  outpost login --hub https://hub.example:8443 --token "$(cat admin-token)"\n  outpost login --hub https://hub-1:7443,https://hub-2:7443 --token "$(cat admin-token)"',
    )
    .action(async (opts: { hub?: string[]; token?: string; ca?: string; oidc?: boolean }, cmd: Command) => {
      const out = outputOf(deps);
      const given = opts.hub ?? (deps.env.OUTPOST_HUB ? [deps.env.OUTPOST_HUB] : []);
      const hubs = (() => {
        try {
          return parseHubList(given, opts.hub ? '--hub' : 'OUTPOST_HUB');
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
      })();
      if (!hubs.length) throw new UsageError('login needs the hub URL: --hub https://HOST:PORT');
      if (opts.oidc) {
        if (opts.token) throw new UsageError('--oidc signs you in as a person: leave out --token');
        return loginOidc(deps, hubs, (cmd.optsWithGlobals() as { project?: string }).project, opts.ca);
      }
      const token = (opts.token ?? deps.env.OUTPOST_TOKEN ?? '').trim();
      if (!token)
        throw new UsageError('login needs an API token: --token T (the hub printed an admin token at its first start)');
      const parsed = parseToken(token);
      if (!parsed)
        throw new UsageError(
          `--token is not an Outpost token: API tokens look like ${TOKEN_PREFIX.api}.<ca-fingerprint>.<id>.<secret>`,
        );
      if (parsed.kind !== 'api') {
        const what = parsed.kind === 'join' ? 'a join token (for `outpost edge --join-token`)' : "an edge's credential";
        throw new UsageError(
          `--token is ${what}, not an API token: log in with an API token (${TOKEN_PREFIX.api}...), e.g. one from \`outpost token create --api --role operator\``,
        );
      }
      const ca = await caFor(hubs, token, { caFile: opts.ca });
      const hub = hubs[0]!;
      const several = hubs.length > 1 ? { hubs } : {};
      const client = new HubClient(
        { hub, ...several, token, ...(ca ? { ca } : {}) },
        { onFailover: (note) => line(out.err, note) },
      );
      const who = await client.get<WhoAmIView>('/api/v1/whoami');
      const flagProject = (cmd.optsWithGlobals() as { project?: string }).project;
      const project = flagProject ?? (who?.project && who.project !== '*' ? who.project : undefined);
      const file = configPath({ env: deps.env, homedir: deps.homedir });
      writeConfig(file, { hub, ...several, token, ...(ca ? { ca } : {}), ...(project ? { project } : {}) });
      const scope = who?.project === '*' ? 'all projects' : `project ${who?.project ?? '?'}`;
      const where = hubs.length > 1 ? `${hubs.join(', ')} (failing over in this order)` : hub;
      line(out.out, `logged in to ${where} as ${who?.role ?? 'unknown role'} (${scope}); config written to ${file}`);
    });

  program
    .command('logout')
    .description(
      "end the CLI's session on the hub (after `login --oidc`) and remove the token from the CLI config; an API token is only removed from the config (revoke it with `token revoke`)",
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const out = outputOf(deps);
      const file = configPath({ env: deps.env, homedir: deps.homedir });
      const cfg = readConfig(file);
      if (!cfg) throw new UsageError(`not logged in: there is no CLI config at ${file}`);
      const s = await openSession(cmd, deps);
      const who = await s.client.get<WhoAmIView>('/api/v1/whoami').catch(() => undefined);
      if (who?.person) await s.client.post('/api/v1/auth/logout');
      fs.rmSync(file, { force: true });
      line(
        out.out,
        who?.person
          ? `logged out: the session of ${who.person} on ${s.client.hub} ended; ${file} removed`
          : `${file} removed (its API token stays valid until revoked: outpost token revoke ID)`,
      );
    });

  program
    .command('whoami')
    .description("show the hub, role and project of the CLI's token")
    .action(async (_opts: unknown, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const who = await s.client.get<WhoAmIView>('/api/v1/whoami');
      line(s.out.out, `hub:      ${s.client.hub}`);
      if (s.client.hubs.length > 1) line(s.out.out, `hub URLs: ${s.client.hubs.join(', ')} (tried in this order)`);
      if (who?.replica) line(s.out.out, `replica:  ${who.replica.id} (${who.replica.url})`);
      line(s.out.out, `role:     ${who?.role ?? '-'}`);
      line(s.out.out, `project:  ${who?.project === '*' ? '* (all projects)' : (who?.project ?? '-')}`);
      if (who?.person) line(s.out.out, `person:   ${who.person} (signed in with the identity provider)`);
      line(s.out.out, `${who?.person ? 'session: ' : 'token id:'} ${who?.tokenId ?? '-'}`);
      line(s.out.out, `default project of this CLI: ${s.project}`);
    });
}
