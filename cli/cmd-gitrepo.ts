/** @module `outpost gitrepo sync NAME`: fetch a GitRepo's ref and apply its commit now (docs/gitops.md). */
import type { Command } from 'commander';
import type { GitRepoStatusView } from '../core/api/views.js';
import { formatSyncError } from '../core/gitops.js';
import { objectPath, openSession, type CliDeps } from './context.js';
import { CliError } from './errors.js';
import { line } from './output.js';

export function registerGitRepoCommands(program: Command, deps: CliDeps): void {
  const gitrepo = program.command('gitrepo').description('GitRepos: objects applied from a Git repository');
  gitrepo
    .command('sync')
    .description("fetch the GitRepo's branch, tag or commit and apply it now (as its poll or webhook would)")
    .argument('<name>', 'the GitRepo')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const st = await s.client.post<GitRepoStatusView>(
        `${objectPath(s.project, 'gitrepos', name)}/sync`,
        {},
        { subject: { kind: 'gitrepo', name } },
      );
      if (st.fetchError) throw new CliError(`gitrepo/${name}: fetch failed: ${st.fetchError}`);
      if (st.failedCommit)
        throw new CliError(
          `gitrepo/${name}: commit ${st.failedCommit.slice(0, 12)} was not applied (nothing of it was${st.commit ? `; ${st.commit.slice(0, 12)} stays applied` : ''}):\n  ${st.errors.map(formatSyncError).join('\n  ')}`,
        );
      line(s.out.out, `gitrepo/${name} synced: commit ${st.commit?.slice(0, 12) ?? '-'}, ${st.objects} objects`);
    });
}
