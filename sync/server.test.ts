/**
 * Hostile input against the sync endpoint, over real sockets: each refusal is specific, logged,
 * leaves the hub's replica unchanged, and a well-behaved edge keeps syncing throughout.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as A from '@automerge/automerge/slim';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeName, mailboxDocId } from '../core/ids.js';
import { captureLogs } from '../core/logger.js';
import { putReportWorkload, putSpecWorkload, readReport, type ReportDoc, type SpecDoc } from '../core/mailbox.js';
import { tempDir, waitFor } from '../test/helpers.js';
import { SyncClient } from './client.js';
import { ensureMailbox } from './mailbox.js';
import { encodeControl, encodeSyncFrame, PROTOCOL_VERSION } from './messages.js';
import { ReplicaStore } from './store.js';
import { listenSyncServer, type ListeningSyncServer } from '../test/fixtures/sync-server.js';

const A_EDGE = edgeName('edge-a');
const B_EDGE = edgeName('edge-b');
let dir: string;
let hubStore: ReplicaStore;
let hub: ListeningSyncServer;
let url: string;
let goodStore: ReplicaStore;
let good: SyncClient;
const refusals: { edge: string | null; code: string }[] = [];

beforeAll(async () => {
  dir = tempDir();
  hubStore = await ReplicaStore.open(path.join(dir, 'hub.db'), { afterChange: (id) => hub.server.notify(id) });
  hub = await listenSyncServer({
    store: hubStore,
    hubVersion: 'test',
    maxFrameBytes: 64 * 1024,
    authenticate: (t) => (t === 'tok-a' ? { edge: A_EDGE } : t === 'tok-b' ? { edge: B_EDGE } : null),
    onRefused: (edge, code) => refusals.push({ edge, code }),
  });
  url = hub.url;
  // A well-behaved edge that must keep syncing while the others misbehave.
  goodStore = await ReplicaStore.open(path.join(dir, 'good.db'), { afterChange: (id) => good.notify(id) });
  good = new SyncClient({ url, token: 'tok-b', edge: B_EDGE, store: goodStore, agentVersion: 'test' });
  good.start();
  await waitFor(() => good.state === 'connected', { what: 'good edge connected' });
});

afterAll(async () => {
  await good.stop();
  await hub.close();
  hubStore.close();
  goodStore.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The good edge writes a status and we wait until the hub has it: proof that it still syncs. */
let goodGen = 0;
async function goodEdgeStillSyncs(): Promise<void> {
  const gen = ++goodGen;
  goodStore.change<ReportDoc>(mailboxDocId(B_EDGE, 'report'), (d) => {
    putReportWorkload(d, 'web', { observedGeneration: gen, phase: 'Ready', restarts: 0, objects: {} });
  });
  await waitFor(
    () =>
      readReport(hubStore.get<ReportDoc>(mailboxDocId(B_EDGE, 'report'))!).workloads.web?.observedGeneration === gen,
    { what: 'good edge report at hub' },
  );
}

function upgradeStatus(headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('open', () => {
      ws.terminate();
      reject(new Error('socket opened'));
    });
    ws.on('error', () => undefined);
  });
}

/** Opens an authenticated raw socket, runs `act`, and resolves with the close code, reason and any error message. */
function rawSession(
  token: string,
  act: (ws: WebSocket) => void,
): Promise<{ code: number; reason: string; error?: { code: string; message: string } }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    let error: { code: string; message: string } | undefined;
    ws.on('open', () => act(ws));
    ws.on('message', (d, bin) => {
      if (!bin) {
        const m = JSON.parse(d.toString()) as { type: string; code: string; message: string };
        if (m.type === 'error') error = { code: m.code, message: m.message };
      }
    });
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString(), error }));
    ws.on('error', () => undefined);
  });
}

const hello = (docs: { id: string; epoch: string }[] = [], protocol = PROTOCOL_VERSION) =>
  encodeControl({ type: 'hello', protocol, agentVersion: 'test', docs });

