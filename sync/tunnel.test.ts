import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { MAX_BULK_DATA_BYTES, TUNNEL_DATA } from './tunnel-frames.js';
import {
  INITIAL_WINDOW,
  isBulk,
  MAX_BULK_WINDOW,
  MAX_DATA_BYTES,
  maxWindowFor,
  TunnelError,
  TunnelMux,
  type TunnelStream,
} from './tunnel.js';

/**
 * Two muxes joined by an asynchronous in-memory link that counts what is in flight, like a socket
 * buffer. `socketLike`: as a socket, the link reads the sender's buffer when it writes it, later,
 * and only then calls `written`, after which the sender may fill the same buffer again.
 */
function pair(onStream: (s: TunnelStream) => void, opts: { socketLike?: boolean } = {}) {
  const link = { inFlight: 0 };
  let hub!: TunnelMux;
  let edge!: TunnelMux;
  const deliver = (to: () => TunnelMux) => (p: Buffer, written?: () => void) => {
    link.inFlight += p.length;
    setImmediate(() => {
      // A socket holds the sender's buffer until it has written it, then lets it go.
      const bytes = opts.socketLike ? Buffer.from(p) : p;
      if (opts.socketLike) written?.();
      link.inFlight -= p.length;
      to().receive(bytes);
    });
    return true;
  };
  hub = new TunnelMux({ send: deliver(() => edge), bufferedAmount: () => link.inFlight });
  edge = new TunnelMux({
    side: 'edge',
    send: deliver(() => hub),
    bufferedAmount: () => link.inFlight,
    onStream: (s) => {
      s.on('error', () => undefined);
      onStream(s);
    },
  });
  return { hub, edge, link };
}

