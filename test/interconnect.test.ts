/**
 * Interconnect (docs/interconnect.md) with real processes: one in-process hub and three
 * process-driver agents. A TCP echo server runs on edge `ic-b` and is exported; `ic-a` imports it
 * on a local port and a client there gets its bytes echoed through the hub (half-close included);
 * `ic-c`, in another project, is refused until the export grants that project; with `ic-b`'s agent
 * away a connect is reset at once and the import's status says why.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import type { Hub } from '../hub/hub.js';
import {
  adminApi,
  startInProcessHub,
  startProcessAgent,
  startProcessAgents,
  stopInProcess,
} from './fixtures/in-process-fleet.js';
import { runCli } from './fixtures/cli.js';
import { freePort } from './ports.js';
import { waitFor } from './helpers.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
const agents: EdgeAgent[] = [];
let echoPort: number;
let importPort: number;
let otherPort: number;

const apply = (objects: unknown[]) => adminApi(hub, 'POST', '/api/v1/apply', { objects });
const meta = (name: string, project = 'default') => ({ name, project });

/** Connects to 127.0.0.1:port, writes `data`, half-closes, and reads until the peer ends or resets. */
function exchange(port: number, data: Buffer): Promise<{ got: Buffer; error?: string }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const sock = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    let error: string | undefined;
    sock.on('connect', () => sock.end(data));
    sock.on('data', (c) => chunks.push(c));
    sock.on('error', (err) => (error = (err as NodeJS.ErrnoException).code ?? err.message));
    sock.on('close', () => resolve({ got: Buffer.concat(chunks), ...(error ? { error } : {}) }));
  });
}

const importOf = (project: string, name: string) =>
  adminApi(hub, 'GET', `/api/v1/projects/${project}/serviceimports/${name}`);

beforeAll(async () => {
  ({ dir, hub, env } = await startInProcessHub('outpost-interconnect-'));
  [echoPort, importPort, otherPort] = [await freePort(), await freePort(), await freePort()];
  await startProcessAgents(hub, dir, ['ic-a'], { role: 'consumer' }, agents);
  await startProcessAgents(hub, dir, ['ic-b'], { role: 'server' }, agents);
  await apply([{ apiVersion: 'outpost.dev/v1alpha1', kind: 'Project', metadata: { name: 'other' } }]);
  const join = await adminApi<{ token: string }>(hub, 'POST', '/api/v1/tokens/join', {
    project: 'other',
    labels: { role: 'consumer' },
    uses: 1,
  });
  agents.push(await startProcessAgent(hub, dir, 'ic-c', join.token));
  const echo = `require('net').createServer({ allowHalfOpen: true }, (s) => s.pipe(s)).listen(${echoPort}, '127.0.0.1')`;
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
                  command: [process.execPath, '-e', echo],
                  ports: [{ containerPort: echoPort }],
                  // Ready once it accepts connections, not once its process started.
                  readinessProbe: { tcpSocket: { port: echoPort }, periodSeconds: 1 },
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
    {
      kind: 'ServiceImport',
      metadata: meta('echo'),
      spec: { export: 'echo', port: importPort, edgeSelector: { matchLabels: { role: 'consumer' } } },
    },
    {
      kind: 'ServiceImport',
      metadata: meta('echo', 'other'),
      spec: { export: 'echo', project: 'default', port: otherPort, edges: ['ic-c'] },
    },
  ]);
  await waitFor(
    async () => {
      const p = await adminApi(hub, 'GET', '/api/v1/projects/default/placements/echo');
      return p.status?.summary?.ready === 1;
    },
    { what: 'the echo server ready on ic-b', timeout: 60_000 },
  );
}, 120_000);

afterAll(async () => {
  await stopInProcess({ agents, hub, dir });
});

