/**
 * @module The outpost executable: one binary, one verb per role (`outpost hub`, `outpost edge`) plus
 * the operator CLI. The role verbs are in main/ (hub-command.ts, edge-command.ts): main.ts and
 * main/ are the only code that imports both hub/ and edge/, and this file the only one that exits
 * the process.
 */
import { Command } from 'commander';
import { buildInfo } from './core/version.js';
import { registerEdgeLocalCommands } from './edge/cli.js';
import {
  exitCodeOf,
  formatError,
  registerEdgeAdminCommands,
  registerOperatorCommands,
  shouldPrintError,
} from './cli/index.js';
import { registerEdgeCommand } from './main/edge-command.js';
import { registerHubCommand } from './main/hub-command.js';

export function buildProgram(): Command {
  const { version, commit } = buildInfo();
  const program = new Command('outpost')
    .description('Edge orchestrator: a hub control plane and edge agents that keep working offline')
    .version(
      `outpost ${version} (commit ${commit}, node ${process.version})`,
      '-v, --version',
      'print the version, the git commit it was built from and the Node it runs on',
    )
    .exitOverride()
    .showHelpAfterError('(run `outpost --help` for usage)');

  registerHubCommand(program);
  const edge = registerEdgeCommand(program);
  registerEdgeLocalCommands(edge);
  registerEdgeAdminCommands(edge);
  registerOperatorCommands(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (err) {
    if (shouldPrintError(err)) process.stderr.write(`error: ${formatError(err)}\n`);
    return exitCodeOf(err);
  }
}

main(process.argv).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
