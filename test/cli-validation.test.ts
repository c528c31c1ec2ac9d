/**
 * What `outpost apply` refuses and warns about, against a real hub (startHub: TLS, real SQLite,
 * real HTTP): unknown fields with a "did you mean", embedded Kubernetes manifests checked against
 * the Kubernetes schemas with the field path, kinds a driver cannot run warned about for the edges
 * that would get them, sizes checked before parsing, dry runs and diffs with per-edge counts.
 * The hub is asked directly too: a client that skips the CLI's checks gets the same answers.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../hub/hub.js';
import { HubClient, HubError } from '../cli/client.js';
import { runCli } from './fixtures/cli.js';
import { tempDir } from './helpers.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
let api: HubClient;

const cli = (args: string[], opts: Parameters<typeof runCli>[1] = {}) => runCli(args, { env, ...opts });
const write = (name: string, text: string) => {
  const f = path.join(dir, name);
  fs.writeFileSync(f, text);
  return f;
};
/** The hub's answer to a request the CLI would have refused locally. */
async function hubRefusal(objects: unknown[]): Promise<HubError> {
  try {
    await api.post('/api/v1/apply', { objects });
  } catch (err) {
    if (err instanceof HubError) return err;
    throw err;
  }
  throw new Error('the hub accepted it');
}

const inventory = (driver: string) => ({
  hostname: 'h',
  os: 'linux',
  arch: 'x64',
  cpus: 2,
  memoryBytes: 1e9,
  runtimes: [driver],
  driver,
  agentVersion: 'test',
});

beforeAll(async () => {
  dir = tempDir('outpost-cli-validation-');
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0' });
  env = { OUTPOST_CONFIG: path.join(dir, 'cli', 'config.json') };
  expect((await cli(['login', '--hub', hub.url, '--token', hub.adminToken])).code).toBe(0);
  api = new HubClient({ hub: hub.url, token: hub.adminToken, ca: hub.caPem });
  const join = (await cli(['token', 'create', '--labels', 'site=shop', '--uses', '3'])).stdout.trim();
  const enroll = new HubClient({ hub: hub.url, token: 'none', ca: hub.caPem });
  for (const [name, driver] of [
    ['e-proc-1', 'process'],
    ['e-proc-2', 'process'],
    ['e-kube', 'kubernetes'],
  ])
    await enroll.post('/api/v1/enroll', { joinToken: join, name, inventory: inventory(driver) });
});

