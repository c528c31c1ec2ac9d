// The masks of the frames an edge sends (sync/client.ts zeroMask): all zero inside TLS, where no
// proxy sees the bytes and `ws` then skips masking on both ends; random over cleartext, where
// RFC 6455 needs them. Read off the wire by a server that takes the upgrade by hand.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { edgeName } from '../core/ids.js';
import { ensureHubTls } from '../hub/tls.js';
import { tempDir } from '../test/helpers.js';
import { SyncClient } from './client.js';
import { ReplicaStore } from './store.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A server that answers the WebSocket upgrade itself and resolves with the mask of the first frame the client sends. */
async function firstMask(server: http.Server): Promise<{ port: number; mask: Promise<Buffer> }> {
  const mask = new Promise<Buffer>((resolve, reject) => {
    server.on('upgrade', (req: http.IncomingMessage, socket: Socket) => {
      const accept = createHash('sha1')
        .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
        .digest('base64');
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
      );
      let got = Buffer.alloc(0);
      socket.on('data', (c: Buffer) => {
        got = Buffer.concat([got, c]);
        if (got.length < 2) return;
        if (!(got[1]! & 0x80)) return reject(new Error('the client sent an unmasked frame'));
        const len = got[1]! & 0x7f;
        const at = len === 126 ? 4 : len === 127 ? 10 : 2;
        if (got.length < at + 4) return;
        resolve(got.subarray(at, at + 4));
        socket.destroy();
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return { port: (server.address() as AddressInfo).port, mask };
}

async function clientTo(url: string, ca?: string): Promise<void> {
  const dir = tempDir('outpost-mask-');
  const store = await ReplicaStore.open(path.join(dir, 'edge.db'));
  const client = new SyncClient({
    url,
    token: 'tok',
    edge: edgeName('e1'),
    store,
    agentVersion: 'test',
    ...(ca ? { ca } : {}),
  });
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => store.close());
  cleanups.push(() => client.stop());
  client.start();
}

it('an edge masks its frames with zeros inside TLS (wss://)', async () => {
  const dir = tempDir('outpost-mask-tls-');
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const tls = await ensureHubTls(dir, { hosts: [] });
  const { port, mask } = await firstMask(https.createServer({ cert: tls.certPem, key: tls.keyPem }));
  await clientTo(`wss://127.0.0.1:${port}/api/v1/sync`, tls.caPem);
  expect([...(await mask)]).toEqual([0, 0, 0, 0]);
});

it('an edge masks its frames at random over cleartext (ws://), as RFC 6455 requires', async () => {
  const { port, mask } = await firstMask(http.createServer());
  await clientTo(`ws://127.0.0.1:${port}/api/v1/sync`);
  // Four random bytes all zero: one chance in 2^32.
  expect([...(await mask)]).not.toEqual([0, 0, 0, 0]);
});