describe('sync endpoint refuses hostile input', () => {
  it('missing or wrong credential: 401 at the upgrade, no socket, logged at a bounded rate', async () => {
    const logs = captureLogs();
    expect(await upgradeStatus({})).toBe(401);
    for (let i = 0; i < 50; i++) expect(await upgradeStatus({ authorization: 'Bearer nope' })).toBe(401);
    logs.stop();
    // 51 refusals, one line (the next one, after REFUSAL_LOG_INTERVAL_MS, counts the others).
    expect(logs.parsed().filter((l) => String(l.msg).includes('refused sync upgrade'))).toHaveLength(1);
    expect(refusals.filter((r) => r.code === 'unauthorized').length).toBeGreaterThanOrEqual(51);
    await goodEdgeStillSyncs();
  });

  it('a wrong protocol version gets protocol_version and close 4426', async () => {
    const r = await rawSession('tok-a', (ws) => ws.send(hello([], 99)));
    expect(r.code).toBe(4426);
    expect(r.error?.code).toBe('protocol_version');
    expect(r.error?.message).toMatch(/upgrade the hub/);
    await goodEdgeStillSyncs();
  });

  it("a valid edge asking for another edge's document is refused with 4403", async () => {
    const r = await rawSession('tok-a', (ws) => ws.send(hello([{ id: 'edge/edge-b/report', epoch: 'x' }])));
    expect(r.code).toBe(4403);
    expect(r.error?.code).toBe('forbidden_document');
    // After the handshake too: a sync frame for a foreign document.
    const r2 = await rawSession('tok-a', (ws) => {
      ws.send(hello());
      ws.once('message', () => ws.send(encodeSyncFrame('edge/edge-b/spec', 'x', new Uint8Array([0x42, 1, 2, 3]))));
    });
    expect(r2.code).toBe(4403);
    await goodEdgeStillSyncs();
  });

  it('an edge sending changes for its spec document is refused and the hub replica stays unchanged', async () => {
    ensureMailbox(hubStore, A_EDGE, 'hub');
    const specId = mailboxDocId(A_EDGE, 'spec');
    hubStore.change<SpecDoc>(specId, (d) => {
      putSpecWorkload(d, { name: 'web', generation: 1, revision: 1, manifests: [] });
    });
    const headsBefore = A.getHeads(hubStore.get(specId)!);
    // The attacker builds a spec doc from the hub's own bytes, adds a change, and syncs it.
    let forged = A.load<SpecDoc>(A.save(hubStore.get(specId)!));
    forged = A.change(forged, (d) => {
      putSpecWorkload(d, { name: 'evil', generation: 99, revision: 1, manifests: [] });
    });
    const burstGen = ++goodGen;
    const logs = captureLogs();
    const r = await rawSession('tok-a', (ws) => {
      ws.send(
        hello([
          { id: specId, epoch: hubStore.epoch(specId)! },
          { id: mailboxDocId(A_EDGE, 'report'), epoch: hubStore.epoch(mailboxDocId(A_EDGE, 'report'))! },
        ]),
      );
      let st = A.initSyncState();
      ws.on('message', (d, bin) => {
        if (!bin) return;
        const buf = d as Buffer;
        const idLen = buf.readUInt16BE(1);
        if (buf.toString('utf8', 3, 3 + idLen) !== specId) return;
        const start = 4 + idLen + buf[3 + idLen];
        [forged, st] = A.receiveSyncMessage(forged, st, new Uint8Array(buf.subarray(start)));
        const [st2, msg] = A.generateSyncMessage(forged, st);
        st = st2;
        if (msg) {
          ws.send(encodeSyncFrame(specId, hubStore.epoch(specId)!, msg));
          // The good edge reports at the same moment: its frame lands in the same burst on the
          // hub (one transaction, a savepoint per frame) and must be kept while the forgery is undone.
          goodStore.change<ReportDoc>(mailboxDocId(B_EDGE, 'report'), (d) => {
            putReportWorkload(d, 'web', { observedGeneration: burstGen, phase: 'Ready', restarts: 0, objects: {} });
          });
        }
      });
    });
    logs.stop();
    await waitFor(
      () =>
        readReport(hubStore.get<ReportDoc>(mailboxDocId(B_EDGE, 'report'))!).workloads.web?.observedGeneration ===
        burstGen,
      { what: "the good edge's report sent in the forger's burst" },
    );
    expect(r.code).toBe(4409);
    expect(r.error?.code).toBe('write_violation');
    expect(A.getHeads(hubStore.get(specId)!)).toEqual(headsBefore);
    expect(Object.keys(hubStore.get<SpecDoc>(specId)!.workloads)).toEqual(['web']);
    expect(logs.parsed().some((l) => l.code === 'write_violation' && l.edge === 'edge-a')).toBe(true);
    // The refusal survives a reload from disk too.
    const reopened = await ReplicaStore.open(path.join(dir, 'hub.db'));
    expect(Object.keys(reopened.get<SpecDoc>(specId)!.workloads)).toEqual(['web']);
    reopened.close();
    await goodEdgeStillSyncs();
  });

  it('garbage text and binary frames close with 4400', async () => {
    const t = await rawSession('tok-a', (ws) => ws.send('this is not json'));
    expect(t.code).toBe(4400);
    expect(t.error?.code).toBe('bad_frame');
    const b = await rawSession('tok-a', (ws) => {
      ws.send(hello());
      ws.once('message', () => ws.send(Buffer.from([0x7f, 0, 1, 2])));
    });
    expect(b.code).toBe(4400);
    const s = await rawSession('tok-a', (ws) => {
      ws.send(hello());
      ws.once('message', () =>
        ws.send(
          encodeSyncFrame(
            'edge/edge-a/report',
            hubStore.epoch(mailboxDocId(A_EDGE, 'report'))!,
            new Uint8Array([1, 2, 3, 4, 5]),
          ),
        ),
      );
    });
    expect(s.code).toBe(4400);
    expect(s.error?.message).toMatch(/cannot apply sync message/);
    await goodEdgeStillSyncs();
  });

  it('an oversized frame closes that connection (1009) and nothing else', async () => {
    const r = await rawSession('tok-a', (ws) => {
      ws.send(hello());
      ws.once('message', () => ws.send(Buffer.alloc(200 * 1024, 1)));
    });
    expect(r.code).toBe(1009);
    await goodEdgeStillSyncs();
  });
});