describe('TunnelMux', () => {
  it('carries 8 MB intact; a consumer that stops reading stops the sender at one window', async () => {
    const total = 8 * 1024 * 1024;
    let producer!: TunnelStream;
    const { hub, edge } = pair((s) => {
      producer = s;
      const chunk = Buffer.alloc(64 * 1024, 7);
      let sent = 0;
      const pump = (): void => {
        while (sent < total) {
          sent += chunk.length;
          if (!s.write(chunk)) return void s.once('drain', pump);
        }
        s.end();
      };
      pump();
    });
    const s = hub.open({ type: 'test' });
    s.end();
    s.pause();
    await new Promise((r) => setTimeout(r, 200));
    // Nobody read: the edge sent at most one window, and its write buffers are bounded too.
    expect(producer.bytesOut - producer.writableLength).toBeLessThanOrEqual(INITIAL_WINDOW + 2 * 64 * 1024);
    expect(s.readableLength).toBeLessThanOrEqual(INITIAL_WINDOW);
    let got = 0;
    s.on('data', (c: Buffer) => (got += c.length));
    s.resume();
    await once(s, 'end');
    expect(got).toBe(total);
    await new Promise((r) => setTimeout(r, 20));
    expect(hub.size).toBe(0);
    expect(edge.size).toBe(0);
  });

  it('a stream of TCP bytes grows its window while its consumer keeps up, and a stall holds at most the grown window; other streams keep one', async () => {
    const total = 24 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 3);
    const producers: TunnelStream[] = [];
    const { hub, link } = pair((s) => {
      producers.push(s);
      let sent = 0;
      const pump = (): void => {
        while (sent < total) {
          sent += chunk.length;
          if (!s.write(chunk)) return void s.once('drain', pump);
        }
        s.end();
      };
      pump();
    });
    const run = async (type: string) => {
      const s = hub.open({ type, workload: 'w', port: 1 });
      s.end();
      const producer = await new Promise<TunnelStream>((r) => {
        const t = setInterval(() => producers.length && (clearInterval(t), r(producers.shift()!)));
      });
      let got = 0;
      let stalled = false;
      let maxWindow = 0;
      s.on('data', (c: Buffer) => {
        got += c.length;
        maxWindow = Math.max(maxWindow, s.recvWindow);
        // Half way the consumer stops reading, until the producer has been stopped by its credit.
        if (!stalled && got >= total / 2) {
          stalled = true;
          s.pause();
        }
      });
      const stopped = new Promise<number>((resolve) => {
        const t = setInterval(() => {
          // Stopped: nothing in flight either way, and the producer holds bytes it has no credit for.
          if (stalled && link.inFlight === 0 && producer.queue.length > 0 && producer.sendWindow === 0)
            (clearInterval(t), resolve(s.readableLength));
        }, 5);
      });
      const heldWhenStopped = await stopped;
      s.resume();
      await once(s, 'end');
      expect(got).toBe(total);
      return { maxWindow, heldWhenStopped };
    };
    const bulk = await run('tcp');
    expect(bulk.maxWindow).toBeGreaterThan(INITIAL_WINDOW);
    expect(bulk.maxWindow).toBeLessThanOrEqual(MAX_BULK_WINDOW);
    expect(bulk.heldWhenStopped).toBeLessThanOrEqual(bulk.maxWindow);
    const other = await run('logs');
    expect(other.maxWindow).toBe(INITIAL_WINDOW);
    expect(other.heldWhenStopped).toBeLessThanOrEqual(INITIAL_WINDOW);
  });

  it("a bulk stream's queued writes go out together (up to MAX_BULK_DATA_BYTES a frame), another stream's one write a frame", async () => {
    const frames: Buffer[] = [];
    const { hub } = pair(() => undefined);
    // The DATA bodies the hub sends, seen on the link.
    const send = (hub as unknown as { opts: { send: (p: Buffer, w?: () => void) => boolean } }).opts;
    const inner = send.send;
    send.send = (p, w) => {
      if (p[0] === TUNNEL_DATA) frames.push(Buffer.from(p.subarray(5)));
      return inner(p, w);
    };
    const bulk = hub.open({ type: 'interconnect', export: 'x' });
    for (let i = 0; i < 20; i++) bulk.write(Buffer.alloc(16 * 1024, i));
    await new Promise((r) => setTimeout(r, 20));
    // The first write goes alone; the 19 written meanwhile together, as far as the credit goes (the
    // far end reads nothing here, so no more credit comes).
    expect(frames.map((f) => f.length)).toEqual([16 * 1024, INITIAL_WINDOW - 16 * 1024]);
    expect(Math.max(...frames.map((f) => f.length))).toBeLessThanOrEqual(MAX_BULK_DATA_BYTES);
    frames.length = 0;
    // Exec's output frames each begin with their channel byte: a write is never joined to another.
    const exec = hub.open({ type: 'exec', workload: 'w' });
    for (const ch of [1, 2, 1]) exec.write(Buffer.from([ch, 0x61, 0x62]));
    exec.write(Buffer.alloc(MAX_DATA_BYTES + 10, 1));
    await new Promise((r) => setTimeout(r, 20));
    expect(frames.map((f) => f.length)).toEqual([3, 3, 3, MAX_DATA_BYTES, 10]);
    expect(frames.slice(0, 3).map((f) => f[0])).toEqual([1, 2, 1]);
  });

  it('carries 16 MB of a bulk stream intact and in order while the transport reuses written frames', async () => {
    const total = 16 * 1024 * 1024;
    const pattern = (at: number, n: number) => {
      const b = Buffer.allocUnsafe(n);
      for (let i = 0; i < n; i++) b[i] = ((at + i) * 7 + ((at + i) >> 12)) & 0xff;
      return b;
    };
    const { hub } = pair(
      (s) => {
        let sent = 0;
        const pump = (): void => {
          while (sent < total) {
            const n = Math.min(100_003, total - sent);
            const ok = s.write(pattern(sent, n));
            sent += n;
            if (!ok) return void s.once('drain', pump);
          }
          s.end();
        };
        pump();
      },
      { socketLike: true },
    );
    const s = hub.open({ type: 'tcp', workload: 'w', port: 1 });
    s.end();
    const got: Buffer[] = [];
    s.on('data', (c: Buffer) => got.push(c));
    await once(s, 'end');
    const all = Buffer.concat(got);
    expect(all.length).toBe(total);
    expect(all.equals(pattern(0, total))).toBe(true);
  });

  it('blob transfers are bulk both ways; a download grows its window at the edge, an upload keeps 256 KiB at the hub', () => {
    for (const type of ['blob-get', 'blob-put', 'interconnect', 'tcp']) expect(isBulk({ type })).toBe(true);
    for (const type of ['http', 'logs', 'exec', 'action']) expect(isBulk({ type })).toBe(false);
    expect(maxWindowFor({ type: 'blob-get' }, 'edge')).toBe(MAX_BULK_WINDOW);
    expect(maxWindowFor({ type: 'blob-get' }, 'hub')).toBe(INITIAL_WINDOW);
    // Many edges upload at once: the hub's share of each stays one initial window.
    expect(maxWindowFor({ type: 'blob-put' }, 'hub')).toBe(INITIAL_WINDOW);
    expect(maxWindowFor({ type: 'tcp' }, 'hub')).toBe(MAX_BULK_WINDOW);
  });

  it('a reset on one side fails the other with its code and message, and frees both', async () => {
    const { hub, edge } = pair((s) => s.destroy(new TunnelError('forbidden', 'port 22 is not declared')));
    const s = hub.open({ type: 'test' });
    const [err] = (await once(s, 'error')) as [TunnelError];
    expect(err.code).toBe('forbidden');
    expect(err.message).toBe('port 22 is not declared');
    expect(hub.size).toBe(0);
    expect(edge.size).toBe(0);
  });

  it('a stream past its byte budget or deadline is reset', async () => {
    const { hub } = pair((s) => s.write(Buffer.alloc(100_000)));
    const over = hub.open({ type: 'test' }, { maxBytes: 50_000 });
    over.resume();
    expect(((await once(over, 'error')) as [TunnelError])[0].code).toBe('budget');
    const slow = hub.open({ type: 'test' }, { deadlineMs: 50 });
    slow.resume();
    expect(((await once(slow, 'error')) as [TunnelError])[0].code).toBe('deadline');
  });

  it('closing the mux (connection lost) fails every stream with `disconnected`', async () => {
    const { hub } = pair(() => undefined);
    const a = hub.open({ type: 'test' });
    const b = hub.open({ type: 'test' });
    const errs = Promise.all([once(a, 'error'), once(b, 'error')]);
    hub.close('edge e1 disconnected');
    for (const [e] of (await errs) as unknown as [TunnelError][]) expect(e.code).toBe('disconnected');
    expect(hub.size).toBe(0);
  });

  it('a malformed frame throws (the caller closes the connection)', () => {
    const { hub } = pair(() => undefined);
    expect(() => hub.receive(Buffer.from([1, 2]))).toThrow(/truncated/);
    expect(() => hub.receive(Buffer.from([99, 0, 0, 0, 1]))).toThrow(/unknown tunnel frame kind/);
  });
});
