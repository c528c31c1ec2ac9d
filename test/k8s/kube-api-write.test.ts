/**
 * Writes through the hub's Kubernetes API with real kubectl: client-side apply (merge patch),
 * replace with a stale resourceVersion (409 Conflict), patch (merge, json; strategic refused with
 * 415), server dry-run, delete, and the read-only status subresource.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { startHub, type Hub } from '../../hub/hub.js';
import { runCli } from '../fixtures/cli.js';
import { kubeconfigFor, kubectl, kubeRequest } from '../fixtures/kubectl.js';
import { tempDir } from '../helpers.js';

let dir: string;
let hub: Hub;
let admin: string;

const workload = (image: string) => `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata: { name: web, labels: { app: web } }
spec:
  manifests:
    - { apiVersion: v1, kind: Pod, metadata: { name: web }, spec: { containers: [{ name: main, image: "${image}" }] } }
`;

beforeAll(async () => {
  dir = tempDir('outpost-kube-write-');
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0' });
  admin = await kubeconfigFor(hub, dir, 'admin', hub.adminToken);
});

afterAll(async () => {
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const get = async (what: string) => parseYaml((await kubectl(admin, ['get', what, '-o', 'yaml'])).stdout);

describe('kubectl writes over the hub', () => {
  it('applies (client-side) and reapplies a change', async () => {
    const a = await kubectl(admin, ['apply', '-f', '-'], { stdin: workload('nginx:1.26') });
    expect(a.stderr).toBe('');
    expect(a.stdout).toContain('workload.outpost.dev/web created');
    const again = await kubectl(admin, ['apply', '-f', '-'], { stdin: workload('nginx:1.26') });
    expect(again.stdout).toContain('workload.outpost.dev/web unchanged');
    const b = await kubectl(admin, ['apply', '-f', '-'], { stdin: workload('nginx:1.27') });
    expect(b.stderr).toBe('');
    expect(b.stdout).toContain('workload.outpost.dev/web configured');
    const o = await get('workload/web');
    expect(o.spec.manifests[0].spec.containers[0].image).toBe('nginx:1.27');
    expect(o.status.revision).toBe(2);
    expect(o.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']).toContain('nginx:1.27');
  });

  it('refuses a replace with a stale resourceVersion (409 Conflict)', async () => {
    const o = await get('workload/web');
    const stale = { ...o, metadata: { ...o.metadata, labels: { app: 'web', v: '1' } } };
    expect((await kubectl(admin, ['replace', '-f', '-'], { stdin: toYaml(stale) })).stderr).toBe('');
    const again = { ...o, metadata: { ...o.metadata, labels: { app: 'web', v: '2' } } };
    const r = await kubectl(admin, ['replace', '-f', '-'], { stdin: toYaml(again) });
    expect(r.stderr).toContain('Error from server (Conflict)');
    expect(r.stderr).toContain(`resourceVersion ${o.metadata.resourceVersion} is stale`);
    expect((await get('workload/web')).metadata.labels.v).toBe('1');
  });

  it('patches with a merge patch and a JSON patch; strategic merge is refused', async () => {
    const m = await kubectl(admin, [
      'patch',
      'workload',
      'web',
      '--type',
      'merge',
      '-p',
      '{"metadata":{"labels":{"v":"3"}}}',
    ]);
    expect(m.stderr).toBe('');
    expect((await get('workload/web')).metadata.labels.v).toBe('3');
    const j = await kubectl(admin, [
      'patch',
      'workload',
      'web',
      '--type',
      'json',
      '-p',
      '[{"op":"replace","path":"/spec/manifests/0/spec/containers/0/image","value":"nginx:1.28"}]',
    ]);
    expect(j.stderr).toBe('');
    expect((await get('workload/web')).spec.manifests[0].spec.containers[0].image).toBe('nginx:1.28');
    const s = await kubectl(admin, ['patch', 'workload', 'web', '-p', '{"metadata":{"labels":{"v":"4"}}}']);
    expect(s.stderr).toContain('strategic merge patch is not supported');
    // A merge patch naming a stale resourceVersion is checked like an update.
    const stale = await kubectl(admin, [
      'patch',
      'workload',
      'web',
      '--type',
      'merge',
      '-p',
      '{"metadata":{"resourceVersion":"1","labels":{"v":"5"}}}',
    ]);
    expect(stale.stderr).toContain('Error from server (Conflict)');
  });

  it('validates in a server dry run without storing', async () => {
    const before = await get('workload/web');
    const d = await kubectl(admin, ['apply', '--dry-run=server', '-f', '-'], { stdin: workload('nginx:9') });
    expect(d.stderr).toBe('');
    expect(d.stdout).toContain('(server dry run)');
    expect((await get('workload/web')).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    const bad = await kubectl(admin, ['apply', '--dry-run=server', '-f', '-'], {
      stdin: workload('nginx:9').replace('manifests:', 'replicas: 3\n  manifests:'),
    });
    expect(bad.stderr).toContain('replicas');
  });

  it('serves status read-only', async () => {
    const s = await kubeRequest(
      hub,
      hub.adminToken,
      'GET',
      '/apis/outpost.dev/v1alpha1/namespaces/default/workloads/web/status',
    );
    expect(s.json().status.revision).toBeGreaterThan(1);
    const put = await kubeRequest(
      hub,
      hub.adminToken,
      'PUT',
      '/apis/outpost.dev/v1alpha1/namespaces/default/workloads/web/status',
      {
        body: s.text,
        headers: { 'content-type': 'application/json' },
      },
    );
    expect(put.status).toBe(405);
    expect(put.json()).toMatchObject({ kind: 'Status', reason: 'MethodNotAllowed', code: 405 });
  });

  it('keeps Secret values sealed: redacted in output, kept through a patch, refused in last-applied', async () => {
    const secret = `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata: { name: sec }
spec:
  manifests:
    - { apiVersion: v1, kind: Secret, metadata: { name: db }, stringData: { password: hunter2 } }
`;
    const ssa = await kubectl(admin, ['apply', '--server-side', '-f', '-'], { stdin: secret });
    expect(ssa.code, ssa.stderr).toBe(0);
    const shown = await get('workload/sec');
    expect(shown.spec.manifests[0].stringData.password).toBe('<redacted>');
    expect(JSON.stringify(shown)).not.toContain('hunter2');
    expect(
      (await kubectl(admin, ['patch', 'workload', 'sec', '--type', 'merge', '-p', '{"metadata":{"labels":{"x":"y"}}}']))
        .code,
    ).toBe(0);
    const env = { OUTPOST_CONFIG: path.join(dir, 'admin.cli.json') };
    const revealed = await runCli(['get', 'workload', 'sec', '-o', 'json', '--show-secrets'], { env });
    expect(JSON.parse(revealed.stdout).spec.manifests[0].stringData.password).toBe('hunter2');
    // Client-side apply would copy the file, Secret values and all, into an annotation.
    const csa = await kubectl(admin, ['apply', '-f', '-'], { stdin: secret.replace('name: sec', 'name: sec2') });
    expect(csa.stderr).toContain('use kubectl apply --server-side');
  });

  it('deletes', async () => {
    const d = await kubectl(admin, ['delete', 'workload', 'web']);
    expect(d.stdout).toContain('workload.outpost.dev "web" deleted');
    expect((await kubectl(admin, ['get', 'workload', 'web'])).stderr).toContain('(NotFound)');
  });
});
