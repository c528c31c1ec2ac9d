/**
 * @module `outpost get`: list objects or show some by name (`get placements eu us`, `get
 * placement/eu workload/web`: each found one printed, then an error for each missing one, exit 1,
 * as kubectl), in kubectl's output formats (table, wide, yaml, json, name, jsonpath,
 * custom-columns), with `--show-labels`, `--no-headers`, `-w` (watch: print what changes until
 * interrupted or `--timeout`), `get events` with filters, and the catalog's packages.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { eventsQuery } from '../core/api/views.js';
import { API_VERSION, GLOBAL_SCOPE, type Kind } from '../core/resources.js';
import { GLOBAL_HELP, inGlobalScope } from './global-scope.js';
import { parseSelectorString } from '../core/selector.js';
import { HubError } from './client.js';
import { objectPath, openSession, parsePositiveDuration, type CliDeps, type Session } from './context.js';
import { asUsage, CliError, UsageError } from './errors.js';
import {
  GET_FORMATS,
  parseBoolFlag,
  parseGetOutput,
  renderCustomColumns,
  renderJsonPathOutput,
  withoutHeaders,
  type GetOutput,
} from './get-output.js';
import { KIND_HELP, parseKindArg, parseKindOrPackageArg, type KindInfo, type PackageKindInfo } from './kinds.js';
import { formatTable, line, toJson, toYaml } from './output.js';
import { dataObjectHints, formatObjectTable } from './tables.js';
import {
  fetchPackage,
  fetchPackages,
  formatPackageTable,
  listPackages,
  packageSummary,
  type PackageObject,
} from './cmd-package.js';
import { getProjects, PROJECT_KINDS } from './cmd-projects.js';
import { getReplicas, REPLICA_KINDS } from './cmd-replicas.js';
import { age, type ApiObject, type EventView } from './views.js';

/** How often `-w` asks the hub. */
const WATCH_INTERVAL_MS = 1_000;
const EVENT_KINDS = new Set(['event', 'events', 'ev']);

/** What `get` shows: an object kind, or the catalog's packages. */
type GetKind = KindInfo | PackageKindInfo;

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
  global?: boolean;
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
  /** `-o jsonpath`: a field no object has prints nothing (true, kubectl's default) or is an error. */
  allowMissingTemplateKeys: boolean;
}

/** What a watch compares: the object without the fields that move on every heartbeat. */
function fingerprint(o: ApiObject): string {
  return JSON.stringify(o, (k, v: unknown) => (/^lastSeen|Ago$|^connectedSince$/.test(k) ? undefined : v));
}

/** Renders objects in the chosen format; `first` says whether a table gets its header. */
function render(info: GetKind, objects: ApiObject[], o: GetOpts, s: Session, single: boolean, first: boolean): string {
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
      const text = renderJsonPathOutput(out, value, { allowMissingKeys: o.allowMissingTemplateKeys });
      return text.endsWith('\n') || text === '' ? text : `${text}\n`;
    }
    case 'custom-columns':
      return renderCustomColumns(out.columns, objects, { noHeaders: !o.headers || !first });
    default:
      if (info.kind === 'Package')
        return withoutHeaders(
          formatPackageTable((objects as PackageObject[]).map(packageSummary)),
          !o.headers || !first,
        );
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

/** One object by name; a 404 is a HubError naming it (`placement/eu`). */
async function fetchOne(s: Session, info: GetKind, name: string, o: GetOpts): Promise<ApiObject> {
  if (info.kind === 'Package') return fetchPackage(s, name);
  return s.client.get<ApiObject>(objectPath(s.project, info.path, name), {
    subject: { kind: info.singular, name },
    ...(o.showSecrets ? { query: { secrets: 'reveal' } } : {}),
  });
}

