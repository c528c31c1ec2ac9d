/** @module `outpost token create`: join tokens for edges, API tokens for people and scripts. */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { parseDuration } from '../core/durations.js';
import { parseLabels } from '../core/selector.js';
import { openSession, type CliDeps } from './context.js';
import { CliError, UsageError } from './errors.js';
import { line } from './output.js';

const ROLES = ['viewer', 'operator', 'admin'] as const;

function parseLabelsFlag(s: string): Record<string, string> {
  try {
    return parseLabels(s);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function parseTtl(s: string): string {
  try {
    if (parseDuration(s) <= 0) throw new Error(`invalid duration "${s}": must be more than zero`);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
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
    .description('create tokens: join tokens for edges, API tokens for the CLI and scripts');
  token
    .command('create')
    .description('create a join token (default) or, with --api, an API token; prints only the token on stdout')
    .option('--labels <k=v,...>', 'labels every edge joining with this token gets (join tokens)', parseLabelsFlag)
    .option('--ttl <duration>', 'how long the token is valid, e.g. 1h, 7d (default: the hub decides)', parseTtl)
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
}
