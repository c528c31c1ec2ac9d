/**
 * Server-side apply on the hub's Kubernetes API with real kubectl: `kubectl apply -f examples/
 * --server-side`, managed fields per field manager, a conflict (409 naming the other manager and
 * field) unless --force-conflicts, fields a manager stops applying removed, `kubectl diff
 * --server-side`, and `kubectl delete -f`. kube-api-apply.postgres.test.ts runs it again with the
 * hub's tables in PostgreSQL.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { startHub, type Hub } from '../../hub/hub.js';
import { hubDatabaseOption } from '../fixtures/backend.js';
import { kubeconfigFor, kubectl } from '../fixtures/kubectl.js';
import { tempDir } from '../helpers.js';

const EXAMPLES = path.join(import.meta.dirname, '..', '..', 'examples');
const HELLO = path.join(EXAMPLES, 'hello.yaml');

let dir: string;
let hub: Hub;
let admin: string;

beforeAll(async () => {
  dir = tempDir('outpost-kube-apply-');
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0', ...(await hubDatabaseOption()) });
  admin = await kubeconfigFor(hub, dir, 'admin', hub.adminToken);
});

afterAll(async () => {
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const managers = async (what: string) =>
  parseYaml((await kubectl(admin, ['get', what, '-o', 'yaml', '--show-managed-fields'])).stdout).metadata
    .managedFields as { manager: string; operation: string; fieldsV1: any }[];

/** hello.yaml with `edit` applied to its text, as another file: all of it, or its Workload or Placement alone. */
const variant = (name: string, edit: (s: string) => string, only?: 'workload' | 'placement') => {
  const f = path.join(dir, name);
  const text = fs.readFileSync(HELLO, 'utf8');
  const at = text.indexOf('\n---');
  const part = only === 'workload' ? text.slice(0, at) : only === 'placement' ? text.slice(at) : text;
  fs.writeFileSync(f, edit(part));
  return f;
};

