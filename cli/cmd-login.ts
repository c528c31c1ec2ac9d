/**
 * @module `outpost login`: pin the hub's CA from the token, check the token works, write the config
 * file. `--hub` may name the URLs of the hub's replicas (comma-separated, or the flag again): every
 * command then fails over between them (cli/failover.ts).
 */
import type { WhoAmI } from '../core/api/types.js';
import type { Command } from 'commander';
import { parseToken, TOKEN_PREFIX } from '../sync/pinned-ca.js';
import { HubClient } from './client.js';
import { caFor, configPath, parseHubList, writeConfig } from './config.js';
import { openSession, outputOf, type CliDeps } from './context.js';
import { UsageError } from './errors.js';
import { line } from './output.js';

/** Partial: a hub of another version may leave a field out; the CLI shows '-' for it. */
type WhoAmIView = Partial<WhoAmI>;

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
    .option(
      '--ca <file>',
      "the hub's CA certificate (PEM); default: read it from the hub and check it against the token's pin",
    )
    .addHelpText(
      'after',
      '\nThe config file is $OUTPOST_CONFIG or ~/.config/outpost/config.json. With several hub URLs (the\nreplicas of one hub), a command that cannot reach one tries the next, and says which one answered.\n\nExamples:\n  outpost login --hub https://hub.example:8443 --token "$(cat admin-token)"\n  outpost login --hub https://hub-1:7443,https://hub-2:7443 --token "$(cat admin-token)"',
    )
    .action(async (opts: { hub?: string[]; token?: string; ca?: string }, cmd: Command) => {
      const out = outputOf(deps);
      const given = opts.hub ?? (deps.env.OUTPOST_HUB ? [deps.env.OUTPOST_HUB] : []);
      const hubs = (() => {
        try {
          return parseHubList(given, opts.hub ? '--hub' : 'OUTPOST_HUB');
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
      })();
      const token = (opts.token ?? deps.env.OUTPOST_TOKEN ?? '').trim();
      if (!hubs.length) throw new UsageError('login needs the hub URL: --hub https://HOST:PORT');
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
      line(s.out.out, `token id: ${who?.tokenId ?? '-'}`);
      line(s.out.out, `default project of this CLI: ${s.project}`);
    });
}
