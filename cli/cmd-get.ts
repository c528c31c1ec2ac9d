/**
 * @module `outpost get`: list objects or show one, in kubectl's output formats (table, wide, yaml,
 * json, name, jsonpath, custom-columns), with `--show-labels`, `--no-headers`, `-w` (watch: print
 * what changes until interrupted or `--timeout`), and `get events` with filters.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { API_VERSION } from '../core/resources.js';
import { parseSelectorString } from '../core/selector.js';
import { HubError } from './client.js';
import { objectPath, openSession, parsePositiveDuration, type CliDeps, type Session } from './context.js';
import { asUsage, CliError, UsageError } from './errors.js';
import {
  GET_FORMATS,
  parseGetOutput,
  renderCustomColumns,
  renderJsonPathOutput,
  withoutHeaders,
  type GetOutput,
} from './get-output.js';
import { KIND_HELP, parseKindArg, type KindInfo } from './kinds.js';
import { formatTable, line, toJson, toYaml } from './output.js';
import { formatObjectTable } from './tables.js';
import { getPackages } from './cmd-package.js';
import { getReplicas, REPLICA_KINDS } from './cmd-replicas.js';
import { age, type ApiObject, type EventView } from './views.js';

/** How often `-w` asks the hub. */
const WATCH_INTERVAL_MS = 1_000;
const EVENT_KINDS = new Set(['event', 'events', 'ev']);
const PACKAGE_KINDS = new Set(['package', 'packages', 'pkg']);

