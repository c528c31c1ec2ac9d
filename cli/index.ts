/**
 * @module The operator CLI: commands that talk to a hub over its REST API (docs/api.md,
 * docs/cli.md). A pure HTTP client: it imports no hub internals, only core/ and sync/pinned-ca.
 * main.ts wires it in and maps errors to exit codes with `exitCodeOf`.
 *
 * @example
 * const program = new Command('outpost').exitOverride();
 * registerOperatorCommands(program);
 * registerEdgeAdminCommands(edgeCommand);
 * try { await program.parseAsync(argv); } catch (err) { return exitCodeOf(err); }
 */
import type { Command } from 'commander';
import { registerAgentCommands } from './cmd-agent.js';
import { registerClusterCommands } from './cmd-cluster.js';
import { registerBlobCommands } from './cmd-blob.js';
import { registerGitRepoCommands } from './cmd-gitrepo.js';
import { registerImageCommands } from './cmd-image.js';
import { registerDataCommands } from './cmd-data.js';
import { registerEdgeAdminCommands as registerEdgeAdmin } from './cmd-edge.js';
import { registerKubeconfig } from './cmd-kubeconfig.js';
import { registerLogin } from './cmd-login.js';
import { registerMetaCommands } from './cmd-meta.js';
import { registerObjectCommands } from './cmd-objects.js';
import { registerPackageCommands } from './cmd-package.js';
import { registerRolloutCommands } from './cmd-rollout.js';
import { registerTokenCommands } from './cmd-token.js';
import { registerEdgeTunnelCommands, registerTunnelCommands } from './cmd-tunnel.js';
import { defaultDeps, parseProject, type CliDeps } from './context.js';

export {
  CliError,
  EXIT_FAILURE,
  EXIT_OK,
  EXIT_USAGE,
  exitCodeOf,
  formatError,
  optionParser,
  shouldPrintError,
  UsageError,
} from './errors.js';
export { HubClient, HubError, type HubConnection } from './client.js';
export type { CliDeps } from './context.js';

function withDefaults(deps: Partial<CliDeps> | undefined): CliDeps {
  return { ...defaultDeps(), ...deps };
}

/**
 * Adds `login`, `whoami`, `apply`, `diff`, `get`, `describe`, `delete`, `rollout ...`, `token ...`, `version`, `completion`
 * to `program`, and the global `--project` option. `deps` replaces I/O and the clock in tests.
 */
export function registerOperatorCommands(program: Command, deps?: Partial<CliDeps>): void {
  const d = withDefaults(deps);
  program.option(
    '--project <name>',
    'the project to work in (default: the token\'s project, else "default"; env OUTPOST_PROJECT)',
    parseProject,
  );
  registerLogin(program, d);
  registerKubeconfig(program, d);
  registerObjectCommands(program, d);
  registerRolloutCommands(program, d);
  registerTokenCommands(program, d);
  registerTunnelCommands(program, d);
  registerBlobCommands(program, d);
  registerImageCommands(program, d);
  registerDataCommands(program, d);
  registerPackageCommands(program, d);
  registerGitRepoCommands(program, d);
  registerAgentCommands(program, d);
  registerClusterCommands(program, d);
  registerMetaCommands(program, d);
}

/** Adds `approve`, `label`, `drain`, `uncordon`, `decommission` and `clear` to the existing `edge` command. */
export function registerEdgeAdminCommands(edgeCommand: Command, deps?: Partial<CliDeps>): void {
  const d = withDefaults(deps);
  registerEdgeAdmin(edgeCommand, d);
  registerEdgeTunnelCommands(edgeCommand, d);
}
