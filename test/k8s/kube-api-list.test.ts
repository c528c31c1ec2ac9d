/**
 * The hub's Kubernetes API lists as kubectl needs: Table answers with the columns `outpost get`
 * prints, label and field selectors, and paging with limit/continue (kubectl --chunk-size).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../../hub/hub.js';
import { runCli } from '../fixtures/cli.js';
import { kubeconfigFor, kubectl, kubeRequest } from '../fixtures/kubectl.js';
import { tempDir } from '../helpers.js';

let dir: string;
let hub: Hub;
let admin: string;
let env: NodeJS.ProcessEnv;

const objects = `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata: { name: web }
spec:
  manifests:
    - { apiVersion: v1, kind: Pod, metadata: { name: web }, spec: { containers: [{ name: main, image: "nginx:1.27" }] } }
${['a', 'b', 'c']
  .map(
    (n) => `---
apiVersion: outpost.dev/v1alpha1
kind: Placement
metadata: { name: p-${n}, labels: { tier: ${n === 'c' ? 'db' : 'web'} } }
spec: { edgeSelector: {}, workloads: [web] }
`,
  )
  .join('')}`;

beforeAll(async () => {
  dir = tempDir('outpost-kube-list-');
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0' });
  env = { OUTPOST_CONFIG: path.join(dir, 'admin.cli.json') };
  expect((await runCli(['login', '--hub', hub.url, '--token', hub.adminToken], { env })).code).toBe(0);
  fs.writeFileSync(path.join(dir, 'objects.yaml'), objects);
  expect((await runCli(['apply', '-f', path.join(dir, 'objects.yaml')], { env })).code).toBe(0);
  admin = await kubeconfigFor(hub, dir, 'admin', hub.adminToken);
});

afterAll(async () => {
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const headerOf = (out: string) => out.split('\n')[0].trim().split(/\s+/);
const namesOf = (out: string) =>
  out
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => l.split(/\s+/)[0]);

describe('kubectl get over the hub', () => {
  it('prints the columns outpost get prints', async () => {
    for (const kind of ['placements', 'workloads', 'edges', 'dataobjects']) {
      const ours = await runCli(['get', kind], { env });
      const theirs = await kubectl(admin, ['get', kind]);
      if (kind === 'edges' || kind === 'dataobjects') {
        expect(theirs.stderr).toContain('No resources found');
        continue;
      }
      expect(theirs.stderr).toBe('');
      expect(headerOf(theirs.stdout)).toEqual(headerOf(ours.stdout));
      expect(namesOf(theirs.stdout)).toEqual(namesOf(ours.stdout));
    }
    const wl = await kubectl(admin, ['get', 'workload', 'web']);
    // NAME REVISION READY EDGES AGE: the revision is the workload's.
    expect(wl.stdout.split('\n')[1].split(/\s+/).slice(0, 4)).toEqual(['web', '1', '0/0', '0']);
  });

  it('selects by label and by field', async () => {
    expect(namesOf((await kubectl(admin, ['get', 'pl', '-l', 'tier=web'])).stdout)).toEqual(['p-a', 'p-b']);
    expect(namesOf((await kubectl(admin, ['get', 'pl', '-l', 'tier notin (web)'])).stdout)).toEqual(['p-c']);
    expect(namesOf((await kubectl(admin, ['get', 'pl', '--field-selector', 'metadata.name=p-b'])).stdout)).toEqual([
      'p-b',
    ]);
    const all = await kubectl(admin, [
      'get',
      'pl',
      '-A',
      '--field-selector',
      'metadata.namespace=default,metadata.name!=p-a',
    ]);
    expect(headerOf(all.stdout)[0]).toBe('NAMESPACE');
    expect(all.stdout).toMatch(/default\s+p-b/);
    expect(all.stdout).not.toContain('p-a');
    const bad = await kubectl(admin, ['get', 'pl', '--field-selector', 'spec.workloads=web']);
    expect(bad.stderr).toContain('field label not supported: spec.workloads');
  });

  it('pages with limit and continue', async () => {
    const first = await kubeRequest(
      hub,
      hub.adminToken,
      'GET',
      '/apis/outpost.dev/v1alpha1/namespaces/default/placements?limit=2',
    );
    const page = first.json();
    expect(page.kind).toBe('PlacementList');
    expect(page.items.map((o: any) => o.metadata.name)).toEqual(['p-a', 'p-b']);
    expect(page.metadata.continue).toBeTruthy();
    expect(Number(page.metadata.resourceVersion)).toBeGreaterThan(0);
    const next = await kubeRequest(
      hub,
      hub.adminToken,
      'GET',
      `/apis/outpost.dev/v1alpha1/namespaces/default/placements?limit=2&continue=${page.metadata.continue}`,
    );
    expect(next.json().items.map((o: any) => o.metadata.name)).toEqual(['p-c']);
    expect(next.json().metadata.continue).toBeUndefined();
    // kubectl pages the same way: one object per request, every one listed.
    expect(namesOf((await kubectl(admin, ['get', 'pl', '--chunk-size=1'])).stdout)).toEqual(['p-a', 'p-b', 'p-c']);
  });

  it('answers a Table with full objects when asked', async () => {
    const r = await kubeRequest(
      hub,
      hub.adminToken,
      'GET',
      '/apis/outpost.dev/v1alpha1/namespaces/default/placements?includeObject=Object',
      {
        headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
      },
    );
    const t = r.json();
    expect(t.kind).toBe('Table');
    expect(t.columnDefinitions.map((d: any) => d.name)).toEqual(['NAME', 'READY', 'WORST', 'ROLLOUT', 'EDGES', 'AGE']);
    expect(t.rows[0].object.spec.workloads).toEqual(['web']);
  });
});
