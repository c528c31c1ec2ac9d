/**
 * Interconnect's data path under load and at its ends (docs/interconnect.md), with real processes:
 * one in-process hub, a consuming agent `fl-a` and a serving agent `fl-b` (process driver), and a
 * workload on fl-b with four servers: `flood` writes 200 MiB to each connection, `half` half-closes
 * first and counts what it still receives, `echo`, and `rst` resets its connections.
 *
 * - A client that reads slowly (and first not at all) gets all 200 MiB in order, and the hub's
 *   relay never holds more than its streams' bounds (one read window and one write buffer per
 *   direction), sampled all along: the flood waits for the client instead of piling up in the hub.
 * - A half-close crosses both ways: the server's END reaches the client, which still sends after
 *   it, and the server receives every byte.
 * - An idle connection is reset at both ends after the export's idleTimeoutSeconds, and a reset by
 *   the workload reaches the client as a reset; each time the reason is in the import's status and
 *   the export's (per serving edge).
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeAgent } from '../edge/agent.js';
import type { Hub } from '../hub/hub.js';
import { MAX_BULK_DATA_BYTES, MAX_BULK_WINDOW } from '../sync/tunnel.js';
import { adminApi, startInProcessHub, startProcessAgents, stopInProcess } from './fixtures/in-process-fleet.js';
import { waitFor } from './helpers.js';
import { freePort } from './ports.js';

let dir: string;
let hub: Hub;
const agents: EdgeAgent[] = [];
const ports: Record<string, { serve: number; local: number }> = {};
const FLOOD = 200 * 1024 * 1024;
const CHUNK = 1024 * 1024;
/** The byte at offset `o` of the flood (a pattern that catches a lost, repeated or reordered chunk). */
const floodByte = (o: number) => ((o % CHUNK) % 251) ^ (Math.floor(o / CHUNK) % 256);

const SERVERS = `
const net = require('net'), fs = require('fs');
const [mode, port, file] = process.argv.slice(1);
const CHUNK = ${CHUNK}, N = ${FLOOD};
net.createServer({ allowHalfOpen: true }, (s) => {
  s.on('error', () => undefined);
  if (mode === 'echo') return s.pipe(s);
  if (mode === 'rst') return s.once('data', () => s.resetAndDestroy());
  if (mode === 'half') {
    let n = 0;
    s.on('data', (c) => (n += c.length));
    s.on('end', () => { fs.writeFileSync(file, String(n)); s.destroy(); });
    return s.end('bye\\n');
  }
  s.resume();
  let k = 0;
  const more = () => {
    while (k * CHUNK < N) {
      const b = Buffer.alloc(CHUNK);
      for (let i = 0; i < CHUNK; i++) b[i] = (i % 251) ^ (k % 256);
      k++;
      if (!s.write(b)) return s.once('drain', more);
    }
    s.end();
  };
  more();
}).listen(Number(port), '127.0.0.1');
`;

const apply = (objects: unknown[]) => adminApi(hub, 'POST', '/api/v1/apply', { objects });
const meta = (name: string) => ({ name, project: 'default' });
const importOf = (name: string) => adminApi(hub, 'GET', `/api/v1/projects/default/serviceimports/${name}`);
const exportOf = (name: string) => adminApi(hub, 'GET', `/api/v1/projects/default/serviceexports/${name}`);

