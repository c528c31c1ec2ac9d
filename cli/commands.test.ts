// Each command against a small HTTP server on 127.0.0.1 that answers like the hub's API
// (docs/api.md): what is sent (method, path, body) and what the user sees (output, exit code).
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from '../test/helpers.js';
import { apiToken, FakeHub, runCli } from '../test/fixtures/cli.js';

let hub: FakeHub;
let env: NodeJS.ProcessEnv;
const dirs: string[] = [];

const NOW = Date.now();
const edgeObj = (name: string, phase: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'outpost.dev/v1alpha1',
  kind: 'Edge',
  metadata: { name, project: 'default', labels, creationTimestamp: new Date(NOW - 3_600_000).toISOString() },
  spec: { unschedulable: false },
  status: {
    phase,
    lastSeenAgo: phase === 'Offline' ? 300_000 : 1_000,
    summary: { total: 2, ready: phase === 'Online' ? 2 : 0, states: {}, broken: [] },
    workloads: [],
    localIntents: {},
  },
});
const placement = (rollout: Record<string, unknown>) => ({
  kind: 'Placement',
  metadata: { name: 'eu', project: 'default' },
  spec: { workloads: ['web'] },
  status: { selectedEdges: 3, rollout },
});
const progressing = (updated: number, ready: number) => ({
  phase: 'Progressing',
  reason: `waiting for ${3 - ready} edges`,
  counts: { total: 3, updated, ready, failed: 0, pending: 3 - updated },
});

