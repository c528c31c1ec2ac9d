import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { holdTurn, noteSocket } from './turn-writes.js';

const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((c) => c()));

/** A client WebSocket connected to a server that collects what it receives. */
async function pair(): Promise<{ client: WebSocket; received: string[] }> {
  const server = http.createServer();
  const wss = new WebSocketServer({ server });
  const received: string[] = [];
  wss.on('connection', (ws) => ws.on('message', (m) => received.push(String(m))));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  client.once('upgrade', (res) => noteSocket(client, res.socket));
  await new Promise((r) => client.once('open', r));
  closers.push(() => {
    client.terminate();
    wss.close();
    server.close();
  });
  return { client, received };
}

const socketOf = (ws: WebSocket) => (ws as unknown as { _socket: import('node:net').Socket })._socket;

describe('the frames of one turn', () => {
  it('are held until the turn is done, then written together, in order', async () => {
    const { client, received } = await pair();
    holdTurn(client);
    client.send('one');
    holdTurn(client);
    client.send('two');
    client.send('three');
    // Still in this turn: nothing has gone to the kernel.
    expect(socketOf(client).writableLength).toBeGreaterThan(0);
    await new Promise((r) => process.nextTick(r));
    expect(socketOf(client).writableLength).toBe(0);
    await expect.poll(() => received).toEqual(['one', 'two', 'three']);
  });

  it('leave at once without it', async () => {
    const { client, received } = await pair();
    client.send('one');
    expect(socketOf(client).writableLength).toBe(0);
    await expect.poll(() => received).toEqual(['one']);
  });
});