async function fetchObjects(s: Session, info: KindInfo, name: string | undefined, o: GetOpts): Promise<ApiObject[]> {
  const project = o.allProjects ? '*' : s.project;
  if (name !== undefined) return [await fetchOne(s, info, name, o)];
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
    .then((items) => (o.global ? items.filter((x) => x.metadata.project === GLOBAL_SCOPE) : items))
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
  let of = {};
  if (o.for) {
    const { info, name: n } = asUsage(() => parseKindArg(o.for!));
    if (!n) throw new UsageError(`--for takes KIND/NAME, e.g. --for edge/shop-12 (got "${o.for}")`);
    of = eventsQuery(info.kind, n);
  }
  const since = o.since === undefined ? undefined : s.deps.now() - o.since;
  const r = await s.client.get<{ items?: EventView[] }>(`/api/v1/projects/${encodeURIComponent(s.project)}/events`, {
    query: { ...of, reason: o.reason, since, limit: o.limit ?? 50 },
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

/** Objects named on one command line, grouped by kind in the order given. */
interface Named {
  info: GetKind;
  names: string[];
}

/**
 * `KIND [NAME...]`, or `KIND/NAME...` of one or more kinds (kubectl: once one argument is
 * KIND/NAME, every one is).
 */
function parseTargets(kindArg: string, nameArgs: string[]): Named[] {
  const first = parseKindOrPackageArg(kindArg);
  if (first.name === undefined) return [{ info: first.info, names: nameArgs }];
  const groups: Named[] = [];
  for (const arg of [kindArg, ...nameArgs]) {
    if (!arg.includes('/'))
      throw new UsageError(
        `"${arg}" has no kind: once one object is given as KIND/NAME, give each so (outpost get ${kindArg} ${first.info.singular}/${arg}), or give the kind once: outpost get ${first.info.path} ${first.name} ${arg}`,
      );
    const { info, name } = parseKindOrPackageArg(arg);
    const g = groups.find((x) => x.info.kind === info.kind) ?? groups[groups.push({ info, names: [] }) - 1];
    g.names.push(name!);
  }
  return groups;
}

/**
 * The objects named, as kubectl shows them: each one found (a table per kind, a blank line between,
 * names as KIND/NAME when there are several kinds; one List in yaml, json and jsonpath unless one
 * object was named), then each one missing as an error, and exit code 1.
 */
async function getNamed(s: Session, groups: Named[], o: GetOpts): Promise<void> {
  const found: { info: GetKind; objects: ApiObject[] }[] = [];
  const missing: string[] = [];
  for (const g of groups) {
    const objects: ApiObject[] = [];
    for (const name of g.names) {
      try {
        objects.push(await fetchOne(s, g.info, name, o));
      } catch (err) {
        if (!(err instanceof HubError && err.status === 404)) throw err;
        missing.push(err.message);
      }
    }
    if (objects.length > 0) found.push({ info: g.info, objects });
  }
  const all = found.flatMap((f) => f.objects);
  const single = groups.length === 1 && groups[0].names.length === 1;
  if (all.length > 0) {
    const out = o.output.kind;
    if (out === 'table' || out === 'wide') {
      const kindNames = found.length > 1;
      s.out.out.write(
        found
          .map(({ info, objects }) =>
            render(
              info,
              kindNames
                ? objects.map((x) => ({
                    ...x,
                    metadata: { ...x.metadata, name: `${info.singular}/${x.metadata.name}` },
                  }))
                : objects,
              o,
              s,
              false,
              true,
            ),
          )
          .join('\n'),
      );
      for (const f of found.filter((x) => x.info.kind === 'DataObject'))
        for (const h of dataObjectHints(f.objects, o)) line(s.out.err, `hint: ${h}`);
    } else if (out === 'name')
      s.out.out.write(found.map(({ info, objects }) => render(info, objects, o, s, false, true)).join(''));
    else s.out.out.write(render(found[0].info, all, o, s, single, true));
  }
  if (missing.length === 0) return;
  for (const m of missing) line(s.out.err, `error: ${m}`);
  // Each missing object has been named above; the exit code says the command failed.
  throw new CliError('');
}

/** `get KIND`: every object of the kind (the catalog for packages). */
async function getList(s: Session, info: GetKind, o: GetOpts): Promise<void> {
  const table = o.output.kind === 'table' || o.output.kind === 'wide';
  if (info.kind === 'Package') {
    // The table needs only the catalog; the objects carry every version, one request each.
    if (!table) return void s.out.out.write(render(info, await fetchPackages(s), o, s, false, true));
    const items = await listPackages(s);
    if (items.length === 0) return line(s.out.err, `No packages found in project ${s.project}.`);
    return void s.out.out.write(withoutHeaders(formatPackageTable(items), !o.headers));
  }
  const objects = await fetchObjects(s, info, undefined, o);
  if (objects.length === 0 && table) {
    line(
      s.out.err,
      `No ${info.path} found${o.allProjects ? '' : ` in project ${s.project}`}${o.selector ? ` matching ${o.selector}` : ''}${o.local ? ' holding intents made on site' : ''}.`,
    );
    return;
  }
  s.out.out.write(render(info, objects, o, s, false, true));
  if (info.kind === 'DataObject' && table) for (const h of dataObjectHints(objects, o)) line(s.out.err, `hint: ${h}`);
}

export function registerGetCommand(program: Command, deps: CliDeps): void {
  program
    .command('get')
    .description(
      `list objects or show some by name (kinds: ${KIND_HELP}, package|packages|pkg; and projects, events, replicas)`,
    )
    .argument('<kind>', 'edges, workloads, placements, packages, events or replicas (or KIND/NAME)')
    .argument(
      '[names...]',
      'objects by name (or more KIND/NAME): each found one is shown, then each missing one is an error (exit code 1)',
    )
    .option('-o, --output <format>', `output format: ${GET_FORMATS.join(', ')}`, parseGetOutput, {
      kind: 'table',
    } as GetOutput)
    .option(
      '-l, --selector <selector>',
      'filter by labels, kubectl syntax: region=eu,tier!=small,gpu,!legacy',
      parseSelectorFlag,
    )
    .option('-A, --all-projects', 'list objects of every project the token may read')
    .option('--global', `${GLOBAL_HELP}: named, or listed alone`)
    .option('--local', 'edges only: those holding intents made on site (a local pause or override not cleared)')
    .option(
      '--show-secrets',
      'show Secret values in clear in -o yaml/json (operator or admin tokens; they show as <redacted> otherwise)',
    )
    .option(
      '--allow-missing-template-keys [bool]',
      '-o jsonpath: with =false, a field no object has is an error (by default it prints nothing, as kubectl)',
      parseBoolFlag('--allow-missing-template-keys'),
      true,
    )
    .option('--show-labels', 'add a LABELS column (edges always have one)')
    .option('--no-headers', 'print tables without their header line')
    .option('-w, --watch', 'after the list, print each object again when it changes (and deletions) until interrupted')
    .option('--timeout <duration>', 'with -w: stop watching after this long, e.g. 30s, 5m', parsePositiveDuration)
    .option(
      '--for <kind/name>',
      "events: only those of this object, e.g. edge/shop-12 (an edge's include the AgentUpgrade events about it)",
    )
    .option('--reason <reason>', 'events: only this reason, e.g. Enrolled, RolloutPaused')
    .option('--since <duration>', 'events: only those of the last duration, e.g. 1h', parsePositiveDuration)
    .option('--limit <n>', 'events: at most this many, newest (default 50, at most 500)', parseLimit)
    .addHelpText(
      'after',
      `
Examples:
  outpost get edges -l region=eu -o wide
  outpost get placement eu -o yaml
  outpost get placements eu us
  outpost get placement/eu workload/web
  outpost get wl --all-projects
  outpost get edges -o name
  outpost get edges -o jsonpath='{range .items[*]}{.metadata.name}{"\\t"}{.status.phase}{"\\n"}{end}'
  outpost get edges -o custom-columns=NAME:.metadata.name,DRIVER:.status.inventory.driver
  outpost get placements -w
  outpost get placement eu -o jsonpath='{.spec.rollout.paused}' --allow-missing-template-keys=false
  outpost get events --for edge/shop-12 --since 1h
  outpost get replicas
  outpost get projects
  outpost get workload db -o yaml --show-secrets`,
    )
    .action(async (kindArg: string, nameArgs: string[], opts: GetOpts, cmd: Command) => {
      if (EVENT_KINDS.has(kindArg.toLowerCase())) {
        if (nameArgs.length > 0) throw new UsageError('events have no names: use --for KIND/NAME to filter');
        if (opts.watch) throw new UsageError('-w does not apply to events yet: run `outpost get events` again');
        return getEvents(await openSession(cmd, deps), opts);
      }
      const [projectKind, projectName] = kindArg.split('/');
      if (PROJECT_KINDS.has(projectKind!.toLowerCase())) {
        if (opts.watch || opts.selector || opts.allProjects || opts.local)
          throw new UsageError('projects are listed whole: -w, -l, -A and --local do not apply');
        // `get project/shop`, as `get placement/eu`.
        const named = projectName !== undefined ? [projectName, ...nameArgs] : nameArgs;
        if (named.length > 1 || named[0] === '') throw new UsageError('name one project, or none for all of them');
        return getProjects(await openSession(cmd, deps), named[0], opts.output.kind, opts.headers);
      }
      if (REPLICA_KINDS.has(kindArg.toLowerCase())) {
        if (opts.watch || opts.selector || opts.allProjects || opts.local)
          throw new UsageError("replicas are the hub's own: -w, -l, -A and --local do not apply");
        if (nameArgs.length > 1) throw new UsageError('name one replica, or none for all of them');
        return getReplicas(await openSession(cmd, deps), nameArgs[0], opts.output.kind, opts.headers);
      }
      if (opts.for || opts.reason || opts.since !== undefined || opts.limit !== undefined)
        throw new UsageError('--for, --reason, --since and --limit filter events: outpost get events --for edge/NAME');
      const groups = asUsage(() => parseTargets(kindArg, nameArgs));
      const { info } = groups[0];
      const names = groups.flatMap((g) => g.names);
      if (names.length > 0 && opts.selector !== undefined)
        throw new UsageError('-l selects among many objects; leave it out when naming them');
      if (opts.local && (info.kind !== 'Edge' || names.length > 0))
        throw new UsageError('--local lists edges holding intents made on site: outpost get edges --local');
      if (names.length > 0 && opts.allProjects)
        throw new UsageError('--all-projects lists objects; leave it out when naming them (use --project P)');
      if (opts.timeout !== undefined && !opts.watch) throw new UsageError('--timeout goes with -w (watch)');
      if (opts.watch && names.length > 1)
        throw new UsageError(
          `-w watches one kind or one object: outpost get ${info.path} -w, or outpost get ${info.singular} ${names[0]} -w`,
        );
      if (info.kind === 'Package') {
        if (opts.watch) throw new UsageError('-w does not apply to packages: run `outpost get packages` again');
        if (opts.selector !== undefined) throw new UsageError('packages have no labels to select by: leave out -l');
        if (opts.allProjects) throw new UsageError('packages are listed per project: leave out -A (use --project P)');
      }
      inGlobalScope(undefined, info.kind as Kind, opts.global);
      if (opts.global && opts.allProjects) throw new UsageError('--global and -A do not go together');
      const s = await openSession(cmd, deps);
      // A named global template is read in the hub-wide scope; listed, the project's list shows them.
      if (opts.global && names.length > 0) inGlobalScope(s, info.kind as Kind, true);
      if (opts.watch) return watch(s, info as KindInfo, names[0], opts);
      if (names.length > 0) return getNamed(s, groups, opts);
      return getList(s, info, opts);
    });
}