describe('interconnect: a TCP service across sites through the hub', () => {
  it('echoes a client on edge ic-a through the hub to the workload on ic-b, half-close included', async () => {
    const imp = await waitFor(
      async () => {
        const o = await importOf('default', 'echo');
        return o.status?.listening === 1 ? o : undefined;
      },
      { what: 'ic-a listening for the import', timeout: 30_000 },
    );
    expect(imp.status.edges.map((e: any) => e.edge)).toEqual(['ic-a']);
    const exp = await adminApi(hub, 'GET', '/api/v1/projects/default/serviceexports/echo');
    expect(exp.status.summary).toBe('serving 1/1 healthy, 1 online');

    const small = await exchange(importPort, Buffer.from('hello through the hub\n'));
    expect(small).toEqual({ got: Buffer.from('hello through the hub\n') });
    // More than several credit windows each way: flow control both ways, every byte in order.
    const big = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 12)) & 0xff;
    const echoed = await exchange(importPort, big);
    expect(echoed.error).toBeUndefined();
    expect(echoed.got.equals(big)).toBe(true);

    const counted = await waitFor(
      async () => {
        const e = (await importOf('default', 'echo')).status.edges[0];
        return e.total >= 2 && e.open === 0 ? e : undefined;
      },
      { what: 'the import status counting the two connections', timeout: 15_000 },
    );
    expect(counted.refused).toBe(0);

    const exports = await runCli(['get', 'serviceexports'], { env });
    expect(exports.stdout).toMatch(
      new RegExp(`^NAME +WORKLOAD +PORT +HEALTHY +ONLINE +AGE\n(echo) +echo +${echoPort} +1/1 +1/1 `),
    );
    const imports = await runCli(['get', 'svci'], { env });
    expect(imports.stdout).toMatch(
      new RegExp(
        `^NAME +EXPORT +PORT +LISTENING +OPEN +ERRORS +STATUS +AGE\necho +default/echo +${importPort} +1/1 +0 +0 +listening 1/1, 0 open `,
      ),
    );
  });

  it('refuses a consumer of another project until the export grants it', async () => {
    await waitFor(async () => (await importOf('other', 'echo')).status?.listening === 1, {
      what: 'ic-c listening',
      timeout: 30_000,
    });
    expect((await importOf('other', 'echo')).status.refused).toBe(
      "ServiceExport default/echo does not allow project other: add it to the export's spec.allowedProjects",
    );
    const refused = await exchange(otherPort, Buffer.from('let me in'));
    expect(refused.got.length).toBe(0);
    expect(refused.error).toBe('ECONNRESET');
    await waitFor(
      async () =>
        (await importOf('other', 'echo')).status.edges[0]?.lastError?.includes('does not allow project other'),
      { what: "the refusal's reason in the import's status", timeout: 15_000 },
    );

    await apply([
      {
        kind: 'ServiceExport',
        metadata: meta('echo'),
        spec: { workload: 'echo', port: echoPort, allowedProjects: ['other'] },
      },
    ]);
    expect(await exchange(otherPort, Buffer.from('granted'))).toEqual({ got: Buffer.from('granted') });

    // The grant taken back: a connection open now is reset at once, with the reason.
    const held = net.connect({ host: '127.0.0.1', port: otherPort });
    let code: string | undefined;
    held.on('error', (e: NodeJS.ErrnoException) => (code = e.code));
    const closed = new Promise<void>((resolve) => held.once('close', () => resolve()));
    const echoed = new Promise<string>((resolve) => held.once('data', (c) => resolve(c.toString())));
    held.write('still here');
    expect(await echoed).toBe('still here');
    await apply([{ kind: 'ServiceExport', metadata: meta('echo'), spec: { workload: 'echo', port: echoPort } }]);
    await closed;
    expect(code).toBe('ECONNRESET');
    await waitFor(
      async () =>
        /does not allow project other.*changed while the connection was open/.test(
          (await importOf('other', 'echo')).status.edges[0]?.lastError ?? '',
        ),
      { what: "the grant's removal in the import's status", timeout: 15_000 },
    );
  });

  it("resets a connect at once while no serving edge is online, and the import's status says why", async () => {
    const b = agents.find((a) => a.config.name === 'ic-b')!;
    await b.sync.stop('test: the serving edge goes away');
    await waitFor(async () => (await importOf('default', 'echo')).status.refused, {
      what: 'the hub to see ic-b offline',
      timeout: 30_000,
    });
    const r = await exchange(importPort, Buffer.from('anyone?'));
    expect(r).toEqual({ got: Buffer.alloc(0), error: 'ECONNRESET' });
    const e = await waitFor(
      async () => {
        const x = (await importOf('default', 'echo')).status.edges[0];
        return x.refused >= 1 ? x : undefined;
      },
      { what: 'the refusal in the import status', timeout: 15_000 },
    );
    expect(e.lastError).toBe('no edge serving ServiceExport default/echo is online: connection refused');
  });
});