beforeAll(async () => {
  hub = await FakeHub.start();
});
afterAll(async () => {
  await hub.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
beforeEach(() => {
  hub.routes.clear();
  hub.requests.length = 0;
  hub.on('GET /api/v1/whoami', { body: { role: 'operator', project: 'default', tokenId: '0123456789abcdef' } });
  env = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: apiToken(), OUTPOST_CONFIG: '/nonexistent/config.json' };
});

describe('apply', () => {
  function files(): string {
    const d = tempDir('outpost-cli-apply-');
    dirs.push(d);
    fs.writeFileSync(
      path.join(d, '1-web.yaml'),
      'kind: Workload\nmetadata: { name: web }\nspec:\n  manifests: [{ apiVersion: v1, kind: Pod, metadata: { name: web } }]\n---\nkind: Placement\nmetadata: { name: eu }\nspec: { workloads: [web], edges: [e1] }\n',
    );
    fs.writeFileSync(path.join(d, '2-edge.yaml'), 'kind: Edge\nmetadata: { name: e1, labels: { region: eu } }\n');
    return d;
  }

  it('sends every object in one request and prints what happened to each, kubectl style', async () => {
    hub.on('POST /api/v1/apply', (req) => ({
      body: {
        results: (req.body as { objects: { kind: string; metadata: { name: string } }[] }).objects.map((o, i) => ({
          kind: o.kind,
          project: 'default',
          name: o.metadata.name,
          action: ['created', 'configured', 'unchanged'][i],
        })),
      },
    }));
    const r = await runCli(['apply', '-f', files()], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('workload/web created\nplacement/eu configured\nedge/e1 unchanged\n');
    const sent = hub.find('POST', '/api/v1/apply')!;
    expect(sent.query).toEqual({ project: 'default' });
    expect(sent.headers.authorization).toBe(`Bearer ${apiToken()}`);
    expect((sent.body as { objects: unknown[] }).objects).toHaveLength(3);
  });

  it('reads stdin with -f -', async () => {
    hub.on('POST /api/v1/apply', {
      body: { results: [{ kind: 'Placement', project: 'default', name: 'eu', action: 'created' }] },
    });
    const r = await runCli(['apply', '-f', '-'], {
      env,
      stdin: 'kind: Placement\nmetadata: { name: eu }\nspec: { workloads: [web], edges: [e1] }\n',
    });
    expect(r.stdout).toBe('placement/eu created\n');
  });

  it('a local error sends nothing', async () => {
    const r = await runCli(['apply', '-f', '-'], {
      env,
      stdin: 'kind: Placement\nmetadata: { name: eu }\nspec: { workloads: [web] }\n',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      '<stdin>, document 1 (line 1) (Placement eu): spec.edgeSelector: select edges with edgeSelector ({} selects every edge), edges, clusters, or several',
    );
    expect(hub.find('POST', '/api/v1/apply')).toBeUndefined();
  });

  it("maps the hub's rejection of object N back to its file and document", async () => {
    hub.on('POST /api/v1/apply', {
      status: 422,
      body: {
        error: {
          code: 'invalid',
          message: 'object 3: Edge e1 is not enrolled',
          details: [{ index: 2, path: '', message: 'Edge e1 is not enrolled: edges join with a join token' }],
        },
      },
    });
    const d = files();
    const r = await runCli(['apply', '-f', d], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `the hub rejected the objects; nothing was applied:\n  ${path.join(d, '2-edge.yaml')}, document 1 (line 1): Edge e1 is not enrolled: edges join with a join token`,
    );
  });
});

describe('get', () => {
  it('follows continue to list every edge, passes -l, and prints the table', async () => {
    hub.on('GET /api/v1/projects/default/edges', (req) =>
      req.query.continue === 'e1'
        ? { body: { items: [edgeObj('e2', 'Offline')] } }
        : { body: { items: [edgeObj('e1', 'Online', { region: 'eu' })], continue: 'e1' } },
    );
    const r = await runCli(['get', 'e', '-l', 'region=eu'], { env });
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')).toEqual([
      'NAME   STATE          READY   LAST-SEEN   LABELS',
      'e1     Online         2/2     1s          region=eu',
      'e2     Offline (5m)   0/2     5m          <none>',
      '',
    ]);
    const reqs = hub.requests.filter((q) => q.path === '/api/v1/projects/default/edges');
    expect(reqs.map((q) => q.query)).toEqual([
      { labelSelector: 'region=eu' },
      { labelSelector: 'region=eu', continue: 'e1' },
    ]);
  });

  it('-o yaml prints a List that apply can read back; -o json one object', async () => {
    hub.on('GET /api/v1/projects/default/edges', { body: { items: [edgeObj('e1', 'Online')] } });
    hub.on('GET /api/v1/projects/default/edges/e1', { body: edgeObj('e1', 'Online') });
    const y = await runCli(['get', 'edges', '-o', 'yaml'], { env });
    expect(parse(y.stdout)).toMatchObject({ kind: 'List', items: [{ kind: 'Edge', metadata: { name: 'e1' } }] });
    const j = await runCli(['get', 'edge/e1', '-o', 'json'], { env });
    expect(JSON.parse(j.stdout)).toMatchObject({ kind: 'Edge', metadata: { name: 'e1' } });
  });

  it('--all-projects lists project * with a PROJECT column; an empty list says so on stderr', async () => {
    hub.on('GET /api/v1/projects/*/workloads', {
      body: { items: [{ kind: 'Workload', metadata: { name: 'web', project: 'shop' }, status: { revision: 2 } }] },
    });
    const r = await runCli(['get', 'wl', '-A'], { env });
    expect(r.stdout.split('\n')[1]).toMatch(/^shop\s+web\s+2\s+0\/0\s+0\s+-$/);
    hub.on('GET /api/v1/projects/default/placements', { body: { items: [] } });
    const e = await runCli(['get', 'pl'], { env });
    expect(e.code).toBe(0);
    expect(e.stdout).toBe('');
    expect(e.stderr).toBe('No placements found in project default.\n');
  });

  it('--all-projects with a project-bound token says why the hub answered 404', async () => {
    hub.on('GET /api/v1/projects/*/edges', {
      status: 404,
      body: { error: { code: 'not_found', message: 'project * not found' } },
    });
    const r = await runCli(['get', 'edges', '-A'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error: --all-projects needs a token for all projects; this one is bound to a project: leave out -A, or use --project P\n',
    );
  });

  it("a project-bound token from the environment works in the token's project (asked with whoami)", async () => {
    hub.on('GET /api/v1/whoami', { body: { role: 'viewer', project: 'shop', tokenId: 'x' } });
    hub.on('GET /api/v1/projects/shop/placements', { body: { items: [] } });
    const r = await runCli(['get', 'pl'], { env });
    expect(r.stderr).toBe('No placements found in project shop.\n');
    const p = await runCli(['get', 'pl', '--project', 'other'], { env });
    expect(p.stderr).toMatch(/no route GET \/api\/v1\/projects\/other\/placements/);
  });
});

describe('errors say what to do', () => {
  it('401: log in again', async () => {
    hub.on('GET /api/v1/projects/default/edges', {
      status: 401,
      body: { error: { code: 'unauthorized', message: 'token expired' } },
    });
    const r = await runCli(['get', 'edges'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error: the hub refused the token (token expired): run \`outpost login --hub ${hub.url} --token T\` again with a valid API token\n`,
    );
  });

  it('404 of a named object: check the name, list them', async () => {
    hub.on('GET /api/v1/projects/default/placements/nope', {
      status: 404,
      body: { error: { code: 'not_found', message: 'Placement nope not found in project default' } },
    });
    const r = await runCli(['describe', 'placement', 'nope'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'Placement nope not found in project default: check the name and project (--project), or list them with `outpost get placements`',
    );
  });

  it('409: someone else changed it, get it and reapply', async () => {
    hub.on('POST /api/v1/projects/default/placements/eu/pause', {
      status: 409,
      body: { error: { code: 'conflict', message: 'stale resourceVersion' } },
    });
    const r = await runCli(['rollout', 'pause', 'placement', 'eu'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error: stale resourceVersion: run `outpost get placement eu -o yaml`, reapply your change and retry\n',
    );
  });

  it('500: the hub failed, look at its log', async () => {
    hub.on('DELETE /api/v1/projects/default/workloads/web', {
      status: 500,
      body: { error: { code: 'internal', message: 'disk full' } },
    });
    const r = await runCli(['delete', 'wl', 'web'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the hub failed (HTTP 500): disk full; check the hub's log");
  });

  it('a server that is not a hub', async () => {
    hub.on('GET /api/v1/projects/default/edges', { raw: '<html>welcome</html>' });
    const r = await runCli(['get', 'edges'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `the hub at ${hub.url} answered GET /api/v1/projects/default/edges with something that is not JSON: is ${hub.url} an Outpost hub?`,
    );
  });
});

describe('rollout', () => {
  function sequence(states: { status?: number; rollout?: Record<string, unknown> }[]): void {
    let i = 0;
    hub.on('GET /api/v1/projects/default/placements/eu', () => {
      const s = states[Math.min(i++, states.length - 1)];
      return s.status
        ? { status: s.status, body: { error: { code: 'unavailable', message: 'hub restarting' } } }
        : { body: placement(s.rollout!) };
    });
  }

  it('status --watch prints each change and exits 0 when Complete', async () => {
    sequence([
      { rollout: progressing(1, 0) },
      { rollout: progressing(1, 0) },
      { status: 503 },
      { rollout: progressing(3, 2) },
      {
        rollout: {
          phase: 'Complete',
          reason: 'all 3 edges ready on the new version',
          counts: { total: 3, updated: 3, ready: 3, failed: 0 },
        },
      },
    ]);
    const r = await runCli(['rollout', 'status', 'placement', 'eu', '--watch'], { env, fakeClock: { now: 0 } });
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')).toEqual([
      '1/3 edges updated, 0 ready, 0 failed: waiting for 3 edges',
      '3/3 edges updated, 2 ready, 0 failed: waiting for 1 edges',
      '3/3 edges updated, 3 ready, 0 failed: all 3 edges ready on the new version',
      '',
    ]);
    expect(r.stderr).toContain(
      'warning: hub restarting (the hub is up but cannot do this now; retry later); still watching',
    );
  });

  it('status --watch exits 1 with the reason when the rollout pauses on failures', async () => {
    sequence([
      { rollout: progressing(1, 0) },
      {
        rollout: {
          phase: 'Paused',
          reason: 'paused: 1 edge failed on the new version (threshold 1): e2',
          counts: { total: 3, updated: 1, ready: 0, failed: 1 },
        },
      },
    ]);
    const r = await runCli(['rollout', 'status', 'pl', 'eu', '-w'], { env, fakeClock: { now: 0 } });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error: rollout of placement/eu paused: 1 edge failed on the new version (threshold 1): e2\n',
    );
  });

  it('status --watch gives up at the timeout with the last status', async () => {
    sequence([{ rollout: progressing(1, 0) }]);
    const clock = { now: 0 };
    const r = await runCli(['rollout', 'status', 'placement', 'eu', '--watch', '--timeout', '30s'], {
      env,
      fakeClock: clock,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error: timed out after 30s waiting for the rollout of placement/eu; last: 1/3 edges updated, 0 ready, 0 failed: waiting for 3 edges\n',
    );
    expect(clock.now).toBe(30_000);
    expect(r.stdout.split('\n')).toHaveLength(2);
  });

  it('status without --watch prints once; a failed rollout exits 1', async () => {
    sequence([
      {
        rollout: {
          phase: 'Failed',
          reason: '1 of 3 edges failed on the new version: e2',
          counts: { total: 3, updated: 3, ready: 2, failed: 1 },
        },
      },
    ]);
    const r = await runCli(['rollout', 'status', 'placement', 'eu'], { env });
    expect(r.stdout).toBe('3/3 edges updated, 2 ready, 1 failed: 1 of 3 edges failed on the new version: e2\n');
    expect(r.code).toBe(1);
  });

  it('undo, pause, resume, history call the documented endpoints', async () => {
    hub.on('POST /api/v1/projects/default/workloads/web/rollback', { body: { revision: 5, object: {} } });
    hub.on('POST /api/v1/projects/default/placements/eu/pause', { body: {} });
    hub.on('POST /api/v1/projects/default/placements/eu/resume', { body: {} });
    hub.on('GET /api/v1/projects/default/workloads/web/revisions', {
      body: {
        items: [
          { revision: 1, createdAt: new Date().toISOString(), manifests: [{ kind: 'Pod', metadata: { name: 'web' } }] },
        ],
      },
    });
    expect((await runCli(['rollout', 'undo', 'workload', 'web', '--to-revision', '2'], { env })).stdout).toBe(
      'workload/web rolled back to revision 2 (now revision 5)\n',
    );
    expect(hub.find('POST', '/api/v1/projects/default/workloads/web/rollback')!.body).toEqual({ revision: 2 });
    expect((await runCli(['rollout', 'pause', 'pl', 'eu'], { env })).stdout).toBe('placement/eu paused\n');
    expect((await runCli(['rollout', 'resume', 'pl', 'eu'], { env })).stdout).toBe('placement/eu resumed\n');
    expect((await runCli(['rollout', 'history', 'wl', 'web'], { env })).stdout).toMatch(
      /^REVISION\s+AGE\s+MANIFESTS\s+CHANGE-CAUSE\n1 \(current\)\s+0s\s+Pod\/web\s+<none>\n$/,
    );
  });
});

describe('token create', () => {
  it('prints only the join token on stdout, so T=$(outpost token create) works', async () => {
    hub.on('POST /api/v1/tokens/join', {
      body: { token: 'opj1.none.0123456789abcdef.secret', expiresAt: '2030-01-01T00:00:00Z' },
    });
    const r = await runCli(
      ['token', 'create', '--labels', 'region=eu,tier=small', '--ttl', '1h', '--uses', '3', '--project', 'shop'],
      { env },
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('opj1.none.0123456789abcdef.secret\n');
    expect(r.stderr).toBe('');
    expect(hub.find('POST', '/api/v1/tokens/join')!.body).toEqual({
      project: 'shop',
      labels: { region: 'eu', tier: 'small' },
      ttl: '1h',
      uses: 3,
    });
  });

  it('on a terminal, also says what the token is on stderr', async () => {
    hub.on('POST /api/v1/tokens/join', { body: { token: 'T', expiresAt: '2030-01-01T00:00:00Z' } });
    const r = await runCli(['token', 'create', '--uses', '1'], { env, tty: true });
    expect(r.stdout).toBe('T\n');
    expect(r.stderr).toBe('join token for 1 edge for project default; expires 2030-01-01T00:00:00Z\n');
  });

  it('--api --role creates an API token', async () => {
    hub.on('POST /api/v1/tokens/api', { body: { token: 'opt1.none.x.y' } });
    const r = await runCli(['token', 'create', '--api', '--role', 'viewer'], { env });
    expect(r.stdout).toBe('opt1.none.x.y\n');
    expect(hub.find('POST', '/api/v1/tokens/api')!.body).toEqual({ role: 'viewer', project: 'default' });
  });
});

describe('edge administration', () => {
  it('label sends null for removals', async () => {
    hub.on('POST /api/v1/projects/default/edges/e1/labels', { body: {} });
    const r = await runCli(['edge', 'label', 'e1', 'region=eu', 'legacy-'], { env });
    expect(r.stdout).toBe('edge/e1 labeled\n');
    expect(hub.find('POST', '/api/v1/projects/default/edges/e1/labels')!.body).toEqual({
      labels: { region: 'eu', legacy: null },
    });
  });

  it('approve, drain, uncordon and clear post to their endpoints', async () => {
    for (const v of ['approve', 'drain', 'uncordon', 'clear-intents'])
      hub.on(`POST /api/v1/projects/default/edges/e1/${v}`, { body: {} });
    expect((await runCli(['edge', 'approve', 'e1'], { env })).stdout).toBe('edge/e1 approved\n');
    expect((await runCli(['edge', 'drain', 'e1'], { env })).stdout).toBe('edge/e1 drained\n');
    expect((await runCli(['edge', 'uncordon', 'e1'], { env })).stdout).toBe('edge/e1 uncordoned\n');
    expect((await runCli(['edge', 'clear', 'e1', 'web'], { env })).stdout).toBe(
      'edge/e1: local intents for workload web cleared\n',
    );
    expect(hub.find('POST', '/api/v1/projects/default/edges/e1/clear-intents')!.body).toEqual({ workload: 'web' });
  });

  it('decommission asks on a terminal and does nothing on "no"', async () => {
    hub.on('POST /api/v1/projects/default/edges/e1/decommission', { body: {} });
    const no = await runCli(['edge', 'decommission', 'e1'], { env, tty: true, answer: false });
    expect(no.questions[0]).toMatch(/^Decommission edge e1\?/);
    expect(no.code).toBe(0);
    expect(hub.find('POST', '/api/v1/projects/default/edges/e1/decommission')).toBeUndefined();
    const yes = await runCli(['edge', 'decommission', 'e1'], { env, tty: true, answer: true });
    expect(yes.stdout).toBe('edge/e1 decommissioned\n');
    const forced = await runCli(['edge', 'decommission', 'e1', '--yes'], { env });
    expect(forced.questions).toEqual([]);
    expect(forced.code).toBe(0);
    expect(hub.requests.filter((q) => q.path.endsWith('/decommission'))).toHaveLength(2);
  });
});

describe('describe', () => {
  it('edge: reads the object and its latest events, those of the AgentUpgrades about it included', async () => {
    hub.on('GET /api/v1/projects/default/edges/e1', { body: edgeObj('e1', 'Offline') });
    hub.on('GET /api/v1/projects/default/events', {
      body: { items: [{ at: NOW - 5_000, reason: 'Disconnected', message: 'heartbeats stopped' }] },
    });
    const r = await runCli(['describe', 'edge', 'e1'], { env });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/State:\s+Offline \(5m\)/);
    expect(r.stdout).toMatch(/Disconnected\s+heartbeats stopped/);
    expect(hub.find('GET', '/api/v1/projects/default/events')!.query).toEqual({ edge: 'e1', limit: '10' });
  });
});

describe('login to a plain-HTTP hub (--insecure-http)', () => {
  it('a token without a pin logs in over http://', async () => {
    const dir = tempDir('outpost-cli-http-');
    dirs.push(dir);
    const config = path.join(dir, 'config.json');
    const r = await runCli(['login', '--hub', `${hub.url}/`, '--token', apiToken('none')], {
      env: { OUTPOST_CONFIG: config },
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(fs.readFileSync(config, 'utf8'))).toEqual({
      hub: hub.url,
      token: apiToken('none'),
      project: 'default',
    });
  });

  it('a token that pins a CA refuses http://', async () => {
    const r = await runCli(['login', '--hub', hub.url, '--token', apiToken('ab'.repeat(32))], {
      env: { OUTPOST_CONFIG: '/nonexistent/c.json' },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `the token pins a CA, so the hub speaks TLS: use https:// in the hub URL (got ${hub.url})`,
    );
  });
});

describe('projects', () => {
  const shop = {
    apiVersion: 'outpost.dev/v1alpha1',
    kind: 'Project',
    metadata: { name: 'shop', creationTimestamp: new Date(NOW - 86_400_000).toISOString() },
    spec: { quotas: { tunnelSessions: 2 }, members: [] },
    status: {
      phase: 'Active',
      usage: { edges: 1, placements: 0, workloads: 0, blobBytes: 0, dataObjectBytes: 0, tunnelSessions: 1 },
    },
  };

  it('get takes project/NAME as the other kinds do, and -o name', async () => {
    hub.on('GET /api/v1/projects/shop', { body: shop });
    hub.on('GET /api/v1/projects', { body: { items: [shop] } });
    const one = await runCli(['get', 'project/shop'], { env });
    expect(one.stderr).toBe('');
    expect(one.stdout).toMatch(/^NAME +EDGES .* SESSIONS +PHASE +AGE\nshop +1 .* 1\/2 +Active +1d\n$/);
    expect(hub.requests.map((r) => r.path)).toContain('/api/v1/projects/shop');
    const names = await runCli(['get', 'projects', '-o', 'name'], { env });
    expect(names.stdout).toBe('project/shop\n');
    const two = await runCli(['get', 'project/shop', 'other'], { env });
    expect(two.code).toBe(2);
    expect(two.stderr).toMatch(/name one project, or none for all of them/);
  });

  it('get, describe and delete name projects in their help; completion offers them and their names', async () => {
    for (const [cmd, words] of [
      ['get', /and\s+projects,\s+events,\s+replicas/],
      ['describe', /project\|projects\|proj\s/],
      ['delete', /project\|proj\s/],
    ] as const) {
      const h = await runCli([cmd, '--help'], { env });
      expect(h.stdout, `${cmd} --help`).toMatch(words);
    }
    const script = (await runCli(['completion', 'bash'], { env })).stdout;
    expect(script).toMatch(/'get'\) echo '[^']* projects [^']*'/);
    expect(script).toMatch(/'describe'\) echo '[^']* project [^']*'/);
    // After `describe project`, the names come from `outpost get project -o name`.
    expect(script).toMatch(
      /\|project\|projects\|proj\)\n\s+COMPREPLY=\( \$\(compgen -W "\$\(outpost get "\$prev" -o name/,
    );
  });
});