describe('server-side apply', () => {
  it('applies examples/ (the Outpost kinds in it; the ClusterRole is for an edge cluster)', async () => {
    const r = await kubectl(admin, ['apply', '--server-side', '-f', EXAMPLES]);
    expect(r.stdout).toContain('workload.outpost.dev/hello serverside-applied');
    expect(r.stdout).toContain('placement.outpost.dev/hello-eu serverside-applied');
    // examples/kubernetes-driver-rbac.yaml is applied to an edge's cluster, not to the hub.
    expect(r.stderr).toMatch(/kubernetes-driver-rbac.yaml.*the server could not find the requested resource/);
    const m = await managers('placement/hello-eu');
    expect(m).toHaveLength(1);
    expect(m[0]).toMatchObject({ manager: 'kubectl', operation: 'Apply' });
    expect(m[0].fieldsV1['f:spec']['f:edgeSelector']['f:matchLabels']['f:region']).toEqual({});
    const again = await kubectl(admin, ['apply', '--server-side', '-f', HELLO]);
    expect(again.code).toBe(0);
  });

  it("refuses to change another manager's field (409) unless forced", async () => {
    const other = variant('other.yaml', (s) => s.replace('region: eu', 'region: us'), 'placement');
    const r = await kubectl(admin, ['apply', '--server-side', '--field-manager=ci', '-f', other]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      'Apply failed with 1 conflict: conflict with "kubectl": .spec.edgeSelector.matchLabels.region',
    );
    const pl = parseYaml((await kubectl(admin, ['get', 'placement', 'hello-eu', '-o', 'yaml'])).stdout);
    expect(pl.spec.edgeSelector.matchLabels.region).toBe('eu');
    const f = await kubectl(admin, ['apply', '--server-side', '--field-manager=ci', '--force-conflicts', '-f', other]);
    expect(f.code).toBe(0);
    const after = parseYaml((await kubectl(admin, ['get', 'placement', 'hello-eu', '-o', 'yaml'])).stdout);
    expect(after.spec.edgeSelector.matchLabels.region).toBe('us');
    const m = await managers('placement/hello-eu');
    const ci = m.find((x) => x.manager === 'ci')!;
    const kubectlOwn = m.find((x) => x.manager === 'kubectl')!;
    expect(ci.fieldsV1['f:spec']['f:edgeSelector']['f:matchLabels']['f:region']).toEqual({});
    expect(kubectlOwn.fieldsV1['f:spec']['f:edgeSelector']?.['f:matchLabels']?.['f:region']).toBeUndefined();
  });

  it('a field changed by an update belongs to its manager; an apply changing it conflicts', async () => {
    expect((await kubectl(admin, ['label', 'workload', 'hello', 'tier=web'])).stderr).toBe('');
    const m = await managers('workload/hello');
    expect(m.find((x) => x.operation === 'Update')?.fieldsV1['f:metadata']['f:labels']['f:tier']).toEqual({});
    const applied = variant('labelled.yaml', (s) =>
      s.replace('  name: hello\n', '  name: hello\n  labels: { tier: db }\n'),
    );
    const r = await kubectl(admin, ['apply', '--server-side', '-f', applied]);
    expect(r.stderr).toMatch(/conflict with "kubectl-label" using outpost.dev\/v1alpha1: .metadata.labels.tier/);
  });

  it('removes the fields a manager stops applying', async () => {
    const withLabel = variant(
      'with-label.yaml',
      (s) => s.replace('  name: hello\n', '  name: hello\n  labels: { team: a }\n'),
      'workload',
    );
    const plain = variant('plain.yaml', (s) => s, 'workload');
    expect((await kubectl(admin, ['apply', '--server-side', '-f', withLabel])).code).toBe(0);
    const has = parseYaml((await kubectl(admin, ['get', 'workload', 'hello', '-o', 'yaml'])).stdout);
    expect(has.metadata.labels.team).toBe('a');
    expect((await kubectl(admin, ['apply', '--server-side', '-f', plain])).code).toBe(0);
    const gone = parseYaml((await kubectl(admin, ['get', 'workload', 'hello', '-o', 'yaml'])).stdout);
    expect(gone.metadata.labels.team).toBeUndefined();
    // Another manager's label stays.
    expect(gone.metadata.labels.tier).toBe('web');
  });

  it('diffs server-side', async () => {
    const same = await kubectl(admin, ['diff', '--server-side', '-f', variant('plain.yaml', (s) => s, 'workload')]);
    expect(same.stdout).toBe('');
    expect(same.code).toBe(0);
    const changed = variant(
      'changed.yaml',
      (s) => s.replace('outpost-busybox:latest', 'outpost-busybox:v2'),
      'workload',
    );
    const d = await kubectl(admin, ['diff', '--server-side', '-f', changed]);
    expect(d.code).toBe(1);
    expect(d.stdout).toMatch(/^-\s+image: localhost\/outpost-busybox:latest$/m);
    expect(d.stdout).toMatch(/^\+\s+image: localhost\/outpost-busybox:v2$/m);
    // The diff stored nothing.
    const wl = parseYaml((await kubectl(admin, ['get', 'workload', 'hello', '-o', 'yaml'])).stdout);
    expect(wl.spec.manifests[0].spec.containers[0].image).toBe('localhost/outpost-busybox:latest');
  });

  it('deletes what a file holds', async () => {
    const r = await kubectl(admin, ['delete', '-f', HELLO]);
    expect(r.stdout).toContain('workload.outpost.dev "hello" deleted');
    expect(r.stdout).toContain('placement.outpost.dev "hello-eu" deleted');
    // examples/ holds a GitRepo too (examples/gitrepo.yaml): not in this file, so it stays.
    expect((await kubectl(admin, ['get', 'workloads,placements'])).stderr).toContain('No resources found');
  });
});
