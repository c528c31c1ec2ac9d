/**
 * @module `outpost agent push FILE`: uploads an edge agent binary to the hub's blob store and has
 * the hub sign the release `{scope, version, digest, size}` with its release key (an admin token
 * for every project only; docs/operations.md). The scope is the project of the run, or `*` with
 * `--all-projects`. Prints an AgentUpgrade ready for `outpost apply -f` with the signed release
 * inside, which edges verify against the key they pinned at enrollment and their project.
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

/** The version a binary reports (`outpost 0.2.0 (commit ...)`), asked by running it with --version. */
function versionOf(file: string): string {
  let out: string;
  try {
    out = execFileSync(file, ['--version'], { timeout: 30_000, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  } catch (err) {
    throw new CliError(
      `cannot run ${file} --version to learn its version (${(err as Error).message}): pass --release-version V`,
    );
  }
  const m = /^outpost (\S+)/.exec(out.trim());
  if (!m)
    throw new CliError(
      `${file} --version printed "${out.trim().slice(0, 80)}", not "outpost VERSION ...": pass --release-version V`,
    );
  return m[1];
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
    .option('--release-version <version>', 'the version it reports (default: run FILE --version)')
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
        const version = o.releaseVersion ?? versionOf(file);
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
