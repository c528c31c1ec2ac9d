/**
 * Issue 20, test 3: DataObjects delivered to the edges a selector picks (real hub and edge
 * processes, the CLI, one edge's link cut by a proxy). v1 then v2 to region=eu with one of two
 * edges offline: `delivered 1/2`, then 2/2 after reconnect; a reader on the edge never sees a
 * half-written file; an activation time is honoured on the edge; expiry and deletion remove the
 * file; a workload reads the objects directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OBJECTS_MOUNT_ANNOTATION } from '../core/delivery.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { edgeLocal, edgeLocalMetric } from './fixtures/edge-local.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, CuttableProxy, freePort, startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

const MiB = 1024 * 1024;
const SIZE = 8 * MiB;

let dir: string;
let pids: string;
let hub: HubProc;
let env: Record<string, string>;
const edges: Proc[] = [];
let proxy: CuttableProxy;

const edgeDir = (e: string) => path.join(dir, e);
const objectFile = (e: string, p: string) => path.join(edgeDir(e), 'data', 'objects', ...p.split('/'));

/** A file of SIZE bytes all `ch`: a mix of two versions is easy to see. */
function versionFile(ch: string): string {
  const f = path.join(dir, `payload-${ch}.bin`);
  fs.writeFileSync(f, Buffer.alloc(SIZE, ch));
  return f;
}

/** Which version a file on an edge holds: its one character, `mixed`, `short`, or undefined when absent. */
function holds(file: string): string | undefined {
  let b: Buffer;
  try {
    b = fs.readFileSync(file);
  } catch {
    return undefined;
  }
  if (b.length !== SIZE) return `short (${b.length} bytes)`;
  const first = b[0]!;
  return b.every((x) => x === first) ? String.fromCharCode(first) : 'mixed';
}

