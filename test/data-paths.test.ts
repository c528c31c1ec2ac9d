/**
 * Issue 41, item 7: one path, one DataObject, per edge (docs/data.md, "One path per edge"). An
 * in-process hub, three in-process edge agents (process driver), the CLI in-process: a second
 * object at the same path, a directory of it or a path inside it is refused at apply for edges
 * both select, naming the other, and accepted for other edges; an overlap that arises later (an
 * edge relabelled) leaves the file to the object already there, the other shows the edge Blocked
 * naming it; deleting either never takes the other's bytes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import type { Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import {
  adminApi,
  startInProcessHub,
  startProcessAgents,
  stopInProcess,
  untilOnline,
} from './fixtures/in-process-fleet.js';
import { waitFor } from './helpers.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
const agents: EdgeAgent[] = [];

const cli = (args: string[]) => runCli(args, { env });
const objectFile = (edge: string, p: string) => path.join(dir, edge, 'data', 'objects', ...p.split('/'));
const read = (f: string) => (fs.existsSync(f) && fs.statSync(f).isFile() ? fs.readFileSync(f, 'utf8') : undefined);

function payload(name: string, text: string): string {
  const f = path.join(dir, `${name}.bin`);
  fs.writeFileSync(f, text);
  return f;
}

interface EdgeView {
  edge: string;
  state: string;
  reason?: string;
}
const status = async (name: string): Promise<{ summary: string; edges: EdgeView[] }> =>
  (await adminApi(hub, 'GET', `/api/v1/projects/default/dataobjects/${name}`)).status;

beforeAll(async () => {
  ({ dir, hub, env } = await startInProcessHub('outpost-data-paths-'));
  await startProcessAgents(hub, dir, ['e1', 'e2'], { region: 'eu' }, agents);
  await startProcessAgents(hub, dir, ['e3'], { region: 'us' }, agents);
  await untilOnline(hub, agents.length);
}, 60_000);

afterAll(async () => {
  await stopInProcess({ agents, hub, dir });
});

describe('one path per edge', () => {
  it('refuses at apply a second object at the same path, a directory of it or inside it, for an edge both select', async () => {
    const a = await cli([
      'data',
      'publish',
      '-f',
      payload('a', 'aaaa'),
      '--name',
      'a',
      '-l',
      'region=eu',
      '--path',
      'models/m.bin',
    ]);
    expect(a.code, a.stderr).toBe(0);
    await waitFor(
      () => read(objectFile('e1', 'models/m.bin')) === 'aaaa' && read(objectFile('e2', 'models/m.bin')) === 'aaaa',
      {
        timeout: 30_000,
        what: 'a on e1 and e2',
      },
    );

    for (const [p, words] of [
      ['models/m.bin', 'path models/m.bin is also the path of dataobject a'],
      ['models', "path models is a directory of dataobject a's path models/m.bin"],
      ['models/m.bin/x', "path models/m.bin/x is inside dataobject a's path models/m.bin, a file"],
    ] as const) {
      const r = await cli([
        'data',
        'publish',
        '-f',
        payload('b', 'bbbb'),
        '--name',
        'b',
        '--edges',
        'e2,e3',
        '--path',
        p,
      ]);
      expect(r.code, p).not.toBe(0);
      expect(r.stderr).toContain(
        `${words}: both would be delivered to edge e2; give one another path, narrow one's edgeSelector or edges, or delete dataobject a first`,
      );
    }
    // The object API refuses it too (a PUT, as `kubectl apply` of one object does), and nothing was kept.
    const digest = JSON.parse((await cli(['get', 'dataobject', 'a', '-o', 'json'])).stdout).spec.digest;
    const put = await fetch(`${hub.url}/api/v1/projects/default/dataobjects/b`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${hub.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        kind: 'DataObject',
        metadata: { name: 'b' },
        spec: { version: 'v1', digest, size: 4, path: 'models/m.bin', edges: ['e1'] },
      }),
    });
    expect(put.status).toBe(409);
    expect(((await put.json()) as { error: { message: string } }).error.message).toMatch(/dataobject a/);
    expect((await cli(['get', 'dataobject', 'b'])).code).not.toBe(0);
    expect(read(objectFile('e2', 'models/m.bin'))).toBe('aaaa');
  }, 60_000);

  it('accepts the same path for edges the other does not select', async () => {
    const r = await cli([
      'data',
      'publish',
      '-f',
      payload('b', 'bbbb'),
      '--name',
      'b',
      '--edges',
      'e3',
      '--path',
      'models/m.bin',
    ]);
    expect(r.code, r.stderr).toBe(0);
    await waitFor(() => read(objectFile('e3', 'models/m.bin')) === 'bbbb', { timeout: 30_000, what: 'b on e3' });
    await waitFor(async () => (await status('b')).summary === 'delivered 1/1', { what: 'b delivered 1/1' });
    expect(read(objectFile('e1', 'models/m.bin'))).toBe('aaaa');
  }, 60_000);

  it('an overlap that arises later: the object already there keeps the path, the other shows the edge Blocked naming it', async () => {
    const l = await cli(['edge', 'label', 'e3', 'region=eu']);
    expect(l.code, l.stderr).toBe(0);
    // a now selects e3, where b holds models/m.bin.
    const blocked = await waitFor(
      async () => {
        const s = await status('a');
        return s.edges.find((e) => e.edge === 'e3')?.state === 'Blocked' ? s : null;
      },
      { timeout: 30_000, what: 'a blocked on e3' },
    );
    expect(blocked.summary).toBe('delivered 2/3, 1 blocked');
    expect(blocked.edges.find((e) => e.edge === 'e3')!.reason).toBe(
      "path models/m.bin is also the path of dataobject b, which holds it on this edge: give one another path, narrow one's edgeSelector or edges, or delete dataobject b",
    );
    // The hub says so in an event, and the file stays b's.
    await waitFor(
      async () => {
        const r = await cli(['get', 'events', '--for', 'dataobject/a']);
        return /Blocked\s+not delivered to e3: path models\/m.bin is also the path of dataobject b/.test(r.stdout);
      },
      { what: 'a Blocked event' },
    );
    expect(read(objectFile('e3', 'models/m.bin'))).toBe('bbbb');
    expect((await status('b')).summary).toBe('delivered 1/1');
    const d = await cli(['describe', 'dataobject', 'a']);
    expect(d.stdout).toMatch(/e3\s+Blocked: path models\/m.bin is also the path of dataobject b/);
  }, 60_000);

  it("deleting the blocked object leaves the holder's bytes; deleting the holder removes them", async () => {
    expect((await cli(['delete', 'dataobject', 'a'])).code).toBe(0);
    await waitFor(
      () =>
        read(objectFile('e1', 'models/m.bin')) === undefined && read(objectFile('e2', 'models/m.bin')) === undefined,
      {
        timeout: 30_000,
        what: "a's files gone from e1 and e2",
      },
    );
    // e2's directory `models` went with its last file.
    expect(fs.existsSync(objectFile('e2', 'models'))).toBe(false);
    expect(read(objectFile('e3', 'models/m.bin'))).toBe('bbbb');
    expect((await status('b')).summary).toBe('delivered 1/1');
    expect((await cli(['delete', 'dataobject', 'b'])).code).toBe(0);
    await waitFor(() => !fs.existsSync(objectFile('e3', 'models/m.bin')), { timeout: 30_000, what: "b's file gone" });
  }, 60_000);
});
