/**
 * Global ClusterTemplates on a real in-process hub with edge agents in two projects
 * (docs/clusters.md, "Global templates"; hub/clusters/global-templates.ts): only an admin for
 * every project applies or deletes one (a project's admin is refused, saying why), every project's
 * tokens read it and `get clustertemplates` shows it as Global; Clusters of two projects name it
 * (`scope: Global`) and their edges fetch its artifacts from the hub-wide scope while no other
 * edge may; it is not deleted while a Cluster of any project uses it (409 naming project/cluster).
 * The artifacts are test doubles (test/fixtures/cluster-artifacts.ts): a node that stages them and
 * then fails at its first start proves the fetch and the signature check went through.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlobDigest } from '../core/blobs.js';
import type { EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { tempDir, waitFor } from './helpers.js';
import { pushFakeArtifacts } from './fixtures/cluster-artifacts.js';
import { runCli } from './fixtures/cli.js';
import { adminApi, startProcessAgent, stopAgents } from './fixtures/in-process-fleet.js';

describe('global ClusterTemplates', () => {
  let dir: string;
  let hub: Hub;
  const agents = new Map<string, EdgeAgent>();
  let template: { kind: string; metadata: { name: string; project?: string }; spec: Record<string, any> };
  const tokens: Record<string, string> = {};

  const call = (token: string, method: string, p: string, body?: unknown) =>
    fetch(`${hub.url}/api/v1${p}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json().catch(() => ({}))) as any }));
  const admin = (method: string, p: string, body?: unknown) => call(hub.adminToken, method, p, body);
  const apply = (o: unknown, token = hub.adminToken) => call(token, 'POST', '/apply', { objects: [o] });
  const cluster = (project: string, name: string, edge: string, scope?: 'Global') => ({
    kind: 'Cluster',
    metadata: { name, project },
    spec: { template: { name: 'shared', version: '1', ...(scope ? { scope } : {}) }, controlPlane: { edges: [edge] } },
  });

  beforeAll(async () => {
    dir = tempDir('outpost-clusters-global-');
    hub = await startHub({
      dataDir: path.join(dir, 'hub'),
      listen: '127.0.0.1:0',
      insecureHttp: true,
      scanner: { kind: 'none' },
    });
    expect((await apply({ kind: 'Project', metadata: { name: 'lab' }, spec: {} })).status).toBe(200);
    for (const [project, names] of [
      ['default', ['d1']],
      ['lab', ['l1', 'l2']],
    ] as const) {
      const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', {
        project,
        uses: names.length,
      });
      for (const n of names) agents.set(n, await startProcessAgent(hub, dir, n, join.token));
    }
    for (const [key, grant] of Object.entries({
      defaultAdmin: { role: 'admin', project: 'default' },
      labViewer: { role: 'viewer', project: 'lab' },
      allOperator: { role: 'operator', project: '*' },
    }))
      tokens[key] = (await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/api', grant)).token;
    template = (await pushFakeArtifacts(hub, path.join(dir, 'artifacts'), { name: 'shared', global: true })).template;
  }, 120_000);

  afterAll(async () => {
    await stopAgents([...agents.values()]);
    await hub?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is applied by an admin for every project only: a project admin or an operator is refused, saying why', async () => {
    expect(template.metadata.project).toBe('*');
    expect(Object.values(template.spec.artifacts).every((a: any) => a.scope === '*')).toBe(true);
    for (const token of [tokens.defaultAdmin!, tokens.allOperator!]) {
      const r = await apply(template, token);
      expect(r.status).toBe(403);
      expect(r.body.error.message).toContain('may not change global ClusterTemplates (metadata.project "*")');
      expect(r.body.error.message).toContain('only an admin token for every project (*)');
      expect(r.body.error.message).toContain('apply the template in your project');
      const put = await call(token, 'PUT', '/projects/*/clustertemplates/shared', template);
      expect(put.status).toBe(403);
    }
    expect((await admin('GET', '/projects/*/clustertemplates/shared')).status).toBe(404);
    // Artifacts signed for one project only do not make a global template.
    const { template: narrow } = await pushFakeArtifacts(hub, path.join(dir, 'artifacts-local'));
    const refused = await apply({ ...narrow, metadata: { name: 'narrow', project: '*' } });
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.body)).toContain('is signed for project default only');
    // The admin for every project applies it; it is immutable per version as any template.
    expect((await apply(template)).status).toBe(200);
    const changed = await apply({ ...template, spec: { ...template.spec, kubelet: { maxPods: 20 } } });
    expect(changed.status).toBe(422);
    expect(JSON.stringify(changed.body)).toContain(
      'version 1 of ClusterTemplate shared was applied with other content',
    );
    // Its artifacts are now blobs of the hub-wide scope too, referenced by it.
    for (const a of Object.values(template.spec.artifacts) as { digest: BlobDigest }[])
      expect(hub.blobs.get('*', a.digest)?.references).toContain('ClusterTemplate/shared@1');
  });

  it('is read by every project, shown as Global, and named by Clusters of two projects', async () => {
    // A viewer of lab reads it, and lists it with lab's own templates.
    expect((await call(tokens.labViewer!, 'GET', '/projects/*/clustertemplates/shared')).body.metadata.project).toBe(
      '*',
    );
    const listed = await call(tokens.labViewer!, 'GET', '/projects/lab/clustertemplates');
    expect(listed.body.items.map((o: any) => `${o.metadata.project}/${o.metadata.name}`)).toEqual(['*/shared']);
    const got = await runCli(['get', 'clustertemplates', '--project', 'lab'], {
      env: { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: tokens.labViewer! },
    });
    expect(got.stdout).toMatch(/NAME\s+SCOPE\s+VERSION\s+KUBERNETES\s+AGE/);
    expect(got.stdout).toMatch(/shared\s+Global\s+1\s+v1\.33\.13/);
    const lab = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: tokens.labViewer! };
    const described = await runCli(['describe', 'clustertemplate', 'shared', '--global'], { env: lab });
    expect(described.stdout, described.stderr).toMatch(/Scope:\s+Global/);
    expect((await runCli(['get', 'ct', 'shared', '--global', '-o', 'name'], { env: lab })).stdout).toBe(
      'clustertemplate/shared\n',
    );
    expect((await runCli(['get', 'ct', '--global', '-o', 'name'], { env: lab })).stdout).toBe(
      'clustertemplate/shared\n',
    );
    const wrong = await runCli(['get', 'workloads', '--global'], { env: lab });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--global goes with clustertemplates only');
    // Without scope: Global, a Cluster names its project's templates, and is told where else to look.
    const plain = await apply(cluster('lab', 'b', 'l1'));
    expect(plain.status).toBe(422);
    expect(JSON.stringify(plain.body)).toContain('was never applied in project lab');
    expect(JSON.stringify(plain.body)).toContain('scope: Global');
    for (const [project, name, edge] of [
      ['default', 'a', 'd1'],
      ['lab', 'b', 'l1'],
    ] as const)
      expect((await apply(cluster(project, name, edge, 'Global'))).status).toBe(200);
    // Each node staged the artifacts (fetched from the hub-wide scope, signatures checked) and
    // started them: the test doubles then exit at start.
    for (const [project, name] of [
      ['default', 'a'],
      ['lab', 'b'],
    ] as const)
      await waitFor(
        async () =>
          ((await admin('GET', `/projects/${project}/clusters/${name}`)).body.status.nodes[0]?.message ?? '').includes(
            'exited at start',
          ),
        { timeout: 60_000, what: `${project}/${name}'s node staged the global artifacts and started them` },
      );
    const cl = await runCli(['get', 'clusters', '--project', 'lab'], {
      env: { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken },
    });
    expect(cl.stdout).toMatch(/b\s+shared@1 \(global\)\s+Degraded/);
  }, 120_000);

  it("serves its blobs to the edges whose node needs them, and to no other edge or project's token", async () => {
    const kubelet = template.spec.artifacts.kubelet.digest as BlobDigest;
    // l2 is in lab too, but belongs to no cluster: refused.
    await expect(agents.get('l2')!.transfers.fetch(kubelet)).rejects.toThrow(/not found in project lab/);
    // Lab's tokens do not read them through the API either (they are no blobs of lab).
    expect((await call(tokens.labViewer!, 'GET', `/projects/lab/blobs/${kubelet}`)).status).toBe(404);
    expect((await call(tokens.labViewer!, 'GET', `/projects/*/blobs/${kubelet}`)).status).toBe(400);
    // l1 runs lab's node of it: it fetches (again, after dropping its copy).
    const l1 = agents.get('l1')!;
    await l1.blobs.files.remove(kubelet);
    await l1.transfers.fetch(kubelet);
    expect(l1.blobs.files.has(kubelet)).toBe(true);
  });

  it('is not deleted while a Cluster of any project uses it', async () => {
    const del = await admin('DELETE', '/projects/*/clustertemplates/shared');
    expect(del.status).toBe(409);
    expect(del.body.error.message).toContain('global ClusterTemplate shared is used by Cluster default/a, lab/b');
    // A project's admin may not delete it at all.
    expect((await call(tokens.defaultAdmin!, 'DELETE', '/projects/*/clustertemplates/shared')).status).toBe(403);
    for (const [project, name] of [
      ['default', 'a'],
      ['lab', 'b'],
    ] as const) {
      await admin('DELETE', `/projects/${project}/clusters/${name}`);
      await waitFor(async () => (await admin('GET', `/projects/${project}/clusters/${name}`)).status === 404, {
        timeout: 60_000,
        what: `${project}/${name} gone`,
      });
    }
    // Its node gone, l1 may fetch them no more.
    const l1 = agents.get('l1')!;
    const kubelet = template.spec.artifacts.kubelet.digest as BlobDigest;
    await l1.blobs.files.remove(kubelet);
    await expect(l1.transfers.fetch(kubelet)).rejects.toThrow(/not found in project lab/);
    const gone = await runCli(['delete', 'clustertemplate', 'shared', '--global'], {
      env: { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken },
    });
    expect(gone.stdout, gone.stderr).toBe('clustertemplate/shared deleted\n');
    expect((await admin('GET', '/projects/*/clustertemplates/shared')).status).toBe(404);
  }, 120_000);
});
