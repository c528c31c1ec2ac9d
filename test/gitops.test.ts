/**
 * GitRepos against a real Git server on loopback (test/fixtures/git-server.ts: Debian's
 * `git http-backend` behind basic auth): first sync, change and prune, a bad commit that applies
 * nothing, wrong credentials, a force-push, a repository that disappears, drift by hand, the
 * webhook, and credentials kept out of every answer, event and log line.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureLogs } from '../core/logger.js';
import type { Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import {
  GitWork,
  placementYaml as placement,
  startGitServer,
  workloadYaml as workload,
  type GitServer,
} from './fixtures/git-server.js';
import { adminApi, startInProcessHub, stopInProcess } from './fixtures/in-process-fleet.js';
import { waitFor } from './helpers.js';

const WEBHOOK_SECRET = 'hook-secret-0123456789abcdef';

function gitRepoYaml(
  name: string,
  url: string,
  o: { password?: string; paths?: string[]; webhook?: boolean } = {},
): string {
  return `apiVersion: outpost.dev/v1alpha1
kind: GitRepo
metadata:
  name: ${name}
spec:
  repo: ${url}
  branch: main
  paths: [${(o.paths ?? ['apps']).join(', ')}]
  interval: 1h
  insecure: true
  credentials:
    username: ci
    password: ${o.password ?? 'git-token-s3cret'}
${o.webhook ? `  webhookSecret: ${WEBHOOK_SECRET}\n` : ''}`;
}

describe('GitRepo: Git as a source', () => {
  let hub: Hub;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let git: GitServer;
  const logs = captureLogs();

  beforeAll(async () => {
    ({ hub, dir, env } = await startInProcessHub('outpost-gitops-'));
    git = await startGitServer(path.join(dir, 'git'));
  });
  afterAll(async () => {
    logs.stop();
    await git?.close();
    await stopInProcess({ hub, dir });
  });

  async function cli(...args: string[]) {
    return runCli(args, { env });
  }
  async function applyYaml(name: string, text: string) {
    const f = path.join(dir, `${name}.yaml`);
    fs.writeFileSync(f, text);
    const r = await cli('apply', '-f', f);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  }
  const status = async (name: string) =>
    (await adminApi(hub, 'GET', `/api/v1/projects/default/gitrepos/${name}`)).status;
  const names = (kind: string) =>
    hub.objects
      .list(kind as 'Workload', 'default')
      .map((o) => o.metadata.name)
      .sort();

  it('applies the first commit, changes and prunes with the next, and leaves objects applied by hand alone', async () => {
    const work = new GitWork(git, 'fleet', dir);
    const first = work.commit({
      'apps/web.yaml': workload('web'),
      'apps/api.yaml': `${workload('api')}---\n${placement('everywhere', ['web', 'api'])}`,
      'README.md': 'not a manifest',
      'other/ignored.yaml': workload('ignored'),
    });
    await applyYaml('gitrepo', gitRepoYaml('fleet', git.url('fleet')));
    const sync = await cli('gitrepo', 'sync', 'fleet');
    expect(sync.stderr).toBe('');
    expect(sync.stdout).toContain(`gitrepo/fleet synced: commit ${first.slice(0, 12)}, 3 objects`);
    expect(names('Workload')).toEqual(['api', 'web']);
    expect(names('Placement')).toEqual(['everywhere']);
    const web = hub.objects.get('Workload', 'default', 'web')!;
    expect(web.metadata.annotations['outpost.dev/git-repo']).toBe('fleet');
    expect(web.metadata.annotations['outpost.dev/git-source']).toBe('apps/web.yaml');

    const get = await cli('get', 'gitrepos');
    expect(get.stdout).toMatch(/NAME\s+REPO\s+REF\s+COMMIT\s+OBJECTS\s+STATUS\s+AGE/);
    expect(get.stdout).toMatch(
      new RegExp(
        `fleet\\s+${git.url('fleet').replace(/[.]/g, '\\.')}\\s+branch main\\s+${first.slice(0, 12)}\\s+3\\s+Synced`,
      ),
    );

    // A workload applied by hand, of another name, in the same project.
    await applyYaml('by-hand', workload('by-hand'));

    const second = work.commit({
      'apps/web.yaml': workload('web', 'nginx:1.28'),
      'apps/api.yaml': placement('everywhere', ['web']),
    });
    const s2 = await cli('gitrepo', 'sync', 'fleet');
    expect(s2.stdout).toContain(`commit ${second.slice(0, 12)}, 2 objects`);
    expect(names('Workload')).toEqual(['by-hand', 'web']);
    const web2 = hub.objects.get<any>('Workload', 'default', 'web')!;
    expect(web2.spec.manifests[0].spec.containers[0].image).toBe('nginx:1.28');
    const st = await status('fleet');
    expect(st).toMatchObject({ state: 'Synced', commit: second, objects: 2 });
    const events = await adminApi(hub, 'GET', '/api/v1/projects/default/events?kind=Workload&name=api');
    expect(events.items[0]).toMatchObject({ reason: 'Deleted' });
    expect(events.items[0].message).toContain('GitRepo fleet');

    // A re-sync with nothing new changes nothing (no new event).
    const before = (await adminApi(hub, 'GET', '/api/v1/projects/default/events?kind=GitRepo&name=fleet')).items.length;
    await cli('gitrepo', 'sync', 'fleet');
    const after = (await adminApi(hub, 'GET', '/api/v1/projects/default/events?kind=GitRepo&name=fleet')).items.length;
    expect(after).toBe(before);
  });

  it('applies nothing of a commit with one invalid manifest, names its file and line, and keeps the previous commit', async () => {
    const work = new GitWork(git, 'strict', dir);
    const good = work.commit({ 'apps/a.yaml': workload('strict-a') });
    await applyYaml('strict', gitRepoYaml('strict', git.url('strict')));
    expect((await cli('gitrepo', 'sync', 'strict')).code).toBe(0);

    const bad = work.commit({
      'apps/a.yaml': workload('strict-a', 'nginx:2'),
      'apps/b.yaml': workload('strict-b'),
      // Document 2 starts at line 3; its spec has a field no Workload has.
      'apps/c.yaml': `# two documents\n---\n${workload('strict-c')}  replicas: 3\n`,
    });
    const r = await cli('gitrepo', 'sync', 'strict');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `commit ${bad.slice(0, 12)} was not applied (nothing of it was; ${good.slice(0, 12)} stays applied)`,
    );
    expect(r.stderr).toMatch(/apps\/c\.yaml:3 \(Workload strict-c\): spec: .*replicas/);
    expect(names('Workload')).toContain('strict-a');
    expect(names('Workload')).not.toContain('strict-b');
    expect(hub.objects.get<any>('Workload', 'default', 'strict-a')!.spec.manifests[0].spec.containers[0].image).toBe(
      'nginx:1.27',
    );
    const st = await status('strict');
    expect(st).toMatchObject({ state: 'Error', commit: good, failedCommit: bad });
    expect(st.errors[0]).toMatchObject({ file: 'apps/c.yaml', line: 3, kind: 'Workload', name: 'strict-c' });
    const d = await cli('describe', 'gitrepo', 'strict');
    expect(d.stdout).toContain('apps/c.yaml:3 (Workload strict-c)');

    // A chart, a Package and a takeover of an object applied by hand: refused by name, nothing applied.
    await applyYaml('taken', workload('taken'));
    const refused = work.commit({
      'apps/c.yaml': undefined,
      'apps/chart/Chart.yaml': 'apiVersion: v2\nname: x\nversion: 0.1.0\n',
      'apps/chart/templates/x.yaml': '{{ .Values.x }}',
      'apps/pkg.yaml': 'apiVersion: outpost.dev/v1alpha1\nkind: Package\nmetadata:\n  name: p\n',
      'apps/taken.yaml': workload('taken'),
    });
    const r2 = await cli('gitrepo', 'sync', 'strict');
    expect(r2.stderr).toContain(refused.slice(0, 12));
    expect(r2.stderr).toContain('apps/chart/Chart.yaml: not yet: Helm charts from Git');
    const st2 = await status('strict');
    expect(st2.errors.map((e: { file?: string }) => e.file)).toEqual(['apps/chart/Chart.yaml']);
    work.commit({ 'apps/chart/Chart.yaml': undefined, 'apps/chart/templates/x.yaml': undefined });
    const r3 = await cli('gitrepo', 'sync', 'strict');
    expect(r3.stderr).toMatch(/apps\/pkg\.yaml:1 \(Package p\): kind: not yet/);
    expect(r3.stderr).toMatch(
      /apps\/taken\.yaml:1 \(Workload taken\): Workload taken already exists in project default and was applied by hand/,
    );
    expect(
      hub.objects.get('Workload', 'default', 'taken')!.metadata.annotations['outpost.dev/git-repo'],
    ).toBeUndefined();
    expect(names('Workload')).not.toContain('strict-b');
  });

  it('says so when the credentials are wrong, without the secret anywhere', async () => {
    const work = new GitWork(git, 'locked', dir);
    work.commit({ 'apps/a.yaml': workload('locked-a') });
    const wrong = 'wrong-token-XYZZY-123';
    await applyYaml('locked', gitRepoYaml('locked', git.url('locked'), { password: wrong }));
    const r = await cli('gitrepo', 'sync', 'locked');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('fetch failed');
    expect(r.stderr).toMatch(/Authentication failed/);
    expect(r.stderr).not.toContain(wrong);
    const st = await status('locked');
    expect(st.state).toBe('FetchFailed');
    expect(JSON.stringify(st)).not.toContain(wrong);
    const ev = await adminApi(hub, 'GET', '/api/v1/projects/default/events?kind=GitRepo&name=locked');
    expect(ev.items[0].reason).toBe('FetchFailed');
    expect(JSON.stringify(ev)).not.toContain(wrong);
    expect(logs.lines.join('\n')).toContain('GitRepo fetch failed');
    expect(logs.lines.join('\n')).not.toContain(wrong);
    expect(names('Workload')).not.toContain('locked-a');
  });

  it('applies the new head after a force-push, and keeps what it applied when the repository disappears', async () => {
    const work = new GitWork(git, 'moving', dir);
    work.commit({ 'apps/a.yaml': workload('moving-a') });
    work.commit({ 'apps/b.yaml': workload('moving-b') });
    await applyYaml('moving', gitRepoYaml('moving', git.url('moving')));
    await cli('gitrepo', 'sync', 'moving');
    expect(names('Workload')).toEqual(expect.arrayContaining(['moving-a', 'moving-b']));

    const rewritten = work.rewrite({ 'apps/c.yaml': workload('moving-c') });
    const r = await cli('gitrepo', 'sync', 'moving');
    expect(r.stdout).toContain(`commit ${rewritten.slice(0, 12)}, 1 objects`);
    expect(names('Workload').filter((n) => n.startsWith('moving'))).toEqual(['moving-c']);

    fs.rmSync(git.bare('moving'), { recursive: true, force: true });
    const gone = await cli('gitrepo', 'sync', 'moving');
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toMatch(/fetch failed: .*not found/);
    const st = await status('moving');
    expect(st).toMatchObject({ state: 'FetchFailed', commit: rewritten, objects: 1 });
    expect(st.fetchError).toMatch(/not found/);
    expect(names('Workload')).toContain('moving-c');
  });

  it('reports drift by hand and puts Git back at the next sync', async () => {
    const work = new GitWork(git, 'drift', dir);
    work.commit({ 'apps/a.yaml': workload('drift-a'), 'apps/b.yaml': workload('drift-b') });
    await applyYaml('drift', gitRepoYaml('drift', git.url('drift')));
    await cli('gitrepo', 'sync', 'drift');
    await applyYaml('drift-a-hand', workload('drift-a', 'nginx:9.9'));
    expect((await cli('delete', 'workload', 'drift-b')).code).toBe(0);
    const st = await status('drift');
    expect(st.state).toBe('Drifted');
    expect(st.drift).toEqual([
      { kind: 'Workload', name: 'drift-a', change: 'changed' },
      { kind: 'Workload', name: 'drift-b', change: 'deleted' },
    ]);
    const d = await cli('describe', 'gitrepo', 'drift');
    expect(d.stdout).toMatch(/Drift[\s\S]*drift-a\s+changed[\s\S]*drift-b\s+deleted/);

    await cli('gitrepo', 'sync', 'drift');
    expect((await status('drift')).state).toBe('Synced');
    expect(hub.objects.get<any>('Workload', 'default', 'drift-a')!.spec.manifests[0].spec.containers[0].image).toBe(
      'nginx:1.27',
    );
    expect(names('Workload')).toContain('drift-b');
    const ev = await adminApi(hub, 'GET', '/api/v1/projects/default/events?kind=GitRepo&name=drift');
    expect(ev.items[0]).toMatchObject({ reason: 'DriftReverted' });
  });

  it('syncs on a signed webhook and refuses a bad signature', async () => {
    const work = new GitWork(git, 'hooked', dir);
    work.commit({ 'apps/a.yaml': workload('hooked-a') });
    await applyYaml('hooked', gitRepoYaml('hooked', git.url('hooked'), { webhook: true }));
    const st = await status('hooked');
    expect(st.webhook).toBe('/api/v1/hooks/git/default/hooked');
    const body = JSON.stringify({ ref: 'refs/heads/main' });
    const post = (sig: string) =>
      fetch(`${hub.url}${st.webhook}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': sig },
        body,
      });
    const bad = await post(`sha256=${crypto.createHmac('sha256', 'not-the-secret-000000').update(body).digest('hex')}`);
    expect(bad.status).toBe(401);
    expect(names('Workload')).not.toContain('hooked-a');
    const good = await post(`sha256=${crypto.createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex')}`);
    expect(good.status).toBe(202);
    await waitFor(async () => (await status('hooked')).state === 'Synced', { timeout: 30_000, what: 'webhook sync' });
    expect(names('Workload')).toContain('hooked-a');
  });

  it('follows a tag or a pinned commit instead of a branch', async () => {
    const work = new GitWork(git, 'pinned', dir);
    const v1 = work.commit({ 'apps/a.yaml': workload('pinned-a') });
    work.tag('v1');
    work.commit({ 'apps/a.yaml': undefined, 'apps/b.yaml': workload('pinned-b') });
    const byTag = gitRepoYaml('pinned-tag', git.url('pinned')).replace('branch: main', 'tag: v1');
    await applyYaml('pinned-tag', byTag);
    const r = await cli('gitrepo', 'sync', 'pinned-tag');
    expect(r.stdout).toContain(`commit ${v1.slice(0, 12)}, 1 objects`);
    // An older commit than the branch's head, by its id.
    const byCommit = gitRepoYaml('pinned-commit', git.url('pinned'), { paths: ['apps/a.yaml'] })
      .replace('branch: main', `commit: ${v1}`)
      .replace(/pinned-a/g, 'x');
    await applyYaml('pinned-commit', byCommit);
    const c = await cli('gitrepo', 'sync', 'pinned-commit');
    expect(c.stderr).toMatch(/Workload pinned-a is owned by GitRepo pinned-tag/);
    const missing = gitRepoYaml('pinned-missing', git.url('pinned')).replace('branch: main', 'branch: nope');
    await applyYaml('pinned-missing', missing);
    const m = await cli('gitrepo', 'sync', 'pinned-missing');
    expect(m.stderr).toMatch(/fetch failed: branch nope is not in http:/);
  });

  it('never shows the credentials: get -o yaml, events and logs', async () => {
    const y = await cli('get', 'gitrepo', 'fleet', '-o', 'yaml');
    expect(y.stdout).toContain('password: <redacted>');
    const hooked = await cli('get', 'gitrepo', 'hooked', '-o', 'yaml');
    expect(hooked.stdout).toContain('webhookSecret: <redacted>');
    const all = [
      y.stdout,
      hooked.stdout,
      (await cli('describe', 'gitrepo', 'fleet')).stdout,
      JSON.stringify(await adminApi(hub, 'GET', '/api/v1/projects/default/events?limit=500')),
      JSON.stringify(await adminApi(hub, 'GET', '/api/v1/projects/default/gitrepos')),
      logs.lines.join('\n'),
    ].join('\n');
    expect(all).not.toContain(git.password);
    expect(all).not.toContain(WEBHOOK_SECRET);
    // Sealed at rest: the objects table holds no secret in clear.
    const row = JSON.stringify(hub.state.objects.get('GitRepo', 'default', 'fleet'));
    expect(row).not.toContain(git.password);
    expect(row).toContain('ohs1.');
    // Nothing of the credentials in the clone's config either.
    const config = fs.readFileSync(path.join(dir, 'hub', 'gitops', 'default', 'fleet', 'config'), 'utf8');
    expect(config).not.toContain(git.password);
    // Applied again as shown (redacted), the stored credentials stay and the fetch still works.
    const f = path.join(dir, 'fleet-again.yaml');
    fs.writeFileSync(f, y.stdout);
    expect((await cli('apply', '-f', f)).code).toBe(0);
    expect((await cli('gitrepo', 'sync', 'fleet')).code).toBe(0);
  });
});
