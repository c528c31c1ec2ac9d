/** @module `outpost apply` (with `--dry-run`) and `outpost diff`: send files' objects to the hub, or ask what would change. */
import type { ApplyResponse, EdgeImpact } from '../core/api/types.js';
import { InvalidArgumentError, type Command } from 'commander';
import { createTwoFilesPatch } from 'diff';
import { HubError } from './client.js';
import { objectPath, openSession, type CliDeps, type Session } from './context.js';
import { CliError } from './errors.js';
import { KIND_INFO } from './kinds.js';
import { line, toYaml } from './output.js';
import { checkObjects, checkRequestSize, readSources, type SourcedObject } from './sources.js';
import type { Kind } from '../core/resources.js';
import { effectiveRolloutText } from '../core/rollout.js';

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Partial: a hub of another version may leave a field out. */
type ApplyAnswer = Partial<ApplyResponse>;

const DRY_RUN = ['none', 'server', 'client'] as const;
type DryRun = (typeof DRY_RUN)[number];

function parseDryRun(s: string): DryRun {
  if (!(DRY_RUN as readonly string[]).includes(s))
    throw new InvalidArgumentError(`--dry-run must be one of ${DRY_RUN.join(', ')} (got "${s}")`);
  return s as DryRun;
}

/** Maps the hub's 422 details (`{index, path, message}`) back to the file and document of each object. */
function applyRejection(err: HubError, sourced: SourcedObject[]): CliError {
  if (err.status !== 422 || !Array.isArray(err.details)) return err;
  const lines = (err.details as { index?: number; path?: string; message?: string }[]).map((d) => {
    const where = typeof d.index === 'number' && sourced[d.index] ? sourced[d.index].where : 'an object';
    return `${where}: ${d.path ? `${d.path}: ` : ''}${d.message ?? ''}`;
  });
  return new CliError(`the hub rejected the objects; nothing was applied:\n  ${lines.join('\n  ')}`, { cause: err });
}

const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? '' : 's'}`;

/** `reaches 3 edges (+1, -0, 2 changed)`: what an object's change does to the fleet. */
export function impactText(e: EdgeImpact): string {
  return `reaches ${plural(e.total, 'edge')} (+${e.added} added, -${e.removed} removed, ${e.changed} changed)`;
}

/** Reads, checks locally, and sends the objects of `-f` arguments; the hub checks again. */
async function send(s: Session, deps: CliDeps, files: string[], dryRun: boolean): Promise<ApplyAnswer> {
  const sourced = await readSources(files, deps.stdin);
  if (sourced.length === 0) throw new CliError(`nothing to apply: ${files.join(', ')} holds no object`);
  await checkObjects(sourced, s.project);
  checkRequestSize(sourced);
  let res: ApplyAnswer;
  try {
    res = await s.client.post(
      '/api/v1/apply',
      { objects: sourced.map((o) => o.object) },
      { query: { project: s.project, ...(dryRun ? { dryRun: 'true' } : {}) }, subject: { kind: 'object' } },
    );
  } catch (err) {
    throw err instanceof HubError ? applyRejection(err, sourced) : err;
  }
  for (const w of res?.warnings ?? []) line(s.out.err, `warning: ${w}`);
  return res ?? {};
}

/** The fields `diff` compares: what `apply` sets, without what the hub adds (status, versions, uid). */
function comparable(o: Record<string, unknown> | undefined): string {
  if (!o) return '';
  const m = (o.metadata ?? {}) as Record<string, unknown>;
  return toYaml({
    apiVersion: o.apiVersion,
    kind: o.kind,
    metadata: { name: m.name, project: m.project, labels: m.labels ?? {}, annotations: m.annotations ?? {} },
    spec: o.spec,
  });
}

export function registerApplyCommands(program: Command, deps: CliDeps): void {
  program
    .command('apply')
    .description(
      'create or update objects from YAML/JSON files, directories or stdin; all are checked before any is changed',
    )
    .requiredOption(
      '-f, --filename <path>',
      'a file, a directory (its *.yaml, *.yml, *.json files, sorted) or - for stdin; repeatable',
      collect,
    )
    .option(
      '--dry-run <mode>',
      'server: the hub checks everything and says what would change, changing nothing; client: check locally only',
      parseDryRun,
      'none' as DryRun,
    )
    .addHelpText(
      'after',
      '\nExamples:\n  outpost apply -f web.yaml\n  outpost apply -f deploy/\n  cat web.yaml | outpost apply -f -\n  outpost apply -f web.yaml --dry-run=server',
    )
    .action(async (opts: { filename: string[]; dryRun: DryRun }, cmd: Command) => {
      if (opts.dryRun === 'client') {
        const sourced = await readSources(opts.filename, deps.stdin);
        if (sourced.length === 0) throw new CliError(`nothing to apply: ${opts.filename.join(', ')} holds no object`);
        const s = await openSession(cmd, deps);
        await checkObjects(sourced, s.project);
        for (const o of sourced) {
          const kind = String(o.object.kind).toLowerCase();
          line(s.out.out, `${kind}/${String((o.object.metadata as { name?: unknown }).name)} checked (client dry run)`);
        }
        return;
      }
      const s = await openSession(cmd, deps);
      const dry = opts.dryRun === 'server';
      const res = await send(s, deps, opts.filename, dry);
      for (const r of res.results ?? []) {
        const where = r.project && r.project !== s.project ? ` (project ${r.project})` : '';
        const impact = dry && r.edges ? `: ${impactText(r.edges)}` : '';
        line(
          s.out.out,
          `${r.kind.toLowerCase()}/${r.name} ${r.action}${where}${dry ? ' (server dry run)' : ''}${impact}`,
        );
        if (r.rollout) line(s.out.out, `  rollout: ${effectiveRolloutText(r.rollout)}`);
      }
    });

  program
    .command('diff')
    .description(
      'show what `apply -f` would change: a unified diff of each object against the hub, and the edges it reaches',
    )
    .requiredOption('-f, --filename <path>', 'a file, a directory or - for stdin; repeatable', collect)
    .addHelpText('after', '\nExample:\n  outpost diff -f web.yaml')
    .action(async (opts: { filename: string[] }, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const res = await send(s, deps, opts.filename, true);
      let same = 0;
      for (const r of res.results ?? []) {
        const ref = `${r.kind.toLowerCase()}/${r.name}`;
        if (r.action === 'unchanged') {
          same++;
          continue;
        }
        if (r.kind === 'Project') {
          line(
            s.out.err,
            `${ref} would be ${r.action}: diff shows objects, see the project with outpost get project -o yaml`,
          );
          continue;
        }
        const info = KIND_INFO[r.kind as Kind];
        let current: Record<string, unknown> | undefined;
        if (r.action !== 'created') {
          current = await s.client.get<Record<string, unknown>>(objectPath(r.project ?? s.project, info.path, r.name), {
            subject: { kind: info.singular, name: r.name },
          });
        }
        const patch = createTwoFilesPatch(
          `${ref} (hub)`,
          `${ref} (file)`,
          comparable(current),
          comparable(r.object),
          undefined,
          undefined,
          { context: 3 },
        );
        s.out.out.write(patch.replace(/^=+\n/, ''));
        if (r.edges)
          line(
            s.out.out,
            `# ${ref} ${r.action === 'created' ? 'would be created' : 'changes'}: ${impactText(r.edges)}`,
          );
        if (r.rollout) line(s.out.out, `# ${ref} rollout: ${effectiveRolloutText(r.rollout)}`);
      }
      if (same > 0) line(s.out.err, `${plural(same, 'object')} unchanged.`);
    });
}