describe('hellos of one turn answered together', () => {
  it('one read-ahead and one record for all of them; a frame before the welcome is refused', async () => {
    const before: { edge: string; fresh: boolean }[][] = [];
    const connected: string[][] = [];
    const batched = await listenSyncServer({
      store: hubStore,
      hubVersion: 'test',
      authenticate: (t) => (t.startsWith('tok-') ? { edge: edgeName(t.slice(4)) } : null),
      beforeWelcomes: (edges) => before.push(edges),
      onConnect: (conns) => connected.push(conns.map((c) => c.edge)),
    });
    const names = ['batch-1', 'batch-2', 'batch-3'];
    const sockets = names.map((n) => new WebSocket(batched.url, { headers: { authorization: `Bearer tok-${n}` } }));
    try {
      await Promise.all(sockets.map((ws) => new Promise((r) => ws.once('open', r))));
      const welcomes = sockets.map((ws) => new Promise<string>((r) => ws.once('message', (d) => r(d.toString()))));
      // Sent in one turn of this (the hub's) event loop: the hub reads them in one turn too.
      for (const ws of sockets) ws.send(hello());
      for (const w of await Promise.all(welcomes)) expect(JSON.parse(w).type).toBe('welcome');
      expect(before).toEqual([names.map((edge) => ({ edge, fresh: true }))]);
      expect(connected).toEqual([names]);
      // The edge waits for the welcome before anything else; a peer that does not is refused.
      const early = await new Promise<{ code: number; message: string }>((resolve) => {
        const ws = new WebSocket(batched.url, { headers: { authorization: 'Bearer tok-batch-4' } });
        let message = '';
        ws.on('open', () => {
          ws.send(hello());
          ws.send(encodeControl({ type: 'heartbeat', at: Date.now() }));
        });
        ws.on('message', (d) => {
          const m = JSON.parse(d.toString()) as { type: string; message: string };
          if (m.type === 'error') message = m.message;
        });
        ws.on('close', (code) => resolve({ code, message }));
        ws.on('error', () => undefined);
      });
      expect(early.code).toBe(4400);
      expect(early.message).toMatch(/before the welcome/);
      expect(connected.flat()).not.toContain('batch-4');
    } finally {
      for (const ws of sockets) ws.terminate();
      await batched.close();
    }
  });
});