beforeAll(async () => {
  ({ dir, hub } = await startInProcessHub('outpost-interconnect-flow-'));
  for (const m of ['flood', 'half', 'echo', 'rst']) ports[m] = { serve: await freePort(), local: await freePort() };
  await startProcessAgents(hub, dir, ['fl-a'], { role: 'consumer' }, agents);
  await startProcessAgents(hub, dir, ['fl-b'], { role: 'server' }, agents);
  const containers = Object.entries(ports).map(([mode, p]) => ({
    name: mode,
    command: [process.execPath, '-e', SERVERS, mode, String(p.serve), path.join(dir, 'half-received')],
    ports: [{ containerPort: p.serve }],
    readinessProbe: { tcpSocket: { port: p.serve }, periodSeconds: 1 },
  }));
  await apply([
    {
      kind: 'Workload',
      metadata: meta('servers'),
      spec: { manifests: [{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'servers' }, spec: { containers } }] },
    },
    {
      kind: 'Placement',
      metadata: meta('servers'),
      spec: { edgeSelector: { matchLabels: { role: 'server' } }, workloads: ['servers'] },
    },
    ...Object.entries(ports).flatMap(([mode, p]) => [
      {
        kind: 'ServiceExport',
        metadata: meta(mode),
        spec: { workload: 'servers', port: p.serve, ...(mode === 'echo' ? { idleTimeoutSeconds: 1 } : {}) },
      },
      {
        kind: 'ServiceImport',
        metadata: meta(mode),
        spec: { export: mode, port: p.local, edges: ['fl-a'] },
      },
    ]),
  ]);
  await waitFor(
    async () =>
      (await adminApi(hub, 'GET', '/api/v1/projects/default/placements/servers')).status?.summary?.ready === 1,
    { what: 'the servers ready on fl-b', timeout: 60_000 },
  );
  for (const m of Object.keys(ports))
    await waitFor(async () => (await importOf(m)).status?.listening === 1, {
      what: `fl-a listening for ${m}`,
      timeout: 30_000,
    });
}, 120_000);

afterAll(async () => {
  await stopInProcess({ agents, hub, dir });
});

/** Connects to the import's local port; resolves when connected. */
function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    sock.once('connect', () => resolve(sock));
    sock.once('error', reject);
  });
}

/** Resolves with the error code the socket closed with (undefined: a clean close). */
const closed = (sock: net.Socket) =>
  new Promise<string | undefined>((resolve) => {
    let code: string | undefined;
    sock.on('error', (e: NodeJS.ErrnoException) => (code = e.code ?? e.message));
    sock.once('close', () => resolve(code));
  });

