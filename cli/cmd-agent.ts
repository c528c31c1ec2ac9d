/**
 * @module `outpost agent push FILE`: uploads an edge agent binary to the hub's blob store and has
 * the hub sign the release `{scope, version, digest, size}` with its release key (an admin token
 * for every project only; docs/operations.md). The scope is the project of the run, or `*` with
 * `--all-projects`. Prints an AgentUpgrade ready for `outpost apply -f` with the signed release
 * inside, which edges verify against the key they pinned at enrollment and their project. The
 * version signed is the one the binary reports: an edge measures releases by it.
 */
import { execFileSync } from 'node:child_process';
import type { Command } from 'commander';
import { AGENT_MEDIA_TYPE } from '../core/blobs.js';
import type { SignedRelease } from '../core/release.js';
import { API_VERSION } from '../core/resources.js';
import { parseSelectorString } from '../core/selector.js';
import { pushBlob } from './cmd-blob.js';
import { openSession, type CliDeps } from './context.js';
import { CliError } from './errors.js';
import { toJson, toYaml } from './output.js';

/** What running `FILE --version` told: the version it reports, or why it could not tell (`unknown`). */
type Probe = { version: string } | { unknown: string };

/** The version a binary reports (`outpost 0.2.0 (commit ...)`), asked by running it with --version. */
function probeVersion(file: string): Probe {
  let out: string;
  try {
    out = execFileSync(file, ['--version'], { timeout: 30_000, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  } catch (err) {
    // Built for another platform (ENOEXEC), missing a library, not executable, or it failed.
    return { unknown: `cannot run ${file} --version here (${(err as Error).message.split('\n')[0]})` };
  }
  const m = /^outpost (\S+)/.exec(out.trim());
  if (!m) return { unknown: `${file} --version printed "${out.trim().slice(0, 80)}", not "outpost VERSION ..."` };
  return { version: m[1] };
}

/**
 * The version to sign: what FILE reports, or `--release-version V` if it reports that too. A binary
 * that reports another version is refused: an edge would switch to it, commit, report the binary's
 * version and never match the release. One this host cannot run is signed as V, with a warning.
 */
function releaseVersion(file: string, given: string | undefined, warn: (msg: string) => void): string {
  const probe = probeVersion(file);
  if (!given) {
    if ('unknown' in probe) throw new CliError(`${probe.unknown}: pass --release-version V, the version it reports`);
    return probe.version;
  }
  if ('version' in probe && probe.version !== given)
    throw new CliError(
      `${file} --version reports ${probe.version}, not ${given}: an edge would run it and report ${probe.version}, never ${given}; drop --release-version to sign it as ${probe.version}, or push the binary that reports ${given}`,
    );
  if ('unknown' in probe)
    warn(
      `warning: ${probe.unknown}: its version is not checked here, it is signed as ${given}; an edge that switches to it rolls it back if it reports another version`,
    );
  return given;
}

/** The default object name for a release: `agent-` and the version in the letters a name allows. */
export function upgradeName(version: string): string {
  return `agent-${version.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`.slice(0, 63).replace(/-+$/, '');
}

export function registerAgentCommands(program: Command, deps: CliDeps): void {
  const agent = program.command('agent').description('edge agent releases: push a binary for edges to upgrade to');
  agent
    .command('push')
    .description(
      "upload an agent binary and have the hub sign its release for this project's edges (an admin token for every project); prints the signed release",
    )
    .argument('<file>', 'the outpost executable, e.g. dist/outpost')
    // Not --version: that is the program's own flag, which commander answers first.
    .option(
      '--release-version <version>',
      'the version it reports (default: run FILE --version); refused when FILE reports another, unchecked with a warning when FILE cannot run here',
    )
    .option('--name <name>', 'name of the AgentUpgrade printed (default agent-VERSION)')
    .option(
      '-l, --selector <selector>',
      'edgeSelector of the AgentUpgrade printed, e.g. region=eu (default: every edge)',
    )
    .option(
      '--all-projects',
      "sign it for the edges of every project (scope *), not only this project's (push the binary to another project with `outpost blob push` to use it there)",
    )
    .option('-o, --output <format>', 'yaml or json', 'yaml')
    .action(
      async (
        file: string,
        o: { releaseVersion?: string; output: string; name?: string; selector?: string; allProjects?: boolean },
        cmd: Command,
      ) => {
        const version = releaseVersion(file, o.releaseVersion, (msg) => deps.stderr.write(`${msg}\n`));
        let edgeSelector;
        try {
          edgeSelector = o.selector ? parseSelectorString(o.selector) : {};
        } catch (err) {
          throw new CliError(`--selector: ${(err as Error).message}`);
        }
        const s = await openSession(cmd, deps);
        const blob = await pushBlob(s, file, AGENT_MEDIA_TYPE);
        // The hub scans the binary before it signs (docs/api.md): the verdict is not part of the release.
        const { scan: _scan, ...release } = await s.client.post<SignedRelease & { scan?: unknown }>(
          `/api/v1/projects/${s.project}/agent-releases`,
          { digest: blob.digest, version, scope: o.allProjects ? '*' : s.project },
        );
        const upgrade = {
          apiVersion: API_VERSION,
          kind: 'AgentUpgrade',
          metadata: { name: o.name ?? upgradeName(version) },
          spec: {
            release,
            edgeSelector,
            rollout: { maxUnavailable: 1, failureThreshold: 1, deadline: '2m' },
          },
        };
        s.out.out.write(o.output === 'json' ? toJson(upgrade) : toYaml(upgrade));
      },
    );
}
