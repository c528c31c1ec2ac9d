/**
 * Issue 42, item 9: what a DataObject's status says while it waits and once it expired
 * (docs/data.md). An in-process hub, three in-process edge agents (process driver), the CLI
 * in-process: an object published with `--activate-at` an hour ahead is downloaded by every edge
 * and waits; its status says `downloaded 3/3, activates at T` (not `delivered 0/3`, which read as
 * stuck), in the API and in `get dataobjects`. An object past its `--expires-at` is removed from
 * the edges and `get dataobjects` says to delete it, naming the command.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataObjectStatusView } from '../core/api/views.js';
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

const EDGES = ['d1', 'd2', 'd3'];

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
const agents: EdgeAgent[] = [];

const cli = (args: string[]) => runCli(args, { env });
const status = async (name: string): Promise<DataObjectStatusView> =>
  (await adminApi(hub, 'GET', `/api/v1/projects/default/dataobjects/${name}`)).status;
const objectFile = (edge: string, p: string) => path.join(dir, edge, 'data', 'objects', p);

function payload(name: string, text: string): string {
  const f = path.join(dir, `${name}.bin`);
  fs.writeFileSync(f, text);
  return f;
}

beforeAll(async () => {
  ({ dir, hub, env } = await startInProcessHub('outpost-data-status-'));
  await startProcessAgents(hub, dir, EDGES, { region: 'eu' }, agents);
  await untilOnline(hub, agents.length);
}, 60_000);

afterAll(async () => {
  await stopInProcess({ agents, hub, dir });
});

describe('DataObject status', () => {
  it('says "downloaded 3/3, activates at T" while every edge holds the bytes and waits for activateAt', async () => {
    const at = new Date(Date.now() + 3_600_000);
    at.setUTCMilliseconds(0);
    const iso = at.toISOString().replace('.000Z', 'Z');
    const r = await cli([
      'data',
      'publish',
      '-f',
      payload('later', 'the next price list'),
      '--name',
      'later',
      '-l',
      'region=eu',
      '--activate-at',
      iso,
    ]);
    expect(r.code, r.stderr).toBe(0);
    await waitFor(async () => (await status('later')).edges.every((e) => e.state === 'Waiting'), {
      timeout: 30_000,
      what: 'the three edges to report the object downloaded and waiting',
    });
    const s = await status('later');
    expect(s.summary).toBe(`downloaded 3/3, activates at ${iso}`);
    expect(s).toMatchObject({ delivered: 0, downloaded: 3, selected: 3, activatesAt: iso });
    // Not activated: no edge has the file yet.
    for (const e of EDGES) expect(fs.existsSync(objectFile(e, 'later'))).toBe(false);
    const get = await cli(['get', 'dataobjects']);
    expect(get.code, get.stderr).toBe(0);
    expect(get.stdout).toMatch(new RegExp(`^later\\s+v1\\s+.*downloaded 3/3, activates at ${iso}`, 'm'));
    expect(get.stderr).toBe('');
  }, 60_000);

  it('`get dataobjects` says to delete an expired object, naming the command', async () => {
    const r = await cli([
      'data',
      'publish',
      '-f',
      payload('promo', 'a week of prices'),
      '--name',
      'promo',
      '-l',
      'region=eu',
      '--expires-at',
      '+4s',
    ]);
    expect(r.code, r.stderr).toBe(0);
    await waitFor(async () => (await status('promo')).expired === true, {
      timeout: 30_000,
      what: 'the object to pass its expiresAt',
    });
    await waitFor(async () => (await status('promo')).edges.every((e) => e.state === 'Expired'), {
      timeout: 30_000,
      what: 'the edges to remove the file',
    });
    expect((await status('promo')).summary).toBe('expired (3/3 removed)');
    const get = await cli(['get', 'dataobjects']);
    expect(get.code, get.stderr).toBe(0);
    expect(get.stdout).toMatch(/^promo\s+v1\s+.*expired \(3\/3 removed\)/m);
    const expiresAt = (await adminApi(hub, 'GET', '/api/v1/projects/default/dataobjects/promo')).spec.expiresAt;
    expect(get.stderr.trim()).toBe(
      `hint: dataobject/promo expired at ${expiresAt}: the edges removed its file, and it keeps its path until deleted: outpost delete dataobject promo`,
    );
    // Only for tables: a script reading -o json gets the JSON alone.
    expect((await cli(['get', 'dataobjects', '-o', 'json'])).stderr).toBe('');
    // The command it names works, and the hint goes with the object.
    expect((await cli(['delete', 'dataobject', 'promo'])).code).toBe(0);
    expect((await cli(['get', 'dataobjects'])).stderr).toBe('');
  }, 60_000);
});