describe('interconnect: backpressure, half-close, idle timeout, failures', () => {
  it("a slow client gets 200 MiB in order and the hub's relay stays within its streams' bounds", async () => {
    // What the relay may hold for one connection: the serving stream's read window (grown at
    // most to MAX_BULK_WINDOW while the flow kept up), the consumer stream's write buffer (its
    // high-water mark, MAX_BULK_DATA_BYTES for a bulk stream, plus one write past it), and the
    // same the other way (the client sends nothing here).
    const bound = 2 * (MAX_BULK_WINDOW + 2 * MAX_BULK_DATA_BYTES);
    let maxBuffered = 0;
    const sample = () => (maxBuffered = Math.max(maxBuffered, hub.interconnect.bufferedBytes()));
    const sampler = setInterval(sample, 20);
    try {
      const sock = await connect(ports.flood!.local);
      sock.pause();
      // Not reading: the flood stalls once the windows and socket buffers on the way are full.
      let last = -1;
      let still = 0;
      const stalledAt = await waitFor(
        async () => {
          sample();
          const now = hub.interconnect.relayedBytes();
          still = now > 0 && now === last ? still + 1 : 0;
          last = now;
          return still >= 5 ? now : undefined;
        },
        { what: 'the flood to stall behind the client that does not read', timeout: 60_000, interval: 100 },
      );
      expect(stalledAt).toBeLessThan(FLOOD / 4);
      expect(hub.interconnect.openConnections()).toBe(1);

      // Now a slow reader: it pauses after every chunk and takes the next one on a later turn.
      let got = 0;
      let bad = -1;
      const end = closed(sock);
      sock.on('data', (c: Buffer) => {
        for (let i = 0; i < c.length && bad < 0; i += 4093) if (c[i] !== floodByte(got + i)) bad = got + i;
        got += c.length;
        sock.pause();
        setImmediate(() => sock.resume());
      });
      sock.resume();
      // The server's END after the last byte; the client then ends its side (it sent nothing).
      await new Promise<void>((resolve) => sock.once('end', resolve));
      sock.end();
      expect(await end).toBeUndefined();
      expect(bad).toBe(-1);
      expect(got).toBe(FLOOD);
    } finally {
      clearInterval(sampler);
    }
    expect(maxBuffered).toBeGreaterThan(0);
    expect(maxBuffered).toBeLessThanOrEqual(bound);
    const e = await waitFor(
      async () => {
        const x = (await importOf('flood')).status.edges[0];
        return x.total >= 1 && x.open === 0 && x.bytesIn >= FLOOD ? x : undefined;
      },
      { what: "the flood's bytes in the import status", timeout: 15_000 },
    );
    expect(e.failed).toBe(0);
    expect(e.connectP99Ms).toBeGreaterThanOrEqual(e.connectP50Ms);
  }, 300_000);

  it('carries a half-close both ways: the server ends first and still receives what the client sends after', async () => {
    const file = path.join(dir, 'half-received');
    const sock = await connect(ports.half!.local);
    const chunks: Buffer[] = [];
    sock.on('data', (c) => chunks.push(c));
    const end = closed(sock);
    await new Promise<void>((resolve) => sock.once('end', resolve));
    expect(Buffer.concat(chunks).toString()).toBe('bye\n');
    // The client's side is still open: 1 MiB more, then its own END.
    sock.end(Buffer.alloc(CHUNK, 7));
    expect(await end).toBeUndefined();
    await waitFor(() => fs.existsSync(file) && fs.readFileSync(file, 'utf8') === String(CHUNK), {
      what: 'the server to count every byte sent after its END',
      timeout: 15_000,
    });
  });

  it('resets an idle connection at both ends after idleTimeoutSeconds, with the reason in the statuses', async () => {
    const sock = await connect(ports.echo!.local);
    const end = closed(sock);
    const echoed = new Promise<Buffer>((resolve) => sock.once('data', resolve));
    sock.write('ping');
    expect((await echoed).toString()).toBe('ping');
    expect(await end).toBe('ECONNRESET');
    const imp = await waitFor(
      async () => {
        const x = (await importOf('echo')).status.edges[0];
        return x.failed >= 1 ? x : undefined;
      },
      { what: 'the idle reset in the import status', timeout: 15_000 },
    );
    expect(imp.lastError).toMatch(/idle for 1s \(the ServiceExport's spec.idleTimeoutSeconds\)/);
    const served = (await exportOf('echo')).status.serving[0];
    expect(served).toMatchObject({ edge: 'fl-b', healthy: true, failed: 1, open: 0 });
    expect(served.lastError).toMatch(/idle for 1s/);
  });

  it('passes a reset by the workload on to the client as a reset, and says so', async () => {
    const sock = await connect(ports.rst!.local);
    const end = closed(sock);
    sock.write('hello');
    expect(await end).toBe('ECONNRESET');
    const imp = await waitFor(
      async () => {
        const x = (await importOf('rst')).status.edges[0];
        return x.failed >= 1 ? x : undefined;
      },
      { what: 'the reset in the import status', timeout: 15_000 },
    );
    expect(imp.lastError).toMatch(/workload servers port \d+: .*ECONNRESET/);
    expect((await exportOf('rst')).status.serving[0].lastError).toBe(imp.lastError);

    // The relay's Prometheus series: the idle and the reset connections failed, nothing held now.
    const metrics = await (await fetch(`${hub.url}/metrics`)).text();
    const value = (line: string) =>
      Number(
        metrics
          .split('\n')
          .find((l) => l.startsWith(line))
          ?.split(' ')
          .pop(),
      );
    expect(value('outpost_hub_interconnect_connections_total{result="failed"}')).toBe(2);
    expect(value('outpost_hub_interconnect_connections_total{result="connected"}')).toBeGreaterThanOrEqual(4);
    expect(value('outpost_hub_interconnect_bytes_total{direction="to_client"}')).toBeGreaterThan(FLOOD);
    expect(value('outpost_hub_interconnect_buffered_bytes')).toBe(0);
    expect(value('outpost_hub_interconnect_open_connections')).toBe(0);
  });
});
