/**
 * Hub and edge replicas in separate processes over a real WebSocket on loopback, with real SQLite
 * files: convergence, offline edits on both sides, and kill -9 of either side mid-sync.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ForkedPeer, ROOT, tempDir, waitFor } from './helpers.js';

const PEER = path.join(ROOT, 'test/fixtures/sync-peer.ts');

interface ReadResult {
  spec: {
    workloads: Record<string, { generation: number; manifests: { spec: { containers: { image: string }[] } }[] }>;
  } | null;
  report: {
    workloads: Record<string, { observedGeneration: number; phase: string; restarts: number }>;
    intents: { seq: number; action: string }[];
  } | null;
  specHeads: string[];
  reportHeads: string[];
}
interface Stats {
  totals?: { bytesIn: number; bytesOut: number; connects: number };
  current?: { bytesIn: number; bytesOut: number };
  state?: string;
}

const peers: ForkedPeer[] = [];
const dirs: string[] = [];

function hub(dir: string, port = 0): ForkedPeer {
  const p = new ForkedPeer(PEER, {
    PEER_ROLE: 'hub',
    PEER_DATA: dir,
    PEER_PORT: String(port),
    PEER_TOKENS: JSON.stringify({ 'tok-a': 'edge-a', 'tok-b': 'edge-b' }),
  });
  peers.push(p);
  return p;
}
function edge(dir: string, port: number, name = 'edge-a', token = 'tok-a'): ForkedPeer {
  const p = new ForkedPeer(PEER, {
    PEER_ROLE: 'edge',
    PEER_DATA: dir,
    PEER_URL: `ws://127.0.0.1:${port}/api/v1/sync`,
    PEER_EDGE: name,
    PEER_TOKEN: token,
  });
  peers.push(p);
  return p;
}
function dir(): string {
  const d = tempDir();
  dirs.push(d);
  return d;
}

async function converged(
  h: ForkedPeer,
  e: ForkedPeer,
  name = 'edge-a',
): Promise<{ hub: ReadResult; edge: ReadResult }> {
  return waitFor(
    async () => {
      const a = await h.call<ReadResult>({ op: 'read', edge: name });
      const b = await e.call<ReadResult>({ op: 'read', edge: name });
      const same =
        a.specHeads.length > 0 &&
        JSON.stringify(a.specHeads) === JSON.stringify(b.specHeads) &&
        a.reportHeads.length > 0 &&
        JSON.stringify(a.reportHeads) === JSON.stringify(b.reportHeads);
      return same ? { hub: a, edge: b } : null;
    },
    { what: 'hub and edge heads to be equal', timeout: 30_000 },
  );
}

afterEach(async () => {
  await Promise.all(peers.splice(0).map((p) => p.kill()));
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('replicas over a real WebSocket', () => {
  it('hub and edge in separate processes converge', async () => {
    const h = hub(dir());
    const { port } = (await h.ready) as { port: number };
    await h.call({ op: 'spec', edge: 'edge-a', workload: 'web', generation: 1, image: 'nginx:1' });
    const e = edge(dir(), port);
    await e.ready;
    await e.call({ op: 'report', edge: 'edge-a', workload: 'web', generation: 1, phase: 'Ready' });
    const { hub: hv, edge: ev } = await converged(h, e);
    expect(ev.spec!.workloads.web.manifests[0].spec.containers[0].image).toBe('nginx:1');
    expect(hv.report!.workloads.web).toMatchObject({ observedGeneration: 1, phase: 'Ready' });
  });

  it('both sides edit while disconnected; after reconnect both hold both edits with equal heads', async () => {
    const h = hub(dir());
    const { port } = (await h.ready) as { port: number };
    await h.call({ op: 'spec', edge: 'edge-a', workload: 'web', generation: 1, image: 'nginx:1' });
    const e = edge(dir(), port);
    await e.ready;
    await converged(h, e);
    await e.call({ op: 'disconnect' });

    await h.call({ op: 'spec', edge: 'edge-a', workload: 'web', generation: 2, image: 'nginx:2' });
    await e.call({ op: 'report', edge: 'edge-a', workload: 'web', generation: 1, phase: 'Failed', restarts: 3 });
    const seq = await e.call<number>({ op: 'intent', edge: 'edge-a', workload: 'web', action: 'pause' });
    // Still apart: neither has the other's edit.
    const apart = await h.call<ReadResult>({ op: 'read', edge: 'edge-a' });
    expect(apart.report!.intents).toHaveLength(0);

    await e.call({ op: 'connect' });
    const { hub: hv, edge: ev } = await converged(h, e);
    expect(ev.spec!.workloads.web.generation).toBe(2);
    expect(ev.spec!.workloads.web.manifests[0].spec.containers[0].image).toBe('nginx:2');
    expect(hv.report!.workloads.web).toMatchObject({ phase: 'Failed', restarts: 3 });
    expect(hv.report!.intents.map((i) => [i.seq, i.action])).toEqual([[seq, 'pause']]);
  });

  it('hub killed with SIGKILL mid-sync restarts from its data dir: nothing lost, and a quiet resync sends no sync frame', async () => {
    const hubDir = dir();
    let h = hub(hubDir);
    const { port } = (await h.ready) as { port: number };
    await h.call({ op: 'spec', edge: 'edge-a', workload: 'web', generation: 1, image: 'nginx:1' });
    const e = edge(dir(), port);
    await e.ready;
    await converged(h, e);

    // The edge writes status continuously while the hub is killed in the middle of it.
    let writes = 0;
    const writer = (async () => {
      for (let i = 0; i < 150; i++) {
        await e.call({
          op: 'report',
          edge: 'edge-a',
          workload: 'web',
          generation: 1,
          phase: i % 2 ? 'Ready' : 'Progressing',
          restarts: i,
        });
        writes++;
      }
    })();
    await waitFor(() => writes > 40, { what: 'edge writes under way' });
    await h.kill('SIGKILL');
    await writer;
    // Specs the hub acknowledged before dying must survive: restart on the same port and dir.
    h = hub(hubDir, port);
    await h.ready;
    await h.call({ op: 'spec', edge: 'edge-a', workload: 'api', generation: 1, image: 'api:1' });
    const { hub: hv } = await converged(h, e);
    expect(hv.spec!.workloads.web.generation).toBe(1);
    expect(hv.spec!.workloads.api.generation).toBe(1);
    expect(hv.report!.workloads.web.restarts).toBe(149);

    // Nothing new on either side: kill and restart the hub again and count the bytes of the resync.
    const before = await e.call<Stats>({ op: 'stats' });
    await h.kill('SIGKILL');
    h = hub(hubDir, port);
    await h.ready;
    await waitFor(
      async () => ((await e.call<Stats>({ op: 'stats' })).totals!.connects > before.totals!.connects ? true : null),
      { what: 'edge reconnected' },
    );
    await converged(h, e);
    // Read the connection's own counters after ping round trips on it: whatever sync frame the
    // hub sent at the handshake, or in answer to the edge's, has arrived by then.
    const s = await e.call<Stats>({ op: 'stats', barrier: true });
    // Both sides said the same heads at the handshake: the first sync round is skipped entirely
    // (welcome.quiet, sync/quiet.test.ts), so the resync costs no sync frame at all.
    const resync = s.current!.bytesIn + s.current!.bytesOut;
    expect(resync).toBe(0);
  });

  it('edge killed with SIGKILL mid-sync restarts from its data dir: nothing lost, and a quiet resync is small', async () => {
    const h = hub(dir());
    const { port } = (await h.ready) as { port: number };
    const edgeDir = dir();
    let e = edge(edgeDir, port);
    await e.ready;
    let acknowledged = 0;
    const writer = (async () => {
      for (let i = 1; i <= 200; i++) {
        await h.call({ op: 'spec', edge: 'edge-a', workload: `w${i % 20}`, generation: i, image: `img:${i}` });
        acknowledged = i;
      }
    })();
    let reported = 0;
    // The edge is alive here: an error of it fails the test.
    for (let i = 1; i <= 1000 && acknowledged < 60; i++) {
      await e.call({ op: 'report', edge: 'edge-a', workload: 'web', generation: i, phase: 'Ready' });
      reported = i;
    }
    await e.kill('SIGKILL');
    await writer;
    e = edge(edgeDir, port);
    await e.ready;
    const { edge: ev, hub: hv } = await converged(h, e);
    expect(ev.spec!.workloads.w0.generation).toBe(200);
    expect(Object.keys(ev.spec!.workloads)).toHaveLength(20);
    // Every report the edge committed before it died reached the hub after the restart.
    expect(hv.report!.workloads.web.observedGeneration).toBe(reported);

    await e.kill('SIGKILL');
    e = edge(edgeDir, port);
    await e.ready;
    await waitFor(async () => ((await e.call<Stats>({ op: 'stats' })).state === 'connected' ? true : null), {
      what: 'edge connected',
    });
    await converged(h, e);
    const s = await e.call<Stats>({ op: 'stats', barrier: true });
    const resync = s.current!.bytesIn + s.current!.bytesOut;
    expect(resync).toBeLessThan(1_000);
  });
});
