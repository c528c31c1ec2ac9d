/**
 * Interconnect with several serving edges and edges that go away (docs/interconnect.md), with real
 * processes: one in-process hub, a consuming agent `fo-a` in region east, and two agents serving
 * the export, `fo-b` in region east and `fo-c` in region west (process driver). Both run the echo
 * workload; on one host only one of them can hold its port, so the other waits for it (the port is
 * the same bytes either way: which edge the hub chose is read from the export's status).
 *
 * - Locality: with both healthy, fo-a's connections go to fo-b (its region).
 * - Failover: fo-b's agent goes away; the connection open through it is reset at once, and the
 *   next connections go to fo-c.
 * - Decommission: fo-c is decommissioned with a connection open through it; the client's
 *   connection is reset at once.
 * - Offline consumer: fo-a loses the hub; a connect there is reset at once (never a hang), the
 *   import's status says fo-a is offline and refusing, and once back, fo-a's own report says why
 *   its connection was refused.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import type { Hub } from '../hub/hub.js';
import { adminApi, startInProcessHub, startProcessAgents, stopInProcess } from './fixtures/in-process-fleet.js';
import { runCli } from './fixtures/cli.js';
import { waitFor } from './helpers.js';
import { freePort } from './ports.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
const agents: EdgeAgent[] = [];
let echoPort: number;
let importPort: number;

const apply = (objects: unknown[]) => adminApi(hub, 'POST', '/api/v1/apply', { objects });
const meta = (name: string) => ({ name, project: 'default' });
const importStatus = async () => (await adminApi(hub, 'GET', '/api/v1/projects/default/serviceimports/echo')).status;
const exportStatus = async () => (await adminApi(hub, 'GET', '/api/v1/projects/default/serviceexports/echo')).status;
const servedBy = async (edge: string): Promise<number> =>
  (await exportStatus()).serving.find((e: any) => e.edge === edge)?.total ?? 0;
const agent = (name: string) => agents.find((a) => a.config.name === name)!;

/** An echo server that waits for its port while another process holds it. */
const ECHO = (port: number) => `
const net = require('net');
const listen = () => {
  const srv = net.createServer({ allowHalfOpen: true }, (s) => { s.on('error', () => undefined); s.pipe(s); });
  srv.once('error', () => setTimeout(listen, 100));
  srv.listen(${port}, '127.0.0.1');
};
listen();`;

/** A connection through the import that stays open: `say` echoes a line, `closed` is how it ended. */
async function open(): Promise<{
  say(t: string): Promise<string>;
  end(): void;
  closed: Promise<string | undefined>;
}> {
  const sock = net.connect({ host: '127.0.0.1', port: importPort, allowHalfOpen: true });
  let code: string | undefined;
  sock.on('error', (e: NodeJS.ErrnoException) => (code = e.code ?? e.message));
  const closed = new Promise<string | undefined>((resolve) => sock.once('close', () => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', resolve);
    sock.once('error', reject);
  });
  return {
    say: (t) =>
      new Promise((resolve, reject) => {
        sock.once('data', (c) => resolve(c.toString()));
        sock.once('close', () => reject(new Error(`closed (${code ?? 'clean'}) before the echo`)));
        sock.write(t);
      }),
    end: () => sock.end(),
    closed,
  };
}

/** One request/response connection: what came back (it throws if the connection closed first). */
async function once(t: string): Promise<string> {
  const c = await open();
  const got = await c.say(t);
  c.end();
  expect(await c.closed).toBeUndefined();
  return got;
}

beforeAll(async () => {
  ({ dir, hub, env } = await startInProcessHub('outpost-interconnect-failover-'));
  [echoPort, importPort] = [await freePort(), await freePort()];
  await startProcessAgents(hub, dir, ['fo-a'], { role: 'consumer', region: 'east' }, agents);
  await startProcessAgents(hub, dir, ['fo-b'], { role: 'server', region: 'east' }, agents);
  await startProcessAgents(hub, dir, ['fo-c'], { role: 'server', region: 'west' }, agents);
  await apply([
    {
      kind: 'Workload',
      metadata: meta('echo'),
      spec: {
        manifests: [
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'echo' },
            spec: {
              containers: [
                {
                  name: 'echo',
                  command: [process.execPath, '-e', ECHO(echoPort)],
                  // No readiness probe: the process driver's would see the other edge's process
                  // on the port and say not ready, on one host.
                  ports: [{ containerPort: echoPort }],
                },
              ],
            },
          },
        ],
      },
    },
    {
      kind: 'Placement',
      metadata: meta('echo'),
      spec: { edgeSelector: { matchLabels: { role: 'server' } }, workloads: ['echo'] },
    },
    { kind: 'ServiceExport', metadata: meta('echo'), spec: { workload: 'echo', port: echoPort } },
    { kind: 'ServiceImport', metadata: meta('echo'), spec: { export: 'echo', port: importPort, edges: ['fo-a'] } },
  ]);
  await waitFor(async () => (await exportStatus())?.healthy === 2, {
    what: 'the echo workload Ready on fo-b and fo-c',
    timeout: 60_000,
  });
  await waitFor(async () => (await importStatus())?.listening === 1, { what: 'fo-a listening', timeout: 30_000 });
  // The first server up holds the port (a connect before it is refused by the serving edge).
  await waitFor(() => once('warm').then((r) => r === 'warm'), { what: 'an echo through the hub', timeout: 30_000 });
}, 120_000);