afterAll(async () => {
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const POD = `apiVersion: v1
      kind: Pod
      metadata: { name: web }
      spec: { containers: [{ name: main, image: "busybox:1", command: [sleep, "1000"] }] }`;

describe('apply refuses what kubectl refuses', () => {
  it('an unknown field is refused with the nearest known name, by the CLI and by the hub', async () => {
    const f = write(
      'typo.yaml',
      `kind: Placement\nmetadata: { name: typo }\nspec:\n  edges: [e-proc-1]\n  workloads: [web]\n  rollout: { failureTreshold: 2 }\n`,
    );
    const r = await cli(['apply', '-f', f]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `${f}, document 1 (line 1) (Placement typo): spec.rollout: unknown field failureTreshold; did you mean failureThreshold?`,
    );
    const h = await hubRefusal([
      { kind: 'Placement', metadata: { name: 'typo', lables: {} }, spec: { edges: ['e-proc-1'], workloads: ['web'] } },
    ]);
    expect(h.status).toBe(422);
    expect(h.details).toEqual([{ index: 0, path: 'metadata', message: 'unknown field lables; did you mean labels?' }]);
    expect((await cli(['get', 'pl', 'typo'])).code).toBe(1);
  });

  it('embedded Kubernetes manifests are checked against the Kubernetes schemas, with the field path', async () => {
    const f = write(
      'k8s.yaml',
      `kind: Workload
metadata: { name: bad }
spec:
  manifests:
    - apiVersion: v1
      kind: Pod
      metadata: { name: a }
      spec: { contianers: [{ name: main, image: x }] }
    - apiVersion: apps/v1
      kind: Deployment
      metadata: { name: b }
      spec:
        selector: { matchLabels: { app: b } }
        template:
          metadata: { labels: { app: b } }
          spec: { containers: [{ name: main, image: x, env: [{ name: PORT, value: 8080 }] }] }
`,
    );
    const r = await cli(['apply', '-f', f]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      '(Workload bad): spec.manifests[0].spec.contianers: unknown field contianers; did you mean containers? (in Pod/a)',
    );
    expect(r.stderr).toContain('(Workload bad): spec.manifests[0].spec.containers: is required (in Pod/a)');
    expect(r.stderr).toContain(
      '(Workload bad): spec.manifests[1].spec.template.spec.containers[0].env[0].value: must be a string (in Deployment/b)',
    );
    const h = await hubRefusal([
      {
        kind: 'Workload',
        metadata: { name: 'bad' },
        spec: { manifests: [{ apiVersion: 'apps/v1', kind: 'Pod', metadata: { name: 'a' }, spec: {} }] },
      },
    ]);
    expect(h.details).toEqual([
      { index: 0, path: 'spec.manifests[0].apiVersion', message: 'must be v1 for kind Pod (got apps/v1) (in Pod/a)' },
    ]);
  });

  it('warns about kinds a driver cannot run, naming the edges that would get them', async () => {
    const f = write(
      'ingress.yaml',
      `kind: Workload
metadata: { name: web }
spec:
  manifests:
    - ${POD}
    - apiVersion: networking.k8s.io/v1
      kind: Ingress
      metadata: { name: web }
      spec: { rules: [{ host: shop.example }] }
---
kind: Placement
metadata: { name: shops }
spec:
  edgeSelector: { matchLabels: { site: shop } }
  workloads: [web]
`,
    );
    const r = await cli(['apply', '-f', f]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      'workload/web created\nplacement/shops created\n' +
        '  rollout: 1 edge at a time of 3 (maxUnavailable 25%, the default); pauses after 1 failure\n',
    );
    expect(r.stderr).toBe(
      'warning: workload web (placement shops): the process driver cannot run Ingress; edges e-proc-1, e-proc-2 would report it as failed: place it on edges with a driver that runs it (kubernetes runs every kind)\n',
    );
  });
});

describe('sizes are checked before parsing, naming the object', () => {
  const bigWorkload = (name: string, mb: number) =>
    `kind: Workload\nmetadata:\n  name: ${name}\nspec:\n  manifests:\n    - apiVersion: v1\n      kind: ConfigMap\n      metadata: { name: data }\n      data:\n        blob: "${'x'.repeat(mb * 1024 * 1024)}"\n`;

  it('the CLI refuses a file with a 6 MB object, naming its document and the object, and sends nothing', async () => {
    const f = write('big.yaml', `${PLACEMENT_OK}---\n${bigWorkload('big', 6)}`);
    const r = await cli(['apply', '-f', f]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error: nothing was applied:\n  ${f}, document 2 (line 7) (Workload big) is 6.0 MiB, over the 1.0 MiB limit for one object: keep large data out of manifests: build it into the image, or upload it with \`outpost blob push\` (docs/bytes.md)\n`,
    );
    expect((await cli(['get', 'pl', 'small'])).code).toBe(1);
  });

  it('the hub refuses an object over the limit by name, in JSON and before parsing YAML', async () => {
    const big = {
      kind: 'Workload',
      metadata: { name: 'big' },
      spec: {
        manifests: [
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'd' }, data: { b: 'x'.repeat(1.5 * 1024 * 1024) } },
        ],
      },
    };
    const h = await hubRefusal([big]);
    expect(h.details).toEqual([
      {
        index: 0,
        path: '',
        message: expect.stringMatching(/^Workload big is 1\.5 MiB, over the 1\.0 MiB limit for one object: keep large/),
      },
    ]);
    const put = await api
      .request('PUT', '/api/v1/projects/default/workloads/big', { body: big })
      .then(() => undefined)
      .catch((e: HubError) => e);
    expect(put?.status).toBe(413);
    expect(put?.message).toMatch(/^Workload big is 1\.5 MiB, over the 1\.0 MiB limit/);
    const yaml = await fetchYaml(`${PLACEMENT_OK}---\n${bigWorkload('big', 2)}`);
    expect(yaml.status).toBe(413);
    expect(yaml.body.error.message).toMatch(
      /^document 2 \(line 7, Workload big\) is 2\.0 MiB, over the 1\.0 MiB limit/,
    );
  });
});

