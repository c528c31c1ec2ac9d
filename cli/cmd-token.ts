/**
 * @module `outpost token create|list|revoke|rotate-admin`: join tokens for edges, API tokens for
 * people and scripts; all admin (docs/security.md).
 */
import { tokenState, type TokenView } from '../core/api/views.js';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { formatAge } from '../core/durations.js';
import { parseToken } from '../sync/pinned-ca.js';
import { configPath, readConfig, writeConfig } from './config.js';
import { parseLabels } from '../core/selector.js';
import { openSession, parsePositiveDuration, type CliDeps } from './context.js';
import { CliError, optionParser, UsageError } from './errors.js';
import { formatTable, line, toJson, toYaml } from './output.js';
import { formatLabels } from './views.js';

const ROLES = ['viewer', 'operator', 'admin'] as const;

function parseTtl(s: string): string {
  parsePositiveDuration(s);
  return s.trim();
}

function parseUses(s: string): number {
  const n = Number(s);
  if (!/^\d+$/.test(s) || !Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError(`invalid number of uses "${s}": use a whole number of at least 1`);
  return n;
}

interface TokenOpts {
  labels?: Record<string, string>;
  ttl?: string;
  uses?: number;
  api?: boolean;
  role?: (typeof ROLES)[number];
}

export function registerTokenCommands(program: Command, deps: CliDeps): void {
  const token = program
    .command('token')
    .description('join tokens for edges, API tokens for the CLI and scripts: create, list, revoke (admin)');
  token
    .command('create')
    .description('create a join token (default) or, with --api, an API token; prints only the token on stdout')
    .option(
      '--labels <k=v,...>',
      'labels every edge joining with this token gets (join tokens)',
      optionParser(parseLabels),
    )
    .option(
      '--ttl <duration>',
      'how long the token is valid, e.g. 1h, 7d (default: API tokens never expire; join tokens expire after 24h)',
      parseTtl,
    )
    .option(
      '--uses <n>',
      'how many edges may join with it (join tokens; default: unlimited until it expires)',
      parseUses,
    )
    .option('--api', 'create an API token instead of a join token')
    .addOption(new Option('--role <role>', 'the role of an API token').choices(ROLES))
    .addHelpText(
      'after',
      '\nThe token is for the project of --project (default: the CLI\'s project).\n\nExamples:\n  T=$(outpost token create --labels region=eu --ttl 1h --uses 10)\n  outpost edge --hub https://hub:8443 --join-token "$T" --name shop-12 --data /var/lib/outpost\n  outpost token create --api --role viewer --project shop',
    )
    .action(async (opts: TokenOpts, cmd: Command) => {
      if (opts.api) {
        if (!opts.role) throw new UsageError('--api needs --role viewer|operator|admin');
        if (opts.labels || opts.uses !== undefined)
          throw new UsageError('--labels and --uses are for join tokens; leave them out with --api');
      } else if (opts.role) {
        throw new UsageError('--role is for API tokens: add --api');
      }
      const s = await openSession(cmd, deps);
      const body = opts.api
        ? { role: opts.role, project: s.project, ...(opts.ttl ? { ttl: opts.ttl } : {}) }
        : {
            project: s.project,
            ...(opts.labels ? { labels: opts.labels } : {}),
            ...(opts.ttl ? { ttl: opts.ttl } : {}),
            ...(opts.uses !== undefined ? { uses: opts.uses } : {}),
          };
      const r = await s.client.post<{ token?: string; expiresAt?: string | number }>(
        opts.api ? '/api/v1/tokens/api' : '/api/v1/tokens/join',
        body,
      );
      if (!r?.token)
        throw new CliError('the hub answered without a token: is it an Outpost hub of a compatible version?');
      // Only the token goes to stdout so that T=$(outpost token create) works; a person at a terminal also gets the facts.
      line(s.out.out, r.token);
      if (s.out.err.isTTY) {
        const exp =
          r.expiresAt === undefined
            ? 'does not expire'
            : `expires ${typeof r.expiresAt === 'number' ? new Date(r.expiresAt).toISOString() : r.expiresAt}`;
        const what = opts.api
          ? `${opts.role} API token`
          : `join token${opts.uses !== undefined ? ` for ${opts.uses} edge${opts.uses === 1 ? '' : 's'}` : ''}`;
        line(s.out.err, `${what} for project ${s.project}; ${exp}`);
      }
    });

  token
    .command('list')
    .description('API and join tokens (never their secrets): the project of --project, or all for a * admin token')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'json', 'yaml']).default('table'))
    .option('-A, --all-projects', 'every project (needs an admin token for all projects)')
    .action(async (opts: { output: string; allProjects?: boolean }, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const q = opts.allProjects ? '' : `?project=${encodeURIComponent(s.project)}`;
      const r = await s.client.get<{ items: TokenView[] }>(`/api/v1/tokens${q}`);
      const items = r?.items ?? [];
      if (opts.output === 'json') return void s.out.out.write(toJson({ items }));
      if (opts.output === 'yaml') return void s.out.out.write(toYaml({ items }));
      const now = s.deps.now();
      s.out.out.write(
        formatTable(
          ['ID', 'KIND', 'PROJECT', 'ROLE', 'LABELS', 'USES', 'STATE', 'EXPIRES', 'DESCRIPTION'],
          items.map((t) => [
            t.id,
            t.kind,
            t.project,
            t.role ?? '-',
            t.kind === 'join' ? formatLabels(t.labels ?? {}) : '-',
            t.kind === 'join' ? `${t.uses ?? 0}/${t.usesLimit ?? '∞'}` : '-',
            tokenStateText(t, now),
            t.expiresAt ? t.expiresAt : 'never',
            t.description ?? '',
          ]),
        ),
      );
    });
  token
    .command('revoke <id>')
    .description('revoke an API or join token by its id (from `outpost token list`); refused at once everywhere')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      if (!/^[0-9a-f]{16}$/.test(id))
        throw new UsageError(`"${id}" is not a token id: use the 16-character ID column of \`outpost token list\``);
      const s = await openSession(cmd, deps);
      const r = await s.client.delete<{
        revoked: { id: string; kind: string; project: string };
        alreadyRevokedAt?: string;
      }>(`/api/v1/tokens/${id}`);
      line(
        s.out.out,
        r?.alreadyRevokedAt
          ? `${r.revoked.kind} token ${id} was already revoked at ${r.alreadyRevokedAt}`
          : `${r?.revoked.kind} token ${id} of project ${r?.revoked.project} revoked`,
      );
    });
  token
    .command('rotate-admin')
    .description(
      "replace the hub's first-start admin token (DATA/admin.token) with a new one and revoke the old; prints the new token",
    )
    .action(async (_o: unknown, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const r = await s.client.post<{ token: string; id: string; revoked: string | null }>(
        '/api/v1/tokens/rotate-admin',
        {},
      );
      if (!r?.token)
        throw new CliError('the hub answered without a token: is it an Outpost hub of a compatible version?');
      line(s.out.out, r.token);
      // The CLI logged in with the token just revoked: keep it working with the new one.
      const file = configPath(s.deps);
      const cfg = readConfig(file);
      const loggedInWithOld = !!cfg && !!r.revoked && parseToken(cfg.token)?.id === r.revoked;
      if (cfg && loggedInWithOld && !s.deps.env.OUTPOST_TOKEN) writeConfig(file, { ...cfg, token: r.token });
      line(
        s.out.err,
        `new admin token ${r.id} written to the hub's admin.token${r.revoked ? `; token ${r.revoked} revoked` : ''}${loggedInWithOld && !s.deps.env.OUTPOST_TOKEN ? `; ${file} updated` : ''}`,
      );
    });
}

/** `valid (3h left)`, `expired`, `used up`: core's rule, in the CLI's words. */
function tokenStateText(t: TokenView, now: number): string {
  const state = tokenState(t, now);
  if (state !== 'Valid') return state.toLowerCase();
  return t.expiresAt ? `valid (${formatAge(Date.parse(t.expiresAt) - now)} left)` : 'valid';
}