function parseSelectorFlag(s: string): string {
  try {
    parseSelectorString(s);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return s;
}

function parseLimit(s: string): number {
  const n = Number(s);
  if (!/^\d+$/.test(s) || n < 1 || n > 500) throw new InvalidArgumentError(`--limit ${s}: give a number from 1 to 500`);
  return n;
}

interface GetOpts {
  output: GetOutput;
  selector?: string;
  allProjects?: boolean;
  showLabels?: boolean;
  headers: boolean;
  watch?: boolean;
  timeout?: number;
  for?: string;
  reason?: string;
  since?: number;
  limit?: number;
  showSecrets?: boolean;
  /** Edges only: those holding intents made on site (`?local=true`). */
  local?: boolean;
}

/** What a watch compares: the object without the fields that move on every heartbeat. */
function fingerprint(o: ApiObject): string {
  return JSON.stringify(o, (k, v: unknown) => (/^lastSeen|Ago$|^connectedSince$/.test(k) ? undefined : v));
}

/** Renders objects in the chosen format; `first` says whether a table gets its header. */
function render(info: KindInfo, objects: ApiObject[], o: GetOpts, s: Session, single: boolean, first: boolean): string {
  const out = o.output;
  switch (out.kind) {
    case 'json':
    case 'yaml': {
      const value = single ? objects[0] : { apiVersion: API_VERSION, kind: 'List', items: objects };
      if (out.kind === 'json') return toJson(value);
      return (first ? '' : '---\n') + toYaml(value);
    }
    case 'name':
      return objects.map((x) => `${info.singular}/${x.metadata.name}\n`).join('');
    case 'jsonpath': {
      const value = single ? objects[0] : { apiVersion: API_VERSION, kind: 'List', items: objects };
      const text = renderJsonPathOutput(out.template, value);
      return text.endsWith('\n') || text === '' ? text : `${text}\n`;
    }
    case 'custom-columns':
      return renderCustomColumns(out.columns, objects, { noHeaders: !o.headers || !first });
    default:
      return withoutHeaders(
        formatObjectTable(info, objects, {
          now: s.deps.now(),
          wide: out.kind === 'wide',
          allProjects: !!o.allProjects,
          color: s.out.color,
          showLabels: !!o.showLabels,
        }),
        !o.headers || !first,
      );
  }
}

async function fetchObjects(s: Session, info: KindInfo, name: string | undefined, o: GetOpts): Promise<ApiObject[]> {
  const project = o.allProjects ? '*' : s.project;
  if (name !== undefined)
    return [
      await s.client.get<ApiObject>(objectPath(project, info.path, name), {
        subject: { kind: info.singular, name },
        ...(o.showSecrets ? { query: { secrets: 'reveal' } } : {}),
      }),
    ];
  return s.client
    .list<ApiObject>(
      objectPath(project, info.path),
      {
        labelSelector: o.selector || undefined,
        ...(o.local ? { local: 'true' } : {}),
        ...(o.showSecrets ? { secrets: 'reveal' } : {}),
      },
      { kind: info.singular },
    )
    .catch((err: unknown) => {
      // The hub hides other projects behind 404, so a project-bound token asking for all of them gets one.
      if (o.allProjects && err instanceof HubError && err.status === 404) {
        throw new CliError(
          `--all-projects needs a token for all projects; this one is bound to a project: leave out -A, or use --project P`,
          { cause: err },
        );
      }
      throw err;
    });
}

/** `-w`: the list once, then every object whose content changed, and every deletion, until the timeout. */
async function watch(s: Session, info: KindInfo, name: string | undefined, o: GetOpts): Promise<void> {
  const { deps } = s;
  const deadline = o.timeout === undefined ? Infinity : deps.now() + o.timeout;
  const seen = new Map<string, string>();
  let first = true;
  for (;;) {
    const objects = await fetchObjects(s, info, name, o);
    const changed = objects.filter((x) => seen.get(`${x.metadata.project}/${x.metadata.name}`) !== fingerprint(x));
    const present = new Set(objects.map((x) => `${x.metadata.project}/${x.metadata.name}`));
    if (changed.length > 0 || first) s.out.out.write(render(info, changed, o, s, false, first));
    for (const key of [...seen.keys()].filter((k) => !present.has(k))) {
      line(s.out.out, `${info.singular}/${key.slice(key.indexOf('/') + 1)} deleted`);
      seen.delete(key);
    }
    for (const x of changed) seen.set(`${x.metadata.project}/${x.metadata.name}`, fingerprint(x));
    first = false;
    if (deps.now() >= deadline) return;
    await deps.sleep(Math.min(WATCH_INTERVAL_MS, Math.max(0, deadline - deps.now())));
  }
}

async function getEvents(s: Session, o: GetOpts): Promise<void> {
  let kind: string | undefined;
  let name: string | undefined;
  if (o.for) {
    const { info, name: n } = asUsage(() => parseKindArg(o.for!));
    if (!n) throw new UsageError(`--for takes KIND/NAME, e.g. --for edge/shop-12 (got "${o.for}")`);
    kind = info.kind;
    name = n;
  }
  const since = o.since === undefined ? undefined : s.deps.now() - o.since;
  const r = await s.client.get<{ items?: EventView[] }>(`/api/v1/projects/${encodeURIComponent(s.project)}/events`, {
    query: { kind, name, reason: o.reason, since, limit: o.limit ?? 50 },
  });
  const items = (r?.items ?? []).slice().reverse(); // oldest first, as kubectl prints them
  if (o.output.kind === 'json' || o.output.kind === 'yaml') {
    const value = { kind: 'List', items };
    s.out.out.write(o.output.kind === 'json' ? toJson(value) : toYaml(value));
    return;
  }
  if (items.length === 0) {
    line(s.out.err, `No events found in project ${s.project}${o.for ? ` for ${o.for}` : ''}.`);
    return;
  }
  const now = s.deps.now();
  const rows = items.map((e) => [
    age(e.time ?? e.at, now),
    e.kind && e.name ? `${e.kind.toLowerCase()}/${e.name}` : '-',
    e.reason,
    e.message,
  ]);
  s.out.out.write(withoutHeaders(formatTable(['LAST SEEN', 'OBJECT', 'REASON', 'MESSAGE'], rows), !o.headers));
}

export function registerGetCommand(program: Command, deps: CliDeps): void {
  program
    .command('get')
    .description(`list objects or show one (kinds: ${KIND_HELP}; and events, packages, replicas)`)
    .argument('<kind>', 'edges, workloads, placements, packages, events or replicas (or KIND/NAME)')
    .argument('[name]', 'one object')
    .option('-o, --output <format>', `output format: ${GET_FORMATS.join(', ')}`, parseGetOutput, {
      kind: 'table',
    } as GetOutput)
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
    .option('--show-labels', 'add a LABELS column (edges always have one)')
    .option('--no-headers', 'print tables without their header line')
    .option('-w, --watch', 'after the list, print each object again when it changes (and deletions) until interrupted')
    .option('--timeout <duration>', 'with -w: stop watching after this long, e.g. 30s, 5m', parsePositiveDuration)
    .option('--for <kind/name>', 'events: only those of this object, e.g. edge/shop-12')
    .option('--reason <reason>', 'events: only this reason, e.g. Enrolled, RolloutPaused')
    .option('--since <duration>', 'events: only those of the last duration, e.g. 1h', parsePositiveDuration)
    .option('--limit <n>', 'events: at most this many, newest (default 50, at most 500)', parseLimit)
    .addHelpText(
      'after',
      `
Examples:
  outpost get edges -l region=eu -o wide
  outpost get placement eu -o yaml
  outpost get wl --all-projects
  outpost get edges -o name
  outpost get edges -o jsonpath='{range .items[*]}{.metadata.name}{"\\t"}{.status.phase}{"\\n"}{end}'
  outpost get edges -o custom-columns=NAME:.metadata.name,DRIVER:.status.inventory.driver
  outpost get placements -w
  outpost get events --for edge/shop-12 --since 1h
  outpost get replicas
  outpost get workload db -o yaml --show-secrets`,
    )
    .action(async (kindArg: string, nameArg: string | undefined, opts: GetOpts, cmd: Command) => {
      if (EVENT_KINDS.has(kindArg.toLowerCase())) {
        if (nameArg !== undefined) throw new UsageError('events have no names: use --for KIND/NAME to filter');
        if (opts.watch) throw new UsageError('-w does not apply to events yet: run `outpost get events` again');
        return getEvents(await openSession(cmd, deps), opts);
      }
      if (REPLICA_KINDS.has(kindArg.toLowerCase())) {
        if (opts.watch || opts.selector || opts.allProjects || opts.local)
          throw new UsageError("replicas are the hub's own: -w, -l, -A and --local do not apply");
        return getReplicas(await openSession(cmd, deps), nameArg, opts.output.kind, opts.headers);
      }
      if (PACKAGE_KINDS.has(kindArg.toLowerCase())) {
        const o = opts.output.kind;
        if (o !== 'table' && o !== 'yaml' && o !== 'json')
          throw new UsageError('packages print as table, yaml or json');
        return getPackages(await openSession(cmd, deps), nameArg, o);
      }
      if (opts.for || opts.reason || opts.since !== undefined || opts.limit !== undefined)
        throw new UsageError('--for, --reason, --since and --limit filter events: outpost get events --for edge/NAME');
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
      if (opts.timeout !== undefined && !opts.watch) throw new UsageError('--timeout goes with -w (watch)');
      const s = await openSession(cmd, deps);
      if (opts.watch) return watch(s, info, name, opts);
      const objects = await fetchObjects(s, info, name, opts);
      if (objects.length === 0 && (opts.output.kind === 'table' || opts.output.kind === 'wide')) {
        line(
          s.out.err,
          `No ${info.path} found${opts.allProjects ? '' : ` in project ${s.project}`}${opts.selector ? ` matching ${opts.selector}` : ''}${opts.local ? ' holding intents made on site' : ''}.`,
        );
        return;
      }
      s.out.out.write(render(info, objects, opts, s, name !== undefined, true));
    });
}
