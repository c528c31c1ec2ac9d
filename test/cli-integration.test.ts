/**
 * The CLI against a real hub (startHub in-process, TLS with its own CA, real SQLite) and a real
 * edge replica syncing over the real WebSocket: login with the pinned CA, tokens, enrollment,
 * apply, get, describe, rollout, edge administration, roles.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeName, mailboxDocId } from '../core/ids.js';
import { putReportWorkload, readSpec, type ReportDoc, type SpecDoc } from '../core/mailbox.js';
import { SyncClient } from '../sync/client.js';
import { ReplicaStore } from '../sync/store.js';
import { tempDir, waitFor } from './helpers.js';
import { startHub, type Hub } from '../hub/hub.js';
import { HubClient } from '../cli/client.js';
import { runCli } from './fixtures/cli.js';
import { hubDatabaseOption } from './fixtures/backend.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
const clients: SyncClient[] = [];
const stores: ReplicaStore[] = [];

const cli = (args: string[], opts: Parameters<typeof runCli>[1] = {}) => runCli(args, { env, ...opts });

/** A real replica that reports every workload it is given as Ready (or Failed for images named "broken"). */
async function startEdge(name: string, joinToken: string) {
  // Enrollment is what the edge agent does; the CLI's client speaks TLS with the pinned CA.
  const enroll = new HubClient({ hub: hub.url, token: 'none', ca: hub.caPem });
  const enrolled = await enroll.post<{ credential: string }>('/api/v1/enroll', { joinToken, name });
  const store = await ReplicaStore.open(path.join(dir, `${name}.db`), {
    afterChange: (id, origin) => {
      client.notify(id);
      if (origin === 'remote' && id.endsWith('/spec')) {
        const spec = readSpec(store.get<SpecDoc>(id)!);
        store.change<ReportDoc>(mailboxDocId(edgeName(name), 'report'), (d) => {
          for (const w of Object.values(spec.workloads)) {
            const broken = JSON.stringify(w.manifests).includes('broken');
            putReportWorkload(d, w.name, {
              observedGeneration: w.generation,
              phase: broken ? 'Failed' : 'Ready',
              ...(broken ? { message: 'image pull failed: broken:1 not found' } : {}),
              restarts: 0,
              objects: { [`Pod/${w.name}`]: broken ? { ready: false, message: 'image pull failed' } : { ready: true } },
            });
          }
        });
      }
    },
  });
  const client: SyncClient = new SyncClient({
    url: hub.url.replace(/^http/, 'ws') + '/api/v1/sync',
    token: enrolled.credential,
    edge: edgeName(name),
    store,
    agentVersion: 'test',
    heartbeatMs: 200,
    ca: hub.caPem,
  });
  client.start();
  clients.push(client);
  stores.push(store);
}

const manifests = (image: string) => `kind: Workload
metadata: { name: web }
spec:
  manifests:
    - apiVersion: v1
      kind: Pod
      metadata: { name: web }
      spec: { containers: [{ name: main, image: "${image}" }] }
`;
const PLACEMENT =
  'kind: Placement\nmetadata: { name: eu }\nspec:\n  edgeSelector: { matchLabels: { region: eu } }\n  workloads: [web]\n';

beforeAll(async () => {
  dir = tempDir('outpost-cli-hub-');
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0', ...(await hubDatabaseOption()) });
  env = { OUTPOST_CONFIG: path.join(dir, 'cli', 'config.json') };
});

