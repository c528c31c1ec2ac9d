/**
 * Blob transfers between real `outpost hub` and `outpost edge` processes over a rate-limited
 * loopback link (test/fixtures/link-proxy.ts, which counts the bytes on the wire):
 * 1. 200 MB hub -> edge with the hub killed -9 once and the edge killed -9 once mid-transfer:
 *    it completes, the digests are equal, the wire carried at most 1.1x the size, and a spec
 *    change made during the transfer reached the edge before the transfer ended;
 * 2. 200 MB edge -> hub with both killed -9 once: same checks;
 * 3. a blob either side already has is not sent again.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HubClient } from '../cli/client.js';
import { hostPod, hubApi, killHostWorkloads } from './fixtures/host-workloads.js';
import { startOverLink, type LinkProxy } from './fixtures/link-proxy.js';
import { tempDir, waitFor } from './helpers.js';
import { edgeLocal } from './fixtures/edge-local.js';
import { startEdgeProc, startHubProc, type HubProc, type Proc } from './procs.js';

const SIZE = 200 * 1024 * 1024;
/** 25 MB/s: a 200 MB transfer takes ~8 s of link time, long enough to kill both sides in its middle. */
const RATE = 25 * 1024 * 1024;

let dir: string;
let hubDir: string;
let edgeDir: string;
let www: string;
let hubPort: number;
let hub: HubProc;
let edge: Proc;
let link: LinkProxy;

function bigFile(name: string): { file: string; digest: string } {
  const file = path.join(dir, name);
  const fd = fs.openSync(file, 'w');
  const h = createHash('sha256');
  for (let n = 0; n < SIZE; n += 8 * 1024 * 1024) {
    const b = randomBytes(8 * 1024 * 1024);
    h.update(b);
    fs.writeSync(fd, b);
  }
  fs.closeSync(fd);
  return { file, digest: `sha256:${h.digest('hex')}` };
}

function sha256(file: string): string {
  const h = createHash('sha256');
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.allocUnsafe(8 * 1024 * 1024);
  for (let n; (n = fs.readSync(fd, buf)) > 0;) h.update(buf.subarray(0, n));
  fs.closeSync(fd);
  return `sha256:${h.digest('hex')}`;
}

const size = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
const hex = (d: string) => d.slice(7);

const local = (method: string, p: string, body?: unknown) => edgeLocal(edgeDir, p, method, body);

const restartHub = async () => {
  hub = await startHubProc(hubDir, hubPort, ['--insecure-http']);
};
const restartEdge = async () => {
  edge = await startEdgeProc(edgeDir);
};

beforeAll(async () => {
  dir = tempDir('outpost-transfers-');
  hubDir = path.join(dir, 'hub');
  edgeDir = path.join(dir, 'edge');
  www = path.join(dir, 'www');
  fs.mkdirSync(www);
  ({ hubPort, hub, link, edge } = await startOverLink({
    hubDir,
    edgeDir,
    rate: RATE,
    name: 'e1',
    labels: { site: 'a' },
  }));
  await waitFor(async () => (await local('GET', '/status')).connection === 'connected', { what: 'edge connected' });
}, 60_000);

