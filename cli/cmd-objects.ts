/** @module `outpost apply`, `get`, `describe`, `delete`: the object verbs. */
import type { Command } from 'commander';
import { eventsQuery, type ConnectionView } from '../core/api/views.js';
import { GLOBAL_SCOPE, KINDS, type Kind } from '../core/resources.js';
import { GLOBAL_HELP, inGlobalScope } from './global-scope.js';
import { HubError } from './client.js';
import { collect, registerApplyCommands } from './cmd-apply.js';
import { registerGetCommand } from './cmd-get.js';
import { objectPath, openSession, type CliDeps } from './context.js';
import { fetchPackage, type PackageObject } from './cmd-package.js';
import { describeObject } from './describe.js';
import { describePackage } from './describe-package.js';
import { deleteProject, describeProject, PROJECT_KINDS } from './cmd-projects.js';
import { asUsage, CliError, UsageError } from './errors.js';
import { KIND_HELP, parseKindArg, parseKindOrPackageArg } from './kinds.js';
import { KIND_INFO } from './kinds.js';
import { line } from './output.js';
import { readSources } from './sources.js';
import type { ApiObject, EventView } from './views.js';

/** How many events `describe` shows; `outpost get events --for KIND/NAME` shows more. */
const DESCRIBE_EVENTS = 10;
/** `describe edge` shows this many of its latest connections. */
const DESCRIBE_CONNECTIONS = 5;