describe('admission control', () => {
  it('beyond the handshake limit upgrades wait in line; beyond the line they get 503 with Retry-After', async () => {
    const busy = await listenSyncServer({
      store: hubStore,
      hubVersion: 'test',
      maxPendingHandshakes: 1,
      maxQueuedUpgrades: 1,
      authenticate: (t) => (t === 'tok-a' ? { edge: A_EDGE } : null),
    });
    const u = busy.url;
    const sockets: WebSocket[] = [];
    try {
      // The first one is admitted and stays in its handshake (no hello yet).
      const first = new WebSocket(u, { headers: { authorization: 'Bearer tok-a' } });
      sockets.push(first);
      await new Promise((r) => first.once('open', r));
      // The second waits in line: no answer to its upgrade yet.
      const second = new WebSocket(u, { headers: { authorization: 'Bearer tok-a' } });
      sockets.push(second);
      let secondOpen = false;
      second.once('open', () => (secondOpen = true));
      second.on('error', () => undefined);
      // The third finds the line full.
      const third = await new Promise<{ status: number; retry: string | undefined }>((resolve) => {
        const ws = new WebSocket(u, { headers: { authorization: 'Bearer tok-a' } });
        ws.on('unexpected-response', (_q, res) =>
          resolve({ status: res.statusCode ?? 0, retry: res.headers['retry-after'] as string | undefined }),
        );
        ws.on('error', () => undefined);
      });
      expect(third.status).toBe(503);
      expect(Number(third.retry)).toBeGreaterThanOrEqual(1);
      expect(secondOpen).toBe(false);
      // Once the first finishes its handshake, the one in line is let in.
      first.send(hello());
      await new Promise((r) => first.once('message', r));
      await waitFor(() => secondOpen, { what: 'the queued upgrade admitted' });
    } finally {
      for (const ws of sockets) ws.terminate();
      await busy.close();
    }
  });
});

describe('credentials that cannot be checked', () => {
  it('get 503 with Retry-After, not 401: the edge comes back instead of being told to enroll again', async () => {
    const away = await listenSyncServer({
      store: hubStore,
      hubVersion: 'test',
      authenticate: () => {
        throw new Error('the database at postgres://hub is unreachable');
      },
    });
    try {
      const r = await new Promise<{ status: number; retry: string | undefined; body: string }>((resolve) => {
        const ws = new WebSocket(away.url, { headers: { authorization: 'Bearer tok-a' } });
        ws.on('unexpected-response', (_q, res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, retry: res.headers['retry-after'] as string | undefined, body }),
          );
        });
        ws.on('error', () => undefined);
      });
      expect(r.status).toBe(503);
      expect(r.retry).toBe('5');
      expect(r.body).toMatch(/cannot check edge credentials now/);
    } finally {
      await away.close();
    }
  });
});