afterAll(async () => {
  for (const c of clients) await c.stop();
  for (const s of stores) s.close();
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the CLI against a real hub', () => {
  it('logs in with the admin token, pinning the CA from it', async () => {
    expect(hub.url).toMatch(/^https:/);
    const r = await cli(['login', '--hub', hub.url, '--token', hub.adminToken]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^logged in to https:\/\/127\.0\.0\.1:\d+ as admin \(all projects\)/);
    expect(JSON.parse(fs.readFileSync(env.OUTPOST_CONFIG!, 'utf8')).ca).toBe(hub.caPem);
  });

  it('creates a join token an edge enrolls with, and lists the edge', async () => {
    const t = await cli(['token', 'create', '--labels', 'region=eu', '--uses', '2', '--ttl', '1h']);
    expect(t.code).toBe(0);
    const token = t.stdout.trim();
    expect(token).toMatch(new RegExp(`^opj1\\.${hub.caFingerprint}\\.`));
    await startEdge('shop-1', token);
    const g = await waitFor(
      async () => {
        const r = await cli(['get', 'edges', '-o', 'wide']);
        return /shop-1\s+Online/.test(r.stdout) ? r : null;
      },
      { what: 'shop-1 Online' },
    );
    expect(g.stdout.split('\n')[0]).toMatch(/^NAME\s+STATE\s+READY\s+LAST-SEEN\s+LABELS\s+AGENT\s+RUNTIME\s+PROJECT$/);
    expect(g.stdout).toMatch(/shop-1\s+Online\s+0\/0\s+\S+\s+region=eu\s+test\s+-\s+default/);
  });

  it('applies a directory and reaches READY 1/1; the rollout completes', async () => {
    const d = path.join(dir, 'app');
    fs.mkdirSync(d);
    fs.writeFileSync(path.join(d, 'a-web.yaml'), manifests('busybox:1'));
    fs.writeFileSync(path.join(d, 'b-placement.yaml'), PLACEMENT);
    const r = await cli(['apply', '-f', d]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(
      'workload/web created\nplacement/eu created\n' +
        '  rollout: 1 edge at a time of 1 (maxUnavailable 25%, the default); pauses after 1 failure\n',
    );
    expect((await cli(['apply', '-f', d])).stdout).toBe('workload/web unchanged\nplacement/eu unchanged\n');
    const w = await cli(['rollout', 'status', 'placement', 'eu', '--watch', '--timeout', '30s']);
    expect(w.stderr).toBe('');
    expect(w.code).toBe(0);
    expect(w.stdout.trim().split('\n').pop()).toMatch(/^1\/1 edge updated, 1 ready, 0 failed: /);
    const g = await cli(['get', 'pl']);
    expect(g.stdout).toMatch(
      /^NAME\s+READY\s+WORST\s+ROLLOUT\s+EDGES\s+AGE\neu\s+1\/1\s+Ready\s+Complete\s+1\s+\S+\n$/,
    );
    expect((await cli(['get', 'wl', 'web'])).stdout).toMatch(/web\s+1\s+1\/1\s+1\s/);
  });

  it('a failing new revision: watch exits 1 with the reason, describe shows the broken edge, undo restores it', async () => {
    const f = path.join(dir, 'broken.yaml');
    fs.writeFileSync(f, manifests('broken:1'));
    expect((await cli(['apply', '-f', f])).stdout).toBe('workload/web configured\n');
    const w = await cli(['rollout', 'status', 'pl', 'eu', '-w', '--timeout', '30s']);
    expect(w.code).toBe(1);
    expect(w.stderr).toMatch(/^error: rollout of placement\/eu (paused|failed): /);
    const d = await cli(['describe', 'placement', 'eu']);
    expect(d.stdout).toMatch(/shop-1\s+web\s+Pod\/web\s+image pull failed: broken:1 not found/);
    const h = await cli(['rollout', 'history', 'workload', 'web']);
    expect(h.stdout).toMatch(
      /^REVISION\s+AGE\s+MANIFESTS\s+CHANGE-CAUSE\n1\s+\S+\s+Pod\/web\s+applied by admin token \S+\n2 \(current\)\s+\S+\s+Pod\/web\s+applied by admin token \S+\n$/,
    );
    const u = await cli(['rollout', 'undo', 'wl', 'web']);
    expect(u.stdout).toBe('workload/web rolled back to the previous revision (now revision 3)\n');
    // The planner paused on the failure; resuming accepts it and lets the rollback through.
    expect((await cli(['rollout', 'resume', 'pl', 'eu'])).stdout).toBe('placement/eu resumed\n');
    const again = await cli(['rollout', 'status', 'pl', 'eu', '--watch', '--timeout', '30s']);
    expect(again.code).toBe(0);
  });

  it('describe edge shows state, workloads and events', async () => {
    const d = await cli(['describe', 'edge', 'shop-1']);
    expect(d.code).toBe(0);
    expect(d.stdout).toMatch(/State:\s+Online/);
    expect(d.stdout).toMatch(/web\s+eu\s+Ready\s+\d+\s+\d+\s+0/);
    expect(d.stdout).toMatch(/Local intents made on site:\n  <none>/);
    expect(d.stdout).toMatch(/Enrolled\s+edge shop-1 enrolled/);
  });

  it('edge label, drain, uncordon change what the hub shows', async () => {
    expect((await cli(['edge', 'label', 'shop-1', 'tier=small', 'region-'])).stdout).toBe('edge/shop-1 labeled\n');
    expect((await cli(['get', 'edges', '-l', 'tier=small'])).stdout).toMatch(
      /shop-1\s+Online\S*\s+\S+\s+\S+\s+tier=small\n/,
    );
    expect((await cli(['get', 'edges', '-l', 'region=eu'])).stderr).toBe(
      'No edges found in project default matching region=eu.\n',
    );
    expect((await cli(['edge', 'drain', 'shop-1'])).stdout).toBe('edge/shop-1 drained\n');
    expect((await cli(['get', 'edge', 'shop-1'])).stdout).toMatch(/shop-1\s+Online,Drained/);
    expect((await cli(['edge', 'uncordon', 'shop-1'])).stdout).toBe('edge/shop-1 uncordoned\n');
  });

  it('a viewer token may read but not change; the error says what token is needed', async () => {
    const t = await cli(['token', 'create', '--api', '--role', 'viewer']);
    const viewerEnv = { OUTPOST_CONFIG: path.join(dir, 'viewer', 'config.json') };
    const l = await runCli(['login', '--hub', hub.url, '--token', t.stdout.trim()], { env: viewerEnv });
    expect(l.stdout).toMatch(/as viewer \(project default\)/);
    expect((await runCli(['get', 'pl'], { env: viewerEnv })).code).toBe(0);
    expect((await runCli(['get', 'pl', '-A'], { env: viewerEnv })).stderr).toMatch(
      /--all-projects needs a token for all projects/,
    );
    const del = await runCli(['delete', 'placement', 'eu'], { env: viewerEnv });
    expect(del.code).toBe(1);
    expect(del.stderr).toMatch(/^error: a viewer token may not change objects in project default/);
  });

  it('not found and unknown names say so with exit 1', async () => {
    const r = await cli(['describe', 'workload', 'nope']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /Workload nope not found in project default: check the name and project \(--project\), or list them with `outpost get workloads`/,
    );
  });

  it('delete and decommission', async () => {
    expect((await cli(['delete', 'placement/eu'])).stdout).toBe('placement/eu deleted\n');
    expect((await cli(['edge', 'decommission', 'shop-1', '--yes'])).stdout).toBe('edge/shop-1 decommissioned\n');
    expect((await cli(['get', 'edges'])).stderr).toBe('No edges found in project default.\n');
  });
});
