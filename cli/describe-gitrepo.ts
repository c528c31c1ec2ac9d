/**
 * @module `outpost describe gitrepo NAME`: where the GitRepo fetches from, the commit applied and
 * when, what went wrong (by file and line), the objects it owns and those changed by hand (drift).
 * Its credentials are never printed (the API redacts them).
 */
import type { GitRepoStatusView } from '../core/api/views.js';
import { formatSyncError } from '../core/gitops.js';
import { eventsBlock, fields, metadataBlock, section, when, type DescribeOptions } from './describe-blocks.js';
import { formatTable } from './output.js';
import { NONE, statusOf, type ApiObject } from './views.js';

export function describeGitRepo(o: ApiObject, opts: DescribeOptions): string {
  const spec = (o.spec ?? {}) as {
    repo?: string;
    branch?: string;
    tag?: string;
    commit?: string;
    paths?: string[];
    interval?: string;
    paused?: boolean;
    credentials?: { username?: string; password?: string; sshPrivateKey?: string };
    webhookSecret?: string;
  };
  const s = statusOf<Partial<GitRepoStatusView>>(o);
  const creds = spec.credentials
    ? spec.credentials.sshPrivateKey
      ? 'SSH key set'
      : `user ${spec.credentials.username ?? 'git'}, token set`
    : NONE;
  let out = metadataBlock(o, opts.now, [
    ['Repository', spec.repo ?? '-'],
    ['Ref', spec.branch ? `branch ${spec.branch}` : spec.tag ? `tag ${spec.tag}` : `commit ${spec.commit ?? '?'}`],
    ['Paths', (spec.paths ?? []).join(', ') || '-'],
    ['Interval', `${spec.interval ?? '-'}${spec.paused ? ' (paused)' : ''}`],
    ['Credentials', creds],
    ['Webhook', s.webhook ? `POST ${s.webhook} (signed with spec.webhookSecret)` : NONE],
  ]);
  out += section(
    'Sync',
    fields([
      ['State', s.state ?? '-'],
      ['Commit applied', s.commit ?? NONE],
      ['Applied', when(s.appliedAt, opts.now) ?? '-'],
      ['Head fetched', s.head ?? '-'],
      ['Last fetch', when(s.fetchedAt, opts.now) ?? '-'],
      ['Fetch error', s.fetchError],
      ['Failed commit', s.failedCommit],
      ['Objects', String(s.objects ?? 0)],
    ]),
  );
  if (s.errors?.length) out += section('Errors', s.errors.map((e) => `${formatSyncError(e)}\n`).join(''));
  if (s.drift?.length)
    out += section(
      "Drift (changed by hand; the next sync puts back Git's version)",
      formatTable(
        ['KIND', 'NAME', 'CHANGE'],
        s.drift.map((d) => [d.kind, d.name, d.change]),
      ),
    );
  out += section(
    'Objects',
    s.owned?.length
      ? formatTable(
          ['KIND', 'NAME', 'FILE'],
          s.owned.map((x) => [x.kind, x.name, `${x.file}:${x.line}`]),
        )
      : `${NONE}\n`,
  );
  out += eventsBlock(opts.events, opts.now);
  return out;
}
