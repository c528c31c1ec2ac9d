/** @module `outpost apply`, `get`, `describe`, `delete`: the object verbs. */
import { InvalidArgumentError, type Command } from 'commander';
import { API_VERSION } from '../core/resources.js';
import { parseSelectorString } from '../core/selector.js';
import { HubError } from './client.js';
import { collect, registerApplyCommands } from './cmd-apply.js';
import { objectPath, openSession, type CliDeps } from './context.js';
import { describeObject } from './describe.js';
import { asUsage, CliError, UsageError } from './errors.js';
import { KIND_HELP, parseKindArg, type KindInfo } from './kinds.js';
import { line, toJson, toYaml } from './output.js';
import { formatObjectTable, OUTPUT_FORMATS, type OutputFormat } from './tables.js';
import type { ApiObject, EventView } from './views.js';

/** How many events `describe` shows; the hub keeps more (`outpost get events` is not a verb yet). */
const DESCRIBE_EVENTS = 10;

export function parseOutputFormat(s: string): OutputFormat {
  if (!(OUTPUT_FORMATS as readonly string[]).includes(s))
    throw new InvalidArgumentError(`unknown output format "${s}": use one of ${OUTPUT_FORMATS.join(', ')}`);
  return s as OutputFormat;
}

function parseSelectorFlag(s: string): string {
  try {
    parseSelectorString(s);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return s;
}

/** `placement eu` or `placement/eu`: exactly one name, or a usage error. */
function kindAndName(kindArg: string, nameArg: string | undefined, verb: string): { info: KindInfo; name: string } {
  const { info, name } = asUsage(() => parseKindArg(kindArg));
  if (name !== undefined && nameArg !== undefined)
    throw new UsageError(
      `give the name once: \`outpost ${verb} ${info.singular} ${name}\` or \`outpost ${verb} ${info.singular}/${name}\``,
    );
  const n = name ?? nameArg;
  if (!n) throw new UsageError(`${verb} needs a name: outpost ${verb} ${info.singular} NAME`);
  return { info, name: n };
}

export function registerObjectCommands(program: Command, deps: CliDeps): void {
  registerApplyCommands(program, deps);
  program
    .command('get')
    .description(`list objects or show one (kinds: ${KIND_HELP})`)
    .argument('<kind>', 'edges, workloads or placements (or KIND/NAME)')
    .argument('[name]', 'one object')
    .option(
      '-o, --output <format>',
      `output format: ${OUTPUT_FORMATS.join(', ')}`,
      parseOutputFormat,
      'table' as OutputFormat,
    )
    .option(
      '-l, --selector <selector>',
      'filter by labels, kubectl syntax: region=eu,tier!=small,gpu,!legacy',
      parseSelectorFlag,
    )
    .option('-A, --all-projects', 'list objects of every project the token may read')
    .option('--local', 'edges only: those holding intents made on site (a local pause or override not cleared)')
    .option(
      '--show-secrets',
      'show Secret values in clear in -o yaml/json (operator or admin tokens; they show as <redacted> otherwise)',
    )
    .addHelpText(
      'after',
      '\nExamples:\n  outpost get edges -l region=eu -o wide\n  outpost get placement eu -o yaml\n  outpost get wl --all-projects\n  outpost get workload db -o yaml --show-secrets',
    )
    .action(
      async (
        kindArg: string,
        nameArg: string | undefined,
        opts: {
          output: OutputFormat;
          selector?: string;
          allProjects?: boolean;
          showSecrets?: boolean;
          local?: boolean;
        },
        cmd: Command,
      ) => {
        const { info, name: slashName } = asUsage(() => parseKindArg(kindArg));
        if (slashName !== undefined && nameArg !== undefined)
          throw new UsageError(`give the name once: outpost get ${info.singular} ${slashName}`);
        const name = slashName ?? nameArg;
        if (name !== undefined && opts.selector !== undefined)
          throw new UsageError('-l selects among many objects; leave it out when naming one');
        if (opts.local && (info.kind !== 'Edge' || name !== undefined))
          throw new UsageError('--local lists edges holding intents made on site: outpost get edges --local');
        if (name !== undefined && opts.allProjects)
          throw new UsageError('--all-projects lists objects; leave it out when naming one (use --project P)');
        const s = await openSession(cmd, deps);
        const project = opts.allProjects ? '*' : s.project;
        const objects: ApiObject[] =
          name !== undefined
            ? [
                await s.client.get<ApiObject>(objectPath(project, info.path, name), {
                  subject: { kind: info.singular, name },
                  ...(opts.showSecrets ? { query: { secrets: 'reveal' } } : {}),
                }),
              ]
            : await s.client
                .list<ApiObject>(
                  objectPath(project, info.path),
                  {
                    labelSelector: opts.selector || undefined,
                    ...(opts.local ? { local: 'true' } : {}),
                    ...(opts.showSecrets ? { secrets: 'reveal' } : {}),
                  },
                  { kind: info.singular },
                )
                .catch((err: unknown) => {
                  // The hub hides other projects behind 404, so a project-bound token asking for all of them gets one.
                  if (opts.allProjects && err instanceof HubError && err.status === 404) {
                    throw new CliError(
                      `--all-projects needs a token for all projects; this one is bound to a project: leave out -A, or use --project P`,
                      { cause: err },
                    );
                  }
                  throw err;
                });
        if (opts.output === 'json' || opts.output === 'yaml') {
          const value = name !== undefined ? objects[0] : { apiVersion: API_VERSION, kind: 'List', items: objects };
          s.out.out.write(opts.output === 'json' ? toJson(value) : toYaml(value));
          return;
        }
        if (objects.length === 0) {
          line(
            s.out.err,
            `No ${info.path} found${opts.allProjects ? '' : ` in project ${project}`}${opts.selector ? ` matching ${opts.selector}` : ''}${opts.local ? ' holding intents made on site' : ''}.`,
          );
          return;
        }
        s.out.out.write(
          formatObjectTable(info, objects, {
            now: deps.now(),
            wide: opts.output === 'wide',
            allProjects: !!opts.allProjects,
            color: s.out.color,
          }),
        );
      },
    );

  program
    .command('describe')
    .description('show one object in detail: metadata, spec, status, broken edges, local intents, events')
    .argument('<kind>', `${KIND_HELP} (or KIND/NAME)`)
    .argument('[name]', 'the object')
    .addHelpText('after', '\nExamples:\n  outpost describe edge shop-12\n  outpost describe placement/eu')
    .action(async (kindArg: string, nameArg: string | undefined, _opts: unknown, cmd: Command) => {
      const { info, name } = kindAndName(kindArg, nameArg, 'describe');
      const s = await openSession(cmd, deps);
      const o = await s.client.get<ApiObject>(objectPath(s.project, info.path, name), {
        subject: { kind: info.singular, name },
      });
      let events: EventView[] | string;
      try {
        const r = await s.client.get<{ items?: EventView[] }>(
          `/api/v1/projects/${encodeURIComponent(s.project)}/events`,
          { query: { kind: info.kind, name, limit: DESCRIBE_EVENTS } },
        );
        events = r?.items ?? [];
      } catch (err) {
        // The object itself was read; a missing event log should not hide it.
        events = (err as Error).message;
      }
      s.out.out.write(describeObject(o, { now: deps.now(), color: s.out.color, events }));
    });

  program
    .command('delete')
    .description('delete a workload or placement (edges leave with `outpost edge decommission`)')
    .argument('<kind>', 'workload|wl, placement|pl (or KIND/NAME)')
    .argument('[name]', 'the object')
    .addHelpText('after', '\nExample:\n  outpost delete placement eu')
    .action(async (kindArg: string, nameArg: string | undefined, _opts: unknown, cmd: Command) => {
      const { info, name } = kindAndName(kindArg, nameArg, 'delete');
      if (info.kind === 'Edge')
        throw new UsageError(
          `edges are not deleted but decommissioned (their credential is revoked): outpost edge decommission ${name}`,
        );
      const s = await openSession(cmd, deps);
      await s.client.delete(objectPath(s.project, info.path, name), { subject: { kind: info.singular, name } });
      line(s.out.out, `${info.singular}/${name} deleted`);
    });
}