const PLACEMENT_OK = 'kind: Placement\nmetadata: { name: small }\nspec:\n  edges: [e-kube]\n  workloads: [web]\n';

/** POST /api/v1/apply with a YAML body, over the hub's TLS with its CA. */
async function fetchYaml(text: string): Promise<{ status: number; body: { error: { message: string } } }> {
  const https = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${hub.url}/api/v1/apply`,
      {
        method: 'POST',
        ca: hub.caPem,
        headers: { authorization: `Bearer ${hub.adminToken}`, 'content-type': 'application/yaml' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }),
        );
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

describe('smaller defects a new operator met', () => {
  it('PATCH merges a JSON merge patch into the object (it answered 404 "no route")', async () => {
    const f = write(
      'pl-patch.yaml',
      `kind: Workload\nmetadata: { name: solo }\nspec:\n  manifests:\n    - ${POD}\n---\nkind: Placement\nmetadata: { name: patchme }\nspec:\n  edges: [e-kube]\n  workloads: [solo]\n`,
    );
    const a = await cli(['apply', '-f', f]);
    expect(a.stderr).toBe('');
    const patched = await api.request<{ spec: { rollout: { paused: boolean; failureThreshold: number } } }>(
      'PATCH',
      '/api/v1/projects/default/placements/patchme',
      { body: { spec: { rollout: { failureThreshold: 3 } }, metadata: { labels: { tier: 'gold' } } } },
    );
    expect(patched.spec.rollout).toMatchObject({ failureThreshold: 3, paused: false });
    const g = await cli(['get', 'pl', 'patchme', '-o', 'json']);
    expect(JSON.parse(g.stdout).metadata.labels).toEqual({ tier: 'gold' });
    const typo = await api
      .request('PATCH', '/api/v1/projects/default/placements/patchme', {
        body: { spec: { rollout: { pasued: true } } },
      })
      .catch((e: HubError) => e);
    expect((typo as HubError).message).toMatch(/spec\.rollout: unknown field pasued; did you mean paused\?/);
  });

  it("`get edges -l 'region=='` is refused as a bad selector", async () => {
    const r = await cli(['get', 'edges', '-l', 'region==']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/invalid selector term "region==": nothing after "=="; write region==VALUE/);
  });

  it('rollout status says the phase once, and a conflict gives its advice once', async () => {
    expect((await cli(['rollout', 'pause', 'pl', 'patchme'])).code).toBe(0);
    const st = await cli(['rollout', 'status', 'pl', 'patchme']);
    expect(st.code).toBe(1);
    expect(st.stderr).toMatch(/^error: rollout of placement\/patchme paused by user; /);
    const stale = write(
      'stale.yaml',
      'kind: Placement\nmetadata: { name: patchme, resourceVersion: "1" }\nspec:\n  edges: [e-kube]\n  workloads: [solo]\n',
    );
    const r = await cli(['apply', '-f', stale]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/was changed by someone else \(resourceVersion 1 is stale, current is \d+\)/);
    expect(r.stderr.match(/retry/g)).toHaveLength(1);
  });
});
