/**
 * @module The outpost executable: one binary, one verb per role (`outpost hub`, `outpost edge`) plus
 * the operator CLI. This is the only file that imports both hub/ and edge/, and the only one that
 * exits the process.
 */
import { Command, CommanderError } from 'commander';
import { buildInfo } from './core/version.js';

async function main(argv: string[]): Promise<number> {
  const { version, commit } = buildInfo();
  const program = new Command('outpost')
    .description('Edge orchestrator: a hub control plane and edge agents that keep working offline')
    .version(`outpost ${version} (commit ${commit})`, '-v, --version', 'print the version and the git commit it was built from')
    .exitOverride()
    .showHelpAfterError('(run `outpost --help` for usage)');
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2;
    }
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

main(process.argv).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