/** `placement eu` or `placement/eu`: exactly one name, or a usage error. */
function kindAndName<K extends { singular: string }>(
  kindArg: string,
  nameArg: string | undefined,
  verb: string,
  parse: (s: string) => { info: K; name?: string },
): { info: K; name: string } {
  const { info, name } = asUsage(() => parse(kindArg));
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
  registerGetCommand(program, deps);

  program
    .command('describe')
    .description(
      'show one object in detail: metadata, spec, status, broken edges, local intents, events (or a package: its versions and where each runs)',
    )
    .argument('<kind>', `${KIND_HELP}, package|packages|pkg, project|projects|proj (or KIND/NAME)`)
    .argument('[name]', 'the object')
    .option('--global', GLOBAL_HELP)
    .addHelpText(
      'after',
      '\nExamples:\n  outpost describe edge shop-12\n  outpost describe placement/eu\n  outpost describe package web\n  outpost describe project shop',
    )
    .action(async (kindArg: string, nameArg: string | undefined, dOpts: { global?: boolean }, cmd: Command) => {
      const [k, n] = kindArg.split('/');
      if (PROJECT_KINDS.has(k.toLowerCase())) {
        const name = n ?? nameArg;
        if (!name) throw new UsageError('describe needs a name: outpost describe project NAME');
        return describeProject(await openSession(cmd, deps), name);
      }
      const { info, name } = kindAndName(kindArg, nameArg, 'describe', parseKindOrPackageArg);
      const s = inGlobalScope(await openSession(cmd, deps), info.kind, dOpts.global);
      const o =
        info.kind === 'Package'
          ? await fetchPackage(s, name)
          : await s.client.get<ApiObject>(objectPath(s.project, info.path, name), {
              subject: { kind: info.singular, name },
            });
      let events: EventView[] | string;
      try {
        const r = await s.client.get<{ items?: EventView[] }>(
          `/api/v1/projects/${encodeURIComponent(s.project)}/events`,
          { query: { ...eventsQuery(info.kind, name), limit: DESCRIBE_EVENTS } },
        );
        events = r?.items ?? [];
      } catch (err) {
        // The object itself was read; a missing event log should not hide it.
        events = (err as Error).message;
      }
      let connections: Partial<ConnectionView>[] | string | undefined;
      if (info.kind === 'Edge')
        try {
          const r = await s.client.get<{ items?: Partial<ConnectionView>[] }>(
            `${objectPath(s.project, info.path, name)}/connections`,
            { query: { limit: DESCRIBE_CONNECTIONS } },
          );
          connections = r?.items ?? [];
        } catch (err) {
          connections = (err as Error).message;
        }
      const opts = { now: deps.now(), color: s.out.color, events, connections };
      s.out.out.write(o.kind === 'Package' ? describePackage(o as PackageObject, opts) : describeObject(o, opts));
    });

  program
    .command('delete')
    .description(
      'delete workloads, placements, registries, agent upgrades, data objects, clusters and the rest by name or as listed in files, or a project with everything of it (edges leave with `outpost edge decommission`)',
    )
    .argument(
      '[kind]',
      'workload|wl, placement|pl, registry|reg, agentupgrade|au, dataobject|do, cluster|cl, clustertemplate|ct, project|proj (or KIND/NAME)',
    )
    .argument('[name]', 'the object')
    .option('-f, --filename <path>', 'delete the objects of these files, directories or - (stdin); repeatable', collect)
    .option('--ignore-not-found', 'an object that does not exist is not an error')
    .option(
      '--force',
      'delete a cluster even while Placements target it (their workloads then fail on its edge); on a cluster already Deleting, end its deletion without waiting for its nodes',
    )
    .option('--global', GLOBAL_HELP)
    .option('--move-edges-to <project>', "delete project: move the project's edges to this project")
    .option('--decommission-edges', "delete project: decommission the project's edges")
    .addHelpText(
      'after',
      '\nExamples:\n  outpost delete placement eu\n  outpost delete -f deploy/\n  outpost delete project shop --move-edges-to default',
    )
    .action(
      async (
        kindArg: string | undefined,
        nameArg: string | undefined,
        opts: {
          filename?: string[];
          ignoreNotFound?: boolean;
          force?: boolean;
          moveEdgesTo?: string;
          decommissionEdges?: boolean;
          global?: boolean;
        },
        cmd: Command,
      ) => {
        const [k, n] = (kindArg ?? '').split('/');
        if (PROJECT_KINDS.has(k.toLowerCase())) {
          const name = n ?? nameArg;
          if (!name) throw new UsageError('delete needs a name: outpost delete project NAME');
          return deleteProject(await openSession(cmd, deps), name, opts);
        }
        if (opts.moveEdgesTo !== undefined || opts.decommissionEdges)
          throw new UsageError('--move-edges-to and --decommission-edges go with `outpost delete project NAME`');
        let targets: { kind: Kind; name: string; project?: string }[];
        if (opts.filename) {
          if (kindArg !== undefined) throw new UsageError('give either -f FILE or KIND NAME, not both');
          if (opts.global)
            throw new UsageError(
              '--global names one global ClusterTemplate: a file says it itself (metadata.project "*")',
            );
          targets = fileTargets(await readSources(opts.filename, deps.stdin));
        } else {
          if (kindArg === undefined)
            throw new UsageError('delete needs KIND NAME or -f FILE: outpost delete placement eu');
          const { info, name } = kindAndName(kindArg, nameArg, 'delete', parseKindArg);
          targets = [{ kind: info.kind, name, ...(opts.global ? { project: GLOBAL_SCOPE } : {}) }];
          inGlobalScope(undefined, info.kind, opts.global);
        }
        const edges = targets.filter((t) => t.kind === 'Edge');
        if (edges.length > 0 && !opts.filename)
          throw new UsageError(
            `edges are not deleted but decommissioned (their credential is revoked): outpost edge decommission ${edges[0].name}`,
          );
        const s = await openSession(cmd, deps);
        for (const e of edges)
          line(s.out.err, `edge/${e.name} skipped: edges leave with \`outpost edge decommission ${e.name}\``);
        let failed = 0;
        // Placements before workloads: a workload still placed would fail its placement for a moment.
        // Registries last: a placement being deleted may still pull through one. Imports before
        // the exports they name.
        // Clusters after the placements that target them, templates after the clusters that use them;
        // any other kind after those (none is left out; edges were skipped above).
        const first: Kind[] = [
          'ServiceImport',
          'ServiceExport',
          'AgentUpgrade',
          'DataObject',
          'Placement',
          'Workload',
          'Registry',
          'Cluster',
          'ClusterTemplate',
        ];
        const order: Kind[] = [...first, ...KINDS.filter((k) => !first.includes(k) && k !== 'Edge')];
        for (const t of order.flatMap((k) => targets.filter((x) => x.kind === k))) {
          const info = KIND_INFO[t.kind];
          try {
            const r = await s.client.delete<{ changes?: string[]; deleting?: unknown }>(
              objectPath(t.project ?? s.project, info.path, t.name),
              {
                subject: { kind: info.singular, name: t.name },
                ...(opts.force && t.kind === 'Cluster' ? { query: { force: 'true' } } : {}),
              },
            );
            // A cluster goes once its nodes tore it down (docs/clusters.md, "Delete").
            if (r?.deleting)
              line(
                s.out.out,
                `${info.singular}/${t.name} deleting: its nodes tear it down, and it goes once every one has (outpost get ${info.path} shows it meanwhile)`,
              );
            else line(s.out.out, `${info.singular}/${t.name} deleted`);
            // An AgentUpgrade's answer says what changes on its edges (who keeps or takes which).
            for (const c of Array.isArray(r?.changes) ? r.changes : []) line(s.out.out, `  ${String(c)}`);
          } catch (err) {
            if (err instanceof HubError && err.status === 404 && (opts.ignoreNotFound || opts.filename)) {
              if (!opts.ignoreNotFound) {
                failed++;
                line(s.out.err, `${info.singular}/${t.name} not found`);
              }
              continue;
            }
            throw err;
          }
        }
        if (failed > 0)
          throw new CliError(`${failed} of the objects were not found (--ignore-not-found to accept that)`);
      },
    );
}

/** Kind, name and project of each object of the files, without validating the rest. */
function fileTargets(sourced: { object: Record<string, unknown>; where: string }[]) {
  return sourced.map(({ object, where }) => {
    const kind = object.kind;
    const meta = (object.metadata ?? {}) as { name?: unknown; project?: unknown };
    if (typeof kind !== 'string' || !(KINDS as readonly string[]).includes(kind) || typeof meta.name !== 'string')
      throw new CliError(`${where}: not an Outpost object with a kind and metadata.name; nothing was deleted`);
    return {
      kind: kind as Kind,
      name: meta.name,
      ...(typeof meta.project === 'string' ? { project: meta.project } : {}),
    };
  });
}