afterAll(async () => {
  await stopInProcess({ agents, hub, dir });
});

describe('interconnect: several serving edges, failover, edges that go away', () => {
  it("sends connections to the serving edge in the consumer's region while it is healthy", async () => {
    const [b, c] = [await servedBy('fo-b'), await servedBy('fo-c')];
    for (let i = 0; i < 3; i++) expect(await once(`ping ${i}`)).toBe(`ping ${i}`);
    expect(await servedBy('fo-b')).toBe(b + 3);
    expect(await servedBy('fo-c')).toBe(c);

    const exp = await runCli(['describe', 'serviceexport', 'echo'], { env });
    expect(exp.stdout).toMatch(new RegExp(`\n +fo-b +yes +Ready +yes +0 +${b + 3} +0 `));
    expect(exp.stdout).toMatch(new RegExp(`\n +fo-c +yes +Ready +yes +0 +${c} +0 `));
    await waitFor(async () => (await importStatus()).connectP99Ms !== undefined, {
      what: "fo-a's report with its connect latency",
      timeout: 15_000,
    });
    const imp = await runCli(['describe', 'svci', 'echo'], { env });
    expect(imp.stdout).toMatch(/Connect latency: +p50 \d+ms, p99 \d+ms/);
    expect(imp.stdout).toMatch(/\n +fo-a +yes +yes +\d+ +\d+ +0 +0 /);
  });

  it('fails over to the other serving edge when one goes away; a connection open through it is reset', async () => {
    const [b, c] = [await servedBy('fo-b'), await servedBy('fo-c')];
    const held = await open();
    expect(await held.say('held')).toBe('held');
    expect(await servedBy('fo-b')).toBe(b + 1);
    await agent('fo-b').sync.stop('test: the serving edge goes away');
    expect(await held.closed).toBe('ECONNRESET');
    // At once: the hub need not have marked fo-b offline yet (the relay tries it and moves on).
    for (let i = 0; i < 3; i++) expect(await once(`again ${i}`)).toBe(`again ${i}`);
    expect(await servedBy('fo-c')).toBe(c + 3);
    const edge = await waitFor(
      async () => {
        const e = (await importStatus()).edges[0];
        return e.failed >= 1 ? e : undefined;
      },
      { what: "the reset in fo-a's report", timeout: 15_000 },
    );
    expect(edge.lastError).toMatch(/fo-b/);
  });

  it("closes a decommissioned serving edge's connections at once", async () => {
    const c = await servedBy('fo-c');
    const held = await open();
    expect(await held.say('before')).toBe('before');
    expect(await servedBy('fo-c')).toBe(c + 1);
    await adminApi(hub, 'POST', '/api/v1/projects/default/edges/fo-c/decommission');
    expect(await held.closed).toBe('ECONNRESET');
  });

  it("refuses at once on a consuming edge that lost the hub, and the import's status says why", async () => {
    const a = agent('fo-a');
    await a.sync.stop('test: the site loses the hub');
    const c = net.connect({ host: '127.0.0.1', port: importPort });
    const code = await new Promise<string | undefined>((resolve) => {
      let e: string | undefined;
      c.on('error', (err: NodeJS.ErrnoException) => (e = err.code));
      c.once('close', () => resolve(e));
    });
    expect(code).toBe('ECONNRESET');
    const offline = await waitFor(
      async () => {
        const e = (await importStatus()).edges[0];
        return e.online ? undefined : e;
      },
      { what: 'the hub to see fo-a offline', timeout: 30_000 },
    );
    expect(offline.refusing).toMatch(
      /^edge fo-a is offline since .*: it refuses every connection at once until it reconnects to the hub$/,
    );
    a.sync.start();
    const back = await waitFor(
      async () => {
        const e = (await importStatus()).edges[0];
        return e.online && /the hub is not connected/.test(e.lastError ?? '') ? e : undefined;
      },
      { what: "fo-a's report of the refusal, once it is back", timeout: 30_000 },
    );
    expect(back.refused).toBeGreaterThanOrEqual(1);
  }, 90_000);
});
