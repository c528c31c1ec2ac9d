/**
 * The hub's Kubernetes API (docs/kubernetes-api.md) driven by real kubectl: discovery
 * (api-resources), get and get -o yaml, auth can-i and whoami, and the Status errors kubectl shows
 * (NotFound, AlreadyExists, Invalid, Forbidden, Unauthorized), with tokens of each role and scope.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { startHub, type Hub } from '../../hub/hub.js';
import { runCli } from '../fixtures/cli.js';
import { kubeconfigFor, kubectl } from '../fixtures/kubectl.js';
import { tempDir } from '../helpers.js';

let dir: string;
let hub: Hub;
let admin: string;
let viewer: string;
let shopOperator: string;

const placement = (name: string, ns = 'default') => `apiVersion: outpost.dev/v1alpha1
kind: Placement
metadata: { name: ${name}, namespace: ${ns}, labels: { app: ${name} } }
spec:
  edgeSelector: { matchLabels: { site: shop } }
  workloads: [web]
`;

const WORKLOAD = `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata: { name: web }
spec:
  manifests:
    - apiVersion: v1
      kind: Pod
      metadata: { name: web }
      spec: { containers: [{ name: main, image: "nginx:1.27" }] }
`;

beforeAll(async () => {
  dir = tempDir('outpost-kube-api-');
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0' });
  const env = { OUTPOST_CONFIG: path.join(dir, 'admin.cli.json') };
  expect((await runCli(['login', '--hub', hub.url, '--token', hub.adminToken], { env })).code).toBe(0);
  const token = async (role: string, project: string) => {
    const r = await runCli(['token', 'create', '--api', '--role', role, '--project', project], { env });
    expect(r.stderr).toBe('');
    return r.stdout.trim().split('\n').pop()!.trim();
  };
  admin = await kubeconfigFor(hub, dir, 'admin', hub.adminToken);
  viewer = await kubeconfigFor(hub, dir, 'viewer', await token('viewer', 'default'));
  shopOperator = await kubeconfigFor(hub, dir, 'shop', await token('operator', 'shop'));
  const c = await kubectl(admin, ['create', '-f', '-'], { stdin: WORKLOAD });
  expect(c.stderr).toBe('');
});

afterAll(async () => {
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('kubectl against the hub', () => {
  it('outpost kubeconfig pins the CA, carries the token and names the namespace', () => {
    const kc = parseYaml(fs.readFileSync(shopOperator, 'utf8'));
    expect(kc.clusters[0].cluster.server).toBe(`${hub.url}/k8s`);
    expect(Buffer.from(kc.clusters[0].cluster['certificate-authority-data'], 'base64').toString()).toBe(hub.caPem);
    expect(kc.contexts[0].context.namespace).toBe('shop');
    expect(kc.users[0].user.token).toMatch(/^opt1\./);
  });

  it('discovers the outpost.dev kinds (api-resources)', async () => {
    const r = await kubectl(admin, ['api-resources', '--api-group=outpost.dev']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/placements\s+pl\s+outpost.dev\/v1alpha1\s+true\s+Placement/);
    expect(r.stdout).toMatch(/workloads\s+wl\s+outpost.dev\/v1alpha1\s+true\s+Workload/);
  });

  it('explains the kinds from their OpenAPI schemas', async () => {
    const e = await kubectl(admin, ['explain', 'placements']);
    expect(e.stderr).toBe('');
    expect(e.stdout).toContain('GROUP:      outpost.dev');
    expect(e.stdout).toContain('KIND:       Placement');
    expect(e.stdout).toContain('Which edges run which workloads');
    expect(e.stdout).toMatch(/spec\s+<Object>/);
    const spec = await kubectl(admin, ['explain', 'placement.spec.rollout']);
    expect(spec.stdout).toMatch(/paused\s+<boolean>/);
    expect(spec.stdout).toMatch(/maxUnavailable/);
  });

  it('creates, gets and shows yaml', async () => {
    const c = await kubectl(admin, ['create', '-f', '-'], { stdin: placement('eu') });
    // The hub's warnings (here: no edge matches yet) reach kubectl as Warning headers.
    expect(c.stderr).toContain('Warning: Placement eu selects no edge now');
    expect(c.stdout).toContain('placement.outpost.dev/eu created');
    const y = await kubectl(admin, ['get', 'placement', 'eu', '-o', 'yaml']);
    const o = parseYaml(y.stdout);
    expect(o).toMatchObject({
      apiVersion: 'outpost.dev/v1alpha1',
      kind: 'Placement',
      metadata: { name: 'eu', namespace: 'default' },
    });
    expect(o.metadata.resourceVersion).toMatch(/^\d+$/);
    const g = await kubectl(admin, ['get', 'pl']);
    expect(g.stdout).toMatch(/^NAME/);
    expect(g.stdout).toContain('eu');
  });

  it('answers Status errors kubectl shows', async () => {
    const nf = await kubectl(admin, ['get', 'placement', 'nope']);
    expect(nf.code).not.toBe(0);
    expect(nf.stderr).toContain('Error from server (NotFound): placements.outpost.dev "nope" not found');
    const dup = await kubectl(admin, ['create', '-f', '-'], { stdin: placement('eu') });
    expect(dup.stderr).toContain('Error from server (AlreadyExists)');
    const bad = await kubectl(admin, ['create', '-f', '-', '--validate=false'], {
      stdin: placement('bad').replace('workloads: [web]', 'workloads: [web]\n  rollout: { maxUnavailable: -3 }'),
    });
    expect(bad.stderr).toContain('The Placement "bad" is invalid');
    expect(bad.stderr).toContain('spec.rollout.maxUnavailable');
  });

  it('a viewer lists but may not write (403)', async () => {
    expect((await kubectl(viewer, ['get', 'placements'])).stdout).toContain('eu');
    const d = await kubectl(viewer, ['delete', 'placement', 'eu']);
    expect(d.stderr).toContain('Error from server (Forbidden)');
    expect((await kubectl(viewer, ['auth', 'can-i', 'delete', 'placements'])).stdout).toMatch(
      /^no - .*a viewer token may only get, list and watch/,
    );
    expect((await kubectl(viewer, ['auth', 'can-i', 'watch', 'placements'])).stdout.trim()).toBe('yes');
  });

  it('a project token sees only its namespace', async () => {
    const other = await kubectl(shopOperator, ['get', 'placements', '-n', 'default']);
    expect(other.stderr).toContain('Error from server (Forbidden)');
    const all = await kubectl(shopOperator, ['get', 'placements', '-A']);
    expect(all.stderr).toContain('Error from server (Forbidden)');
    expect((await kubectl(shopOperator, ['auth', 'can-i', 'create', 'placements'])).stdout.trim()).toBe('yes');
    expect((await kubectl(shopOperator, ['auth', 'can-i', 'create', 'placements', '-n', 'default'])).stdout).toMatch(
      /^no - .*a token of project shop sees only the namespace shop/,
    );
    const who = await kubectl(shopOperator, ['auth', 'whoami', '-o', 'json']);
    expect(JSON.parse(who.stdout).status.userInfo.groups).toContain('outpost:project:shop');
  });

  it('refuses an unknown token (401)', async () => {
    const kc = fs.readFileSync(viewer, 'utf8').replace(/token: .*/, 'token: opt1.nope.nope.nope');
    const f = path.join(dir, 'bad.kubeconfig');
    fs.writeFileSync(f, kc);
    const r = await kubectl(f, ['get', 'placements']);
    expect(r.stderr).toContain('You must be logged in to the server');
  });
});
