/** @module `outpost rollout status|undo|pause|resume|restart|history`. */
import { InvalidArgumentError, type Command } from 'commander';
import { HubError } from './client.js';
import { objectPath, openSession, parsePositiveDuration, type CliDeps, type Session } from './context.js';
import { CliError } from './errors.js';
import { expectKind, type KindInfo } from './kinds.js';
import { line, toYaml } from './output.js';
import { formatRevisions, type RevisionView } from './tables.js';
import { rolloutLine, statusOf, type ApiObject, type PlacementStatus, type RolloutStatus } from './views.js';

/** How often --watch asks the hub; a person watching sees a change within a second. */
const WATCH_INTERVAL_MS = 1_000;

export function parseRevision(s: string): number {
  const n = Number(s);
  if (!/^\d+$/.test(s) || !Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError(
      `invalid revision "${s}": use a revision number from \`outpost rollout history workload NAME\``,
    );
  return n;
}

async function readRollout(s: Session, name: string): Promise<RolloutStatus | undefined> {
  const p = await s.client.get<ApiObject>(objectPath(s.project, 'placements', name), {
    subject: { kind: 'placement', name },
  });
  return statusOf<PlacementStatus>(p).rollout;
}

/** `paused: 1 edge failed ...`, saying the phase once when the reason starts with it. */
function phaseAndReason(phase: string, reason: string | undefined): string {
  const p = phase.toLowerCase();
  if (!reason) return `${p}: no reason given`;
  return reason.toLowerCase().startsWith(p) ? reason : `${p}: ${reason}`;
}

/** Complete ends a watch well; Failed, Paused and Pending (no edge selected) end it badly (someone has to act). */
function verdict(name: string, r: RolloutStatus | undefined): 'done' | CliError | undefined {
  if (r?.phase === 'Complete') return 'done';
  if (r?.phase === 'Failed' || r?.phase === 'Paused' || r?.phase === 'Pending')
    return new CliError(`rollout of placement/${name} ${phaseAndReason(r.phase, r.reason)}`);
  return undefined;
}

/** Errors worth waiting out during --watch: the hub restarting, or busy. */
function transient(err: unknown): boolean {
  if (err instanceof HubError) return err.status === 503 || err.status >= 500;
  return err instanceof CliError && /cannot reach the hub/.test(err.message);
}

async function watchRollout(s: Session, name: string, timeoutMs: number): Promise<void> {
  const { deps } = s;
  const deadline = deps.now() + timeoutMs;
  let last: string | undefined;
  let lastError: string | undefined;
  for (;;) {
    try {
      const r = await readRollout(s, name);
      lastError = undefined;
      const text = rolloutLine(r);
      if (text !== last) line(s.out.out, text);
      last = text;
      const v = verdict(name, r);
      if (v === 'done') return;
      if (v) throw v;
    } catch (err) {
      if (!transient(err)) throw err;
      const msg = (err as Error).message;
      if (msg !== lastError) line(s.out.err, `warning: ${msg}; still watching`);
      lastError = msg;
    }
    if (deps.now() >= deadline) {
      throw new CliError(
        `timed out after ${Math.round(timeoutMs / 1000)}s waiting for the rollout of placement/${name}; last: ${last ?? lastError ?? 'no status'}`,
      );
    }
    await deps.sleep(Math.min(WATCH_INTERVAL_MS, Math.max(0, deadline - deps.now())));
  }
}

export function registerRolloutCommands(program: Command, deps: CliDeps): void {
  const rollout = program
    .command('rollout')
    .description('watch and steer rollouts: status, pause, resume, undo, history');
  const placement = expectKind('Placement');
  const workload = expectKind('Workload');

  rollout
    .command('status')
    .description('show rollout progress of a placement; exit 1 if it failed or is paused')
    .argument('<kind>', 'placement|pl', placement)
    .argument('<name>', 'the placement')
    .option(
      '-w, --watch',
      'poll every second and print each change until Complete (exit 0), Failed or Paused (exit 1), or the timeout (exit 1)',
    )
    .option(
      '--timeout <duration>',
      'give up watching after this long, e.g. 90s, 5m, 1h',
      parsePositiveDuration,
      5 * 60_000,
    )
    .addHelpText(
      'after',
      '\nExample:\n  outpost apply -f web-v2.yaml && outpost rollout status placement eu --watch --timeout 10m',
    )
    .action(async (_k: KindInfo, name: string, opts: { watch?: boolean; timeout: number }, cmd: Command) => {
      const s = await openSession(cmd, deps);
      if (opts.watch) return watchRollout(s, name, opts.timeout);
      const r = await readRollout(s, name);
      line(s.out.out, rolloutLine(r));
      const v = verdict(name, r);
      if (v instanceof CliError) throw v;
    });

  for (const verb of ['pause', 'resume'] as const) {
    rollout
      .command(verb)
      .description(
        verb === 'pause'
          ? 'stop writing new content to more edges (edges already updated keep it)'
          : 'continue a paused rollout, accepting the current failures',
      )
      .argument('<kind>', 'placement|pl', placement)
      .argument('<name>', 'the placement')
      .action(async (_k: KindInfo, name: string, _opts: unknown, cmd: Command) => {
        const s = await openSession(cmd, deps);
        await s.client.post(
          `${objectPath(s.project, 'placements', name)}/${verb}`,
          {},
          { subject: { kind: 'placement', name } },
        );
        line(s.out.out, `placement/${name} ${verb === 'pause' ? 'paused' : 'resumed'}`);
      });
  }

  rollout
    .command('restart')
    .description('a package placement: resolve its version range again (a new rollout when a newer version matches)')
    .argument('<kind>', 'placement|pl', placement)
    .argument('<name>', 'the placement')
    .action(async (_k: KindInfo, name: string, _opts: unknown, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const r = await s.client.post<{ deployment: { package: string; version: string; previousVersion?: string } }>(
        `${objectPath(s.project, 'placements', name)}/restart`,
        {},
        { subject: { kind: 'placement', name } },
      );
      line(s.out.out, `placement/${name} restarted: ${r.deployment.package} ${r.deployment.version}`);
    });

  rollout
    .command('undo')
    .description('roll a workload back to an earlier revision (default: the previous one)')
    .argument('<kind>', 'workload|wl', workload)
    .argument('<name>', 'the workload')
    .option('--to-revision <n>', 'the revision to go back to (see `outpost rollout history`)', parseRevision)
    .action(async (_k: KindInfo, name: string, opts: { toRevision?: number }, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const r = await s.client.post<{ revision?: number }>(
        `${objectPath(s.project, 'workloads', name)}/rollback`,
        opts.toRevision === undefined ? {} : { revision: opts.toRevision },
        {
          subject: { kind: 'workload', name },
        },
      );
      const target = opts.toRevision === undefined ? 'the previous revision' : `revision ${opts.toRevision}`;
      line(
        s.out.out,
        `workload/${name} rolled back to ${target}${r?.revision !== undefined ? ` (now revision ${r.revision})` : ''}`,
      );
    });

  rollout
    .command('history')
    .description('list the kept revisions of a workload with their change cause, or show one with --revision N')
    .argument('<kind>', 'workload|wl', workload)
    .argument('<name>', 'the workload')
    .option('--revision <n>', 'show this revision: when, why (change cause) and its manifests', parseRevision)
    .addHelpText(
      'after',
      '\nSet the change cause with the annotation outpost.dev/change-cause (or kubernetes.io/change-cause) on the Workload.\nExamples:\n  outpost rollout history workload web\n  outpost rollout history workload web --revision 2',
    )
    .action(async (_k: KindInfo, name: string, opts: { revision?: number }, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const r = await s.client.get<{ items?: RevisionView[] } | RevisionView[]>(
        `${objectPath(s.project, 'workloads', name)}/revisions`,
        { subject: { kind: 'workload', name } },
      );
      const items = Array.isArray(r) ? r : (r?.items ?? []);
      if (opts.revision === undefined) {
        s.out.out.write(formatRevisions(items, deps.now()));
        return;
      }
      const rev = items.find((x) => x.revision === opts.revision);
      if (!rev)
        throw new CliError(
          `workload/${name} has no revision ${opts.revision}; kept revisions: ${items.map((x) => x.revision).join(', ') || 'none'}`,
        );
      s.out.out.write(
        `workload/${name} revision ${rev.revision}${rev.revision === Math.max(...items.map((x) => x.revision)) ? ' (current)' : ''}\n` +
          `Created:       ${rev.createdAt ?? '-'}\n` +
          `Change cause:  ${rev.changeCause ?? '<none>'}\n` +
          `Manifests:\n${toYaml(rev.manifests ?? [])
            .replace(/\n$/, '')
            .split('\n')
            .map((l) => `  ${l}`)
            .join('\n')}\n`,
      );
    });
}
