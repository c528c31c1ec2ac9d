/**
 * @module `outpost edge approve|label|drain|uncordon|decommission|clear`: the hub-side
 * administration of edges. They are added to the `edge` command that also starts the agent
 * (main.ts owns it), hence `registerEdgeAdminCommands(edgeCommand)`.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { isValidName } from '../core/ids.js';
import { parseLabels } from '../core/selector.js';
import { objectPath, openSession, type CliDeps } from './context.js';
import { asUsage, UsageError } from './errors.js';
import { line } from './output.js';

/**
 * kubectl's label edits: `k=v` sets, `k-` removes. Returns the body of POST .../labels, where
 * null removes a label. Throws InvalidArgumentError (exit code 2) naming the bad edit.
 */
export function parseLabelEdits(edits: string[]): Record<string, string | null> {
  if (edits.length === 0)
    throw new InvalidArgumentError('give at least one label edit: key=value sets a label, key- removes it');
  const out: Record<string, string | null> = {};
  for (const e of edits) {
    let key: string;
    let value: string | null;
    if (!e.includes('=') && e.endsWith('-')) {
      key = e.slice(0, -1);
      value = null;
      try {
        parseLabels(`${key}=`);
      } catch (err) {
        throw new InvalidArgumentError(`invalid label removal "${e}": ${(err as Error).message}`);
      }
    } else {
      let parsed: Record<string, string>;
      try {
        parsed = parseLabels(e);
      } catch (err) {
        throw new InvalidArgumentError((err as Error).message);
      }
      const entries = Object.entries(parsed);
      if (entries.length !== 1)
        throw new InvalidArgumentError(`invalid label edit "${e}": give one key=value or key- per argument`);
      [[key, value]] = entries;
    }
    if (Object.hasOwn(out, key) && out[key] !== value)
      throw new InvalidArgumentError(`label "${key}" is edited twice: keep one edit`);
    out[key] = value;
  }
  return out;
}

function parseEdgeName(s: string): string {
  if (!isValidName(s))
    throw new InvalidArgumentError(`invalid edge name "${s}": edge names are 1-63 lower-case letters, digits or "-"`);
  return s;
}

export function registerEdgeAdminCommands(edge: Command, deps: CliDeps): void {
  const simple = [
    [
      'approve',
      'approve a Pending edge (hub started with --require-approval) so workloads can be placed on it',
      'approved',
    ],
    ['drain', 'remove the workloads from an edge and place no new ones (it stays connected)', 'drained'],
    ['uncordon', 'let a drained edge take workloads again', 'uncordoned'],
  ] as const;
  for (const [verb, description, done] of simple) {
    edge
      .command(verb)
      .description(description)
      .argument('<name>', 'the edge', parseEdgeName)
      .action(async (name: string, _opts: unknown, cmd: Command) => {
        const s = await openSession(cmd, deps);
        await s.client.post(`${objectPath(s.project, 'edges', name)}/${verb}`, {}, { subject: { kind: 'edge', name } });
        line(s.out.out, `edge/${name} ${done}`);
      });
  }

  edge
    .command('label')
    .description('set (key=value) or remove (key-) labels of an edge; placements select edges by label')
    .argument('<name>', 'the edge', parseEdgeName)
    .argument('<edits...>', 'key=value to set, key- to remove')
    .addHelpText('after', '\nExample:\n  outpost edge label shop-12 region=eu tier=small legacy-')
    .action(async (name: string, edits: string[], _opts: unknown, cmd: Command) => {
      const labels = asUsage(() => parseLabelEdits(edits));
      const s = await openSession(cmd, deps);
      await s.client.post(
        `${objectPath(s.project, 'edges', name)}/labels`,
        { labels },
        { subject: { kind: 'edge', name } },
      );
      line(s.out.out, `edge/${name} labeled`);
    });

  edge
    .command('decommission')
    .description("revoke an edge's credential, close its connection and forget it (asks first on a terminal)")
    .argument('<name>', 'the edge', parseEdgeName)
    .option('-y, --yes', 'do not ask (required when not on a terminal)')
    .action(async (name: string, opts: { yes?: boolean }, cmd: Command) => {
      if (!opts.yes) {
        if (!deps.stdin.isTTY)
          throw new UsageError(`refusing to decommission edge ${name} without confirmation: add --yes`);
        const ok = await deps.confirm(
          `Decommission edge ${name}? Its credential is revoked and it must enroll again with a new join token.`,
        );
        if (!ok) {
          line(deps.stderr, 'not decommissioned');
          return;
        }
      }
      const s = await openSession(cmd, deps);
      await s.client.post(
        `${objectPath(s.project, 'edges', name)}/decommission`,
        {},
        { subject: { kind: 'edge', name } },
      );
      line(s.out.out, `edge/${name} decommissioned`);
    });

  edge
    .command('clear')
    .description(
      'clear the local intents (pause, overrides) made on site for one workload, so the hub spec applies again',
    )
    .argument('<name>', 'the edge', parseEdgeName)
    .argument('<workload>', 'the workload')
    .action(async (name: string, workload: string, _opts: unknown, cmd: Command) => {
      const s = await openSession(cmd, deps);
      await s.client.post(
        `${objectPath(s.project, 'edges', name)}/clear-intents`,
        { workload },
        { subject: { kind: 'edge', name } },
      );
      line(s.out.out, `edge/${name}: local intents for workload ${workload} cleared`);
    });
}
