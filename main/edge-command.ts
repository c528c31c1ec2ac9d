/**
 * @module `outpost edge` (the edge agent) and its verbs `install` and `uninstall`: their flags and
 * the edge code each one runs, loaded on demand so `outpost --version` and the CLI start without
 * it. main.ts adds the command, then the edge's other verbs (edge/cli.ts `outpost edge local`,
 * cli/ `approve`, `label`, ...) to it.
 */
import { isSea } from 'node:sea';
import { Command, Option } from 'commander';
import { DRIVER_NAMES } from '../core/driver-kinds.js';
import { createLogger } from '../core/logger.js';
import { buildInfo } from '../core/version.js';
import { applyEdgeProcessSettings } from '../edge/process-settings.js';
import { byteSizeOption, durationOption, labelsOption } from './flags.js';
import { untilSignal } from './signals.js';
import { applyV8Flags } from './v8-flags.js';

const log = createLogger('main');

/** The flags of `outpost edge` that its verbs read too (`install` enrolls with them). */
interface EdgeFlags {
  data: string;
  hub?: string;
  joinToken?: string;
  joinTokenFile?: string;
  name?: string;
  labels?: Record<string, string>;
  driver?: string;
  kubeconfig?: string;
  interconnectAddress?: string;
}

/** Adds `outpost edge` (the edge agent) and its verbs `install` and `uninstall` to `program`; returns it. */
export function registerEdgeCommand(program: Command): Command {
  const edge = program
    .command('edge')
    .description('run the edge agent (enrolls once with --hub and --join-token), or manage edges')
    .option('--data <dir>', 'data directory (credential, replica, runtime state)', '/var/lib/outpost-edge')
    .option(
      '--hub <url>',
      'hub URL, e.g. https://hub.example.com:7443, or the replicas, comma-separated (first start; again to change the list)',
    )
    .addOption(
      new Option(
        '--join-token <token>',
        'join token from `outpost token create` (first start only; visible in ps: prefer --join-token-file or OUTPOST_JOIN_TOKEN)',
      ).env('OUTPOST_JOIN_TOKEN'),
    )
    .option('--join-token-file <file>', 'read the join token from this file (first start only)')
    .option('--name <name>', 'edge name (default: the hostname)')
    .option('--labels <k=v,...>', 'labels for this edge', labelsOption)
    .addOption(new Option('--driver <driver>', 'runtime driver').choices(DRIVER_NAMES))
    .option('--kubeconfig <file>', 'kubeconfig for the kubernetes driver')
    .option(
      '--interconnect-address <ip>',
      "kubernetes driver: the address of this host the cluster's pods reach, where ServiceImports listen and their Services' Endpoints point (kept; again to change it, auto to find it from the cluster's Nodes, the default)",
    )
    .option('--blob-budget <size>', 'bytes the edge blob store may hold, e.g. 4GiB', byteSizeOption)
    .option(
      '--home-redial <duration>',
      'with several hub URLs: how long the agent dials only the replica that served it, once that connection ended, before it tries the next (default 10s)',
      durationOption,
    )
    .option(
      '--process-stable-run <duration>',
      'process driver: a workload restarted after a failure counts as recovered (Ready, its restart back-off reset) once it has run this long (default 10s)',
      durationOption,
    )
    .action(async (o: EdgeFlags & { blobBudget?: number; homeRedial?: number; processStableRun?: number }) => {
      // Before anything else is loaded: re-executes this process with the edge's V8 and malloc
      // settings (edge/process-settings.ts); does not return then.
      const tuning = applyEdgeProcessSettings((msg) => log.warn(msg));
      applyV8Flags();
      const [
        { startEdgeAgent },
        { resolveJoinToken },
        { launch, restartSelf },
        { trialLauncher },
        { startMemoryReclaim },
        { AgentLock },
      ] = await Promise.all([
        import('../edge/agent.js'),
        import('../edge/enroll.js'),
        import('../edge/upgrade/launcher.js'),
        import('../edge/upgrade/switch.js'),
        import('../edge/memory-reclaim.js'),
        import('../edge/agent-lock.js'),
      ]);
      log.info({ tuning }, 'edge process settings');
      // One agent per data directory (edge/agent-lock.ts), before anything of it is read: a second
      // `outpost edge` on it is refused naming the holder's pid; held until this process exits or
      // execs (the switch hands it to the release on trial and takes it back).
      const launcher = trialLauncher();
      const lock = new AgentLock(o.data, {
        what: launcher ? 'outpost edge (a release on trial)' : 'outpost edge',
        ...(launcher ? { launcher } : {}),
        log,
      });
      await lock.acquire();
      // A release switch pending or committed (edge/upgrade/launcher.ts): runs the new binary on
      // trial and commits or rolls back, or becomes the committed binary (does not return then).
      await launch(o.data, log, lock, buildInfo().version);
      let switchTo: (version: string) => void = () => undefined;
      const switchRequested = new Promise<string>((r) => (switchTo = r));
      const agent = await startEdgeAgent({
        dataDir: o.data,
        hub: o.hub,
        joinToken: resolveJoinToken(o),
        name: o.name,
        labels: o.labels,
        driver: o.driver,
        kubeconfig: o.kubeconfig,
        ...(o.interconnectAddress !== undefined ? { interconnectAddress: o.interconnectAddress } : {}),
        ...(o.blobBudget !== undefined ? { blobBudgetBytes: o.blobBudget } : {}),
        ...(o.homeRedial !== undefined ? { homeRedialMs: o.homeRedial } : {}),
        ...(o.processStableRun !== undefined ? { processStableMs: o.processStableRun } : {}),
        restartForSwitch: (version) => switchTo(version),
      });
      // The garbage of bursts given back (edge/memory-reclaim.ts); Node's defaults with tuning off.
      const reclaim = tuning === 'off' ? undefined : startMemoryReclaim();
      process.stderr.write(
        `outpost edge ${agent.config.name} running (hub ${agent.config.hub}, driver ${agent.config.driver}, local API ${agent.socketPath})\n`,
      );
      const restart = await Promise.race([
        untilSignal((sig) => agent.close(`agent stopped by ${sig}: an operator stop or restart`)).then(() => undefined),
        switchRequested,
      ]);
      reclaim?.stop();
      if (restart !== undefined) {
        log.info({ version: restart }, 'a release is staged: closing the agent and starting again to switch to it');
        await agent.close(`agent upgrade: restarting to switch to release ${restart}`);
        restartSelf(isSea());
      }
    });
  edge
    .command('install')
    .description(
      'enroll this host with --hub and --join-token and install the systemd service outpost-edge; --dry-run shows what it would write',
    )
    .option('--dry-run', 'print every step and file, change nothing, contact nobody')
    .option('--unit-dir <dir>', 'where to write outpost-edge.service', '/etc/systemd/system')
    .option('--bin <file>', 'where to install the executable', '/usr/local/bin/outpost')
    .action(async (o: { dryRun?: boolean; unitDir: string; bin: string }, cmd: Command) => {
      // --data, --hub, --join-token, --name, --labels, --driver, --kubeconfig, --interconnect-address
      // and the run flags (--blob-budget, --home-redial, --process-stable-run: carried into the unit)
      // belong to `outpost edge`.
      const g = cmd.optsWithGlobals() as EdgeFlags & {
        blobBudget?: number;
        homeRedial?: number;
        processStableRun?: number;
      };
      const [{ installEdge }, { isPackaged }, { resolveJoinToken }] = await Promise.all([
        import('../edge/install.js'),
        import('../sync/native.js'),
        import('../edge/enroll.js'),
      ]);
      process.stdout.write(
        await installEdge({
          ...g,
          joinToken: resolveJoinToken(g),
          dataDir: g.data,
          ...(g.blobBudget !== undefined ? { blobBudgetBytes: g.blobBudget } : {}),
          ...(g.homeRedial !== undefined ? { homeRedialMs: g.homeRedial } : {}),
          ...(g.processStableRun !== undefined ? { processStableMs: g.processStableRun } : {}),
          unitDir: o.unitDir,
          bin: o.bin,
          dryRun: o.dryRun,
          packaged: isPackaged(),
          execPath: process.execPath,
        }),
      );
    });
  edge
    .command('uninstall')
    .description(
      'undo outpost edge install on this host: stop the service, remove every workload, the unit and the data directory (--yes to do it)',
    )
    .option('--yes', 'do it (without: say what would be done)')
    .option('--unit-dir <dir>', 'where outpost-edge.service is', '/etc/systemd/system')
    .action(async (o: { yes?: boolean; unitDir: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals() as { data: string };
      const { uninstallEdge } = await import('../edge/uninstall.js');
      process.stdout.write(await uninstallEdge({ dataDir: g.data, unitDir: o.unitDir, yes: o.yes }));
    });
  return edge;
}
