/**
 * The kubectl habits of `outpost`, against a real hub (startHub: TLS, real SQLite, real HTTP):
 * output formats (name, jsonpath, custom-columns), --show-labels, --no-headers, get -w, apply
 * --dry-run=server and diff with per-edge counts, delete -f, version, completion (run by a real
 * bash), get events with filters, rollout history --revision with the change cause.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../hub/hub.js';
import { HubClient } from '../cli/client.js';
import { runCli } from './fixtures/cli.js';
import { tempDir, waitFor } from './helpers.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;

const cli = (args: string[], opts: Parameters<typeof runCli>[1] = {}) => runCli(args, { env, ...opts });
const write = (name: string, text: string) => {
  const f = path.join(dir, name);
  fs.writeFileSync(f, text);
  return f;
};
const workload = (name: string, image: string, cause?: string) => `kind: Workload
metadata:
  name: ${name}
  labels: { app: ${name} }
${cause ? `  annotations: { outpost.dev/change-cause: "${cause}" }\n` : ''}spec:
  manifests:
    - apiVersion: v1
      kind: Pod
      metadata: { name: ${name} }
      spec: { containers: [{ name: main, image: "${image}" }] }
`;
// Every edge at once: the edges here are enrolled but never connect, so none would become Ready
// for a rollout of one at a time to move on.
const placement = (name: string, workloads: string[], selector = 'site: shop') =>
  `kind: Placement\nmetadata: { name: ${name} }\nspec:\n  edgeSelector: { matchLabels: { ${selector} } }\n  workloads: [${workloads.join(', ')}]\n  rollout: { maxUnavailable: "100%" }\n`;

beforeAll(async () => {
  dir = tempDir('outpost-cli-kubectl-');
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0' });
  env = { OUTPOST_CONFIG: path.join(dir, 'cli', 'config.json') };
  expect((await cli(['login', '--hub', hub.url, '--token', hub.adminToken])).code).toBe(0);
  const join = (await cli(['token', 'create', '--labels', 'site=shop', '--uses', '3'])).stdout.trim();
  const enroll = new HubClient({ hub: hub.url, token: 'none', ca: hub.caPem });
  for (const name of ['e1', 'e2', 'e3']) await enroll.post('/api/v1/enroll', { joinToken: join, name });
  expect((await cli(['edge', 'label', 'e3', 'site=lab'])).stderr).toBe('');
  expect(
    (
      await cli([
        'apply',
        '-f',
        write('web.yaml', `${workload('web', 'nginx:1.26', 'first release')}---\n${placement('shops', ['web'])}`),
      ])
    ).stderr,
  ).toBe('');
  await waitFor(
    async () => {
      const r = await cli(['get', 'wl', 'web', '-o', 'jsonpath={.status.summary.total}']);
      return r.stdout.trim() === '2' ? r : null;
    },
    { what: 'web assigned to e1 and e2' },
  );
});

afterAll(async () => {
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('kubectl habits', () => {
  it('-o name, -o jsonpath, -o custom-columns, --show-labels, --no-headers', async () => {
    expect((await cli(['get', 'edges', '-o', 'name'])).stdout).toBe('edge/e1\nedge/e2\nedge/e3\n');
    expect((await cli(['get', 'edges', '-o', 'jsonpath={.items[*].metadata.name}'])).stdout).toBe('e1 e2 e3\n');
    expect(
      (
        await cli([
          'get',
          'edges',
          '-o',
          'jsonpath={range .items[*]}{.metadata.name}={.metadata.labels.site}{"\\n"}{end}',
        ])
      ).stdout,
    ).toBe('e1=shop\ne2=shop\ne3=lab\n');
    expect((await cli(['get', 'pl', 'shops', '-o', 'jsonpath={.spec.workloads[0]}'])).stdout).toBe('web\n');
    expect(
      (await cli(['get', 'edges', '-o', 'custom-columns=EDGE:.metadata.name,SITE:.metadata.labels.site,GONE:.nope']))
        .stdout,
    ).toMatch(/^EDGE\s+SITE\s+GONE\ne1\s+shop\s+<none>\ne2\s+shop\s+<none>\ne3\s+lab\s+<none>\n$/);
    expect((await cli(['get', 'wl', '--show-labels'])).stdout).toMatch(
      /^NAME\s+REVISION\s+READY\s+EDGES\s+AGE\s+LABELS\nweb\s.*app=web\n$/,
    );
    expect((await cli(['get', 'wl', '--no-headers'])).stdout).toMatch(/^web\s+1\s+/);
    const bad = await cli(['get', 'edges', '-o', 'custom-columns=NAME']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/"NAME" is not HEADER:PATH/);
  });

  it('get -w prints the list, then what changes, then deletions', async () => {
    const r = await cli(
      [
        'get',
        'wl',
        '-w',
        '--timeout',
        '5s',
        '--no-headers',
        '-o',
        'custom-columns=NAME:.metadata.name,REV:.status.revision',
      ],
      {
        fakeClock: { now: Date.now() },
        onSleep: async (n) => {
          if (n === 1) await cli(['apply', '-f', write('watch.yaml', workload('watched', 'busybox:1'))]);
          if (n === 2) await cli(['apply', '-f', write('watch2.yaml', workload('watched', 'busybox:2'))]);
          if (n === 3) await cli(['delete', 'wl', 'watched']);
        },
      },
    );
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^web\s+1\nwatched\s+1\nwatched\s+2\nworkload\/watched deleted\n$/);
  });

  it('apply --dry-run=server changes nothing and counts the edges; diff shows what would change', async () => {
    const v2 = write('web-v2.yaml', `${workload('web', 'nginx:1.27')}---\n${placement('shops', ['web'], 'site: lab')}`);
    const d = await cli(['apply', '-f', v2, '--dry-run=server']);
    expect(d.stderr).toBe('');
    expect(d.stdout).toBe(
      'workload/web configured (server dry run): reaches 1 edge (+1 added, -2 removed, 0 changed)\n' +
        'placement/shops configured (server dry run): reaches 1 edge (+1 added, -2 removed, 0 changed)\n' +
        '  rollout: 1 edge at a time of 1 (maxUnavailable 100%); pauses after 1 failure\n',
    );
    expect(
      (await cli(['get', 'wl', 'web', '-o', 'jsonpath={.spec.manifests[0].spec.containers[0].image}'])).stdout,
    ).toBe('nginx:1.26\n');
    const img = write('web-img.yaml', workload('web', 'nginx:1.27'));
    const diff = await cli(['diff', '-f', img]);
    expect(diff.code).toBe(0);
    expect(diff.stdout).toContain('--- workload/web (hub)\n+++ workload/web (file)\n');
    expect(diff.stdout).toContain('-            image: nginx:1.26\n+            image: nginx:1.27\n');
    expect(diff.stdout).toContain('-    outpost.dev/change-cause: first release\n');
    expect(diff.stdout).toContain('# workload/web changes: reaches 2 edges (+0 added, -0 removed, 2 changed)\n');
    const same = await cli(['diff', '-f', path.join(dir, 'web.yaml')]);
    expect(same.stdout).toBe('');
    expect(same.stderr).toBe('2 objects unchanged.\n');
  });

  it('rollout history --revision N shows the change cause', async () => {
    expect((await cli(['apply', '-f', write('web-v3.yaml', workload('web', 'nginx:1.27', 'bump nginx'))])).code).toBe(
      0,
    );
    const h = await cli(['rollout', 'history', 'wl', 'web']);
    expect(h.stdout).toMatch(
      /^REVISION\s+AGE\s+MANIFESTS\s+CHANGE-CAUSE\n1\s+\S+\s+Pod\/web\s+first release\n2 \(current\)\s+\S+\s+Pod\/web\s+bump nginx\n$/,
    );
    const one = await cli(['rollout', 'history', 'wl', 'web', '--revision', '1']);
    expect(one.stdout).toMatch(
      /^workload\/web revision 1\nCreated: +\S+\nChange cause: +first release\nManifests:\n  - apiVersion: v1\n/,
    );
    expect(one.stdout).toContain('image: nginx:1.26');
    const u = await cli(['rollout', 'undo', 'wl', 'web']);
    expect(u.code).toBe(0);
    expect((await cli(['rollout', 'history', 'wl', 'web'])).stdout).toMatch(
      /3 \(current\)\s+\S+\s+Pod\/web\s+rolled back to revision 1 by admin token/,
    );
    const none = await cli(['rollout', 'history', 'wl', 'web', '--revision', '9']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe('error: workload/web has no revision 9; kept revisions: 1, 2, 3\n');
  });

  it('get events filters by object, reason and age', async () => {
    const all = await cli(['get', 'events']);
    expect(all.stdout.split('\n')[0]).toMatch(/^LAST SEEN\s+OBJECT\s+REASON\s+MESSAGE$/);
    const e1 = await cli(['get', 'events', '--for', 'edge/e1']);
    expect(e1.stdout).toMatch(/edge\/e1\s+Enrolled\s+edge e1 enrolled/);
    expect(e1.stdout).not.toMatch(/edge\/e2/);
    const created = await cli(['get', 'events', '--reason', 'Created', '--no-headers']);
    expect(
      created.stdout
        .trim()
        .split('\n')
        .every((l) => /\sCreated\s/.test(l)),
    ).toBe(true);
    expect(created.stdout).toMatch(/workload\/web\s+Created/);
    const later = await cli(['get', 'events', '--since', '1h'], { fakeClock: { now: Date.now() + 2 * 3600_000 } });
    expect(later.stderr).toBe('No events found in project default.\n');
  });

  it('delete -f deletes what a file defines, placements first', async () => {
    const f = write('both.yaml', `${workload('tmp', 'busybox:1')}---\n${placement('tmp', ['tmp'], 'site: none')}`);
    expect((await cli(['apply', '-f', f])).code).toBe(0);
    const d = await cli(['delete', '-f', f]);
    expect(d.stdout).toBe('placement/tmp deleted\nworkload/tmp deleted\n');
    const again = await cli(['delete', '-f', f]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      'placement/tmp not found\nworkload/tmp not found\nerror: 2 of the objects were not found (--ignore-not-found to accept that)\n',
    );
    expect((await cli(['delete', '-f', f, '--ignore-not-found'])).code).toBe(0);
  });

  it('version names the client and the hub; completion scripts work in a real bash', async () => {
    const v = await cli(['version']);
    expect(v.stdout).toMatch(
      /^Client Version: \S+ \(commit \S+, node v\d+\.\d+\.\d+\)\nHub Version: +\S+ \(https:\/\/127\.0\.0\.1:\d+\)\n$/,
    );
    const j = JSON.parse((await cli(['version', '-o', 'json'])).stdout);
    expect(j.hub.version).toBe(j.client.version);
    const out = await runCli(['version'], { env: { OUTPOST_CONFIG: path.join(dir, 'none.json') } });
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/^Client Version: /);
    expect(out.stderr).toMatch(/cannot read the hub's version: not logged in/);

    const script = write('outpost.bash', (await cli(['completion', 'bash'])).stdout);
    const complete = (words: string) =>
      execFileSync('bash', [
        '-c',
        `source ${script}; COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); _outpost; echo "\${COMPREPLY[*]}"`,
      ])
        .toString()
        .trim();
    expect(complete("outpost rollout 'st'")).toBe('status');
    expect(complete("outpost get ''")).toContain('placements');
    expect(complete("outpost get pl '--no'")).toBe('--no-headers');
    expect(complete('outpost ap')).toBe('apply');
    expect((await cli(['completion', 'zsh'])).stdout).toMatch(/^#compdef outpost\n/);
    expect((await cli(['completion', 'fish'])).code).toBe(2);
  });
});