async function publish(...args: string[]): Promise<string> {
  const r = await cli(['data', 'publish', ...args], env);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

async function status(
  name: string,
): Promise<{ summary: string; edges: { edge: string; state: string; version?: string }[] }> {
  const r = await cli(['get', 'dataobject', name, '-o', 'json'], env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).status;
}

/** What the edge itself reports about one object (`outpost edge local status`). */
async function reported(
  edge: string,
  name: string,
): Promise<{ state: string; version: string; at: number } | undefined> {
  return ((await edgeLocal(edgeDir(edge), '/status')).data ?? {})[name];
}

beforeAll(async () => {
  dir = tempDir('outpost-data-delivery-');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  const port = await freePort();
  hub = await startHubProc(path.join(dir, 'hub'), port, ['--insecure-http']);
  proxy = new CuttableProxy(port);
  await proxy.listen();
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  expect((await cli(['login', '--hub', hub.url, '--token', hub.token], env)).code).toBe(0);
  for (const [name, region, via] of [
    ['e1', 'eu', hub.url],
    ['e2', 'eu', `http://127.0.0.1:${proxy.port}`],
    ['e3', 'us', hub.url],
  ] as const) {
    const join = await hubApi(hub, 'POST', '/api/v1/tokens/join', { labels: { region } });
    edges.push(
      await startEdgeProc(edgeDir(name), [
        '--hub',
        via,
        '--join-token',
        join.json.token,
        '--name',
        name,
        '--driver',
        'process',
      ]),
    );
  }
  await waitFor(
    async () => {
      const r = await cli(['get', 'edges', '-o', 'json'], env);
      const items = JSON.parse(r.stdout).items as { status?: { phase?: string } }[];
      return items.length === 3 && items.every((e) => e.status?.phase === 'Online');
    },
    { timeout: 60_000, what: 'three edges online' },
  );
}, 90_000);

afterAll(async () => {
  for (const e of edges) await e.kill('SIGTERM').catch(() => undefined);
  await hub?.proc.kill('SIGTERM').catch(() => undefined);
  await proxy?.close();
  killHostWorkloads(pids);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('DataObjects delivered to selected edges (real processes)', () => {
  it('v1 then v2 with one edge offline: 1/2, then 2/2 after reconnect; never half-written', async () => {
    proxy.sever();
    expect(
      await publish('-f', versionFile('a'), '--name', 'model', '-l', 'region=eu', '--path', 'models/m.bin'),
    ).toMatch(/dataobject\/model v1 created/);
    const e1File = objectFile('e1', 'models/m.bin');
    await waitFor(() => holds(e1File) === 'a', { timeout: 30_000, what: 'v1 on e1' });
    await waitFor(async () => (await status('model')).summary === 'delivered 1/2', { what: 'delivered 1/2' });
    const s1 = await status('model');
    expect(s1.edges.map((e) => e.edge)).toEqual(['e1', 'e2']); // e3 is region=us
    expect(s1.edges.find((e) => e.edge === 'e2')!.state).toBe('Pending');
    expect(fs.existsSync(objectFile('e3', 'models/m.bin'))).toBe(false);

    // A reader on e1 while v2 replaces v1: every read sees one whole version, and a reader that
    // opened v1 before reads v1 to its end (the new version is a new file renamed into place).
    const openedBefore = fs.openSync(e1File, 'r');
    const seen: string[] = [];
    let reading = true;
    const reader = (async () => {
      while (reading) {
        seen.push(holds(e1File) ?? 'absent');
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    expect(
      await publish('-f', versionFile('b'), '--name', 'model', '-l', 'region=eu', '--path', 'models/m.bin'),
    ).toMatch(/dataobject\/model v2 configured/);
    await waitFor(() => holds(e1File) === 'b', { timeout: 30_000, what: 'v2 on e1' });
    await new Promise((r) => setTimeout(r, 100));
    reading = false;
    await reader;
    expect(new Set(seen)).toEqual(new Set(['a', 'b']));
    expect(seen.indexOf('b')).toBeGreaterThan(0);
    expect(seen.lastIndexOf('a')).toBeLessThan(seen.indexOf('b'));
    const old = Buffer.alloc(SIZE + 1);
    const n = fs.readSync(openedBefore, old, 0, SIZE + 1, 0);
    fs.closeSync(openedBefore);
    expect(n).toBe(SIZE);
    expect(old.subarray(0, n).every((x) => x === 'a'.charCodeAt(0))).toBe(true);
    await waitFor(async () => (await status('model')).summary === 'delivered 1/2', { what: 'still 1/2 at v2' });
    // The blob served its purpose: the edge's store keeps no copy beside the file.
    await waitFor(() => fs.readdirSync(path.join(edgeDir('e1'), 'blobs', 'sha256')).length === 0, {
      what: "e1's blob store emptied",
    });

    proxy.heal();
    await waitFor(() => holds(objectFile('e2', 'models/m.bin')) === 'b', { timeout: 60_000, what: 'v2 on e2' });
    // Once per edge, and only the current version: e2 never fetched v1, and v2 crossed its link once.
    expect(await edgeLocalMetric(edgeDir('e2'), 'outpost_edge_transfer_bytes{direction="down"}')).toBe(SIZE);
    await waitFor(async () => (await status('model')).summary === 'delivered 2/2', { what: 'delivered 2/2' });
    const s2 = await status('model');
    expect(s2.edges.every((e) => e.state === 'Delivered' && e.version === 'v2')).toBe(true);
    const d = await cli(['describe', 'dataobject', 'model'], env);
    expect(d.stdout).toMatch(/Summary:\s+delivered 2\/2/);
    expect(d.stdout).toMatch(/e2\s+Delivered v2\s+v2\s+Online/);
  }, 180_000);

  it('honours the activation time on the edge: downloaded first, replaced at activateAt', async () => {
    const out = await publish(
      '-f',
      versionFile('c'),
      '--name',
      'model',
      '-l',
      'region=eu',
      '--path',
      'models/m.bin',
      '--activate-at',
      '+8s',
    );
    expect(out).toMatch(/v3 configured/);
    const obj = JSON.parse((await cli(['get', 'dataobject', 'model', '-o', 'json'], env)).stdout);
    const activateAt = Date.parse(obj.spec.activateAt);
    await waitFor(async () => (await status('model')).edges.find((e) => e.edge === 'e1')?.state === 'Waiting', {
      timeout: 30_000,
      what: 'v3 downloaded and Waiting on e1, as the hub shows it',
    });
    if (Date.now() < activateAt - 500) expect(holds(objectFile('e1', 'models/m.bin'))).toBe('b');
    await waitFor(() => holds(objectFile('e1', 'models/m.bin')) === 'c', { timeout: 40_000, what: 'v3 on e1' });
    const r = await reported('e1', 'model');
    expect(r?.state).toBe('Delivered');
    expect(r!.at).toBeGreaterThanOrEqual(activateAt);
    await waitFor(async () => (await status('model')).summary === 'delivered 2/2', { what: 'v3 delivered 2/2' });
  }, 90_000);

  it('gives a workload that asks the objects directory', async () => {
    const out = path.join(dir, 'seen.txt');
    const w = hostPod(
      'reader',
      `sh -c 'echo $OUTPOST_DATA_OBJECTS_DIR > ${out}.tmp && head -c 1 $OUTPOST_DATA_OBJECTS_DIR/models/m.bin >> ${out}.tmp && mv ${out}.tmp ${out} && exec sleep 3600'`,
      {
        pidDir: pids,
      },
    );
    (w.spec.manifests[0].metadata as Record<string, unknown>).annotations = { [OBJECTS_MOUNT_ANNOTATION]: '/objects' };
    const applied = await hubApi(hub, 'POST', '/api/v1/apply', {
      objects: [w, { kind: 'Placement', metadata: { name: 'reader' }, spec: { edges: ['e1'], workloads: ['reader'] } }],
    });
    expect(applied.status, JSON.stringify(applied.json)).toBe(200);
    await waitFor(() => fs.existsSync(out), { timeout: 60_000, what: 'the reader ran' });
    expect(fs.readFileSync(out, 'utf8')).toBe(`${path.join(edgeDir('e1'), 'data', 'objects')}\nc`);
  }, 90_000);

  it('removes the file at expiry and when the object is deleted', async () => {
    await publish('-f', versionFile('d'), '--name', 'notice', '--edges', 'e1,e3', '--expires-at', '+6s');
    const f1 = objectFile('e1', 'notice');
    const f3 = objectFile('e3', 'notice');
    await waitFor(() => holds(f1) === 'd' && holds(f3) === 'd', { timeout: 30_000, what: 'notice on e1 and e3' });
    await waitFor(() => !fs.existsSync(f1) && !fs.existsSync(f3), {
      timeout: 30_000,
      what: 'notice removed at expiry',
    });
    await waitFor(async () => (await status('notice')).summary === 'expired (2/2 removed)', {
      what: 'expired on both',
    });

    const del = await cli(['delete', 'dataobject', 'model'], env);
    expect(del.code, del.stderr).toBe(0);
    await waitFor(
      () => !fs.existsSync(objectFile('e1', 'models/m.bin')) && !fs.existsSync(objectFile('e2', 'models/m.bin')),
      { timeout: 30_000, what: 'model removed from e1 and e2' },
    );
    await waitFor(async () => (await reported('e1', 'model')) === undefined, { what: "e1's report forgets model" });
  }, 90_000);

  it('refuses bad input with the problem and the fix', async () => {
    const missing = await hubApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        {
          kind: 'DataObject',
          metadata: { name: 'ghost' },
          spec: { version: 'v1', digest: `sha256:${'0'.repeat(64)}`, size: 3, edgeSelector: {} },
        },
      ],
    });
    expect(missing.status).toBe(422);
    expect(JSON.stringify(missing.json)).toMatch(
      /not in project default's blob store: upload the file with `outpost data publish/,
    );
    const badPath = await cli(
      ['data', 'publish', '-f', versionFile('e'), '--name', 'x', '--path', '../etc/passwd'],
      env,
    );
    expect(badPath.code).toBe(2);
    expect(badPath.stderr).toMatch(/invalid path "..\/etc\/passwd"/);
    const badTime = await cli(
      ['data', 'publish', '-f', versionFile('e'), '--name', 'x', '--activate-at', 'tomorrow'],
      env,
    );
    expect(badTime.code).toBe(2);
    expect(badTime.stderr).toMatch(/invalid time "tomorrow": write an ISO time/);
  }, 30_000);
});