afterAll(async () => {
  await edge?.kill('SIGTERM').catch(() => undefined);
  await hub?.proc.kill('SIGTERM').catch(() => undefined);
  await link?.close();
  killHostWorkloads(www);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('resumable transfers over the edge connection (real processes)', () => {
  let first: { file: string; digest: string };

  it('200 MB hub -> edge survive a kill -9 of each side; a spec change arrives meanwhile', async () => {
    first = bigFile('down.bin');
    const client = new HubClient({ hub: hub.url, token: hub.token });
    const up = await client.upload<{ digest: string }>('/api/v1/projects/default/blobs', first.file, {});
    expect(up.digest).toBe(first.digest);

    const partial = path.join(edgeDir, 'blobs', 'partial', hex(first.digest));
    const done = path.join(edgeDir, 'blobs', 'sha256', hex(first.digest));
    const wire0 = link.bytes.toEdge;
    await local('POST', '/blobs/pull', { digest: first.digest });

    await waitFor(() => size(partial) > SIZE * 0.2, { timeout: 60_000, what: 'a fifth received' });
    await hub.proc.kill('SIGKILL');
    const atHubKill = size(partial);
    await restartHub();

    // While the blob moves again, the hub changes the edge's spec: it must arrive before the blob does.
    await waitFor(() => size(partial) > atHubKill + 10 * 1024 * 1024, {
      timeout: 60_000,
      what: 'the transfer resumed',
    });
    const atChange = size(partial);
    await hubApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        hostPod('marker', 'sleep 3600', { pidDir: www }),
        {
          kind: 'Placement',
          metadata: { name: 'marker' },
          spec: { edgeSelector: { matchLabels: { site: 'a' } }, workloads: ['marker'] },
        },
      ],
    });
    await waitFor(
      async () => ((await local('GET', '/status')).workloads as { name: string }[]).some((w) => w.name === 'marker'),
      { timeout: 30_000, what: 'the spec change on the edge' },
    );
    expect(fs.existsSync(done)).toBe(false);
    expect(size(partial)).toBeGreaterThan(atChange);

    await waitFor(() => size(partial) > SIZE * 0.6, { timeout: 60_000, what: 'three fifths received' });
    await edge.kill('SIGKILL');
    const atEdgeKill = size(partial);
    expect(atEdgeKill).toBeLessThan(SIZE);
    await restartEdge();

    await waitFor(() => fs.existsSync(done), { timeout: 120_000, what: 'the blob complete on the edge' });
    expect(sha256(done)).toBe(first.digest);
    expect(fs.existsSync(partial)).toBe(false);
    const wire = link.bytes.toEdge - wire0;
    console.info(`hub -> edge: ${wire} bytes on the wire for ${SIZE} (${(wire / SIZE).toFixed(3)}x)`);
    expect(wire).toBeGreaterThanOrEqual(SIZE);
    expect(wire).toBeLessThanOrEqual(SIZE * 1.1);
  }, 300_000);

  it('200 MB edge -> hub survive a kill -9 of each side', async () => {
    const second = bigFile('up.bin');
    const partial = path.join(hubDir, 'blobs', 'partial', hex(second.digest));
    const done = path.join(hubDir, 'blobs', 'sha256', hex(second.digest));
    const wire0 = link.bytes.toHub;
    const r = await local('POST', '/blobs/push', { file: second.file, mediaType: 'application/x-test' });
    expect(r.digest).toBe(second.digest);

    await waitFor(() => size(partial) > SIZE * 0.2, { timeout: 60_000, what: 'a fifth sent' });
    await edge.kill('SIGKILL');
    await restartEdge();
    await waitFor(() => size(partial) > SIZE * 0.6, { timeout: 60_000, what: 'three fifths sent' });
    await hub.proc.kill('SIGKILL');
    await restartHub();

    await waitFor(() => fs.existsSync(done), { timeout: 120_000, what: 'the blob complete on the hub' });
    expect(sha256(done)).toBe(second.digest);
    const listed = await waitFor(async () => {
      const l = await hubApi(hub, 'GET', '/api/v1/projects/default/blobs');
      return (l.json.items as { digest: string; uploadedBy: string; references: string[] }[]).find(
        (b) => b.digest === second.digest,
      );
    });
    expect(listed).toMatchObject({ uploadedBy: 'edge:e1', references: ['Edge/e1'] });
    const wire = link.bytes.toHub - wire0;
    console.info(`edge -> hub: ${wire} bytes on the wire for ${SIZE} (${(wire / SIZE).toFixed(3)}x)`);
    expect(wire).toBeGreaterThanOrEqual(SIZE);
    expect(wire).toBeLessThanOrEqual(SIZE * 1.1);
    await waitFor(
      async () => ((await local('GET', '/blobs')).items as { state: string }[]).every((b) => b.state === 'stored'),
      {
        what: 'the outbox empty',
      },
    );
  }, 300_000);

  it('a blob either side already has is not sent again', async () => {
    const down0 = link.bytes.toEdge;
    const up0 = link.bytes.toHub;
    // The edge has the first blob: a pull is answered from its store.
    expect((await local('POST', '/blobs/pull', { digest: first.digest })).state).toBe('stored');
    // The hub has the first blob: the edge's push of the same bytes is deduplicated.
    await local('POST', '/blobs/push', { file: first.file });
    await waitFor(
      async () => ((await local('GET', '/blobs')).items as { state: string }[]).every((b) => b.state === 'stored'),
      {
        what: 'the outbox empty',
      },
    );
    expect(link.bytes.toEdge - down0).toBeLessThan(1024 * 1024);
    expect(link.bytes.toHub - up0).toBeLessThan(1024 * 1024);
  }, 60_000);
});
