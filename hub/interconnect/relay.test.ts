/**
 * The relay's connect path (hub/interconnect/relay.ts, early.ts) over real tunnel muxes joined in
 * memory (test/fixtures/mux-link.ts): a consumer's bytes go to the serving edge with the open, an
 * edge that fails before it is connected loses none of them for the next, and what a connection
 * keeps before it is connected is bounded.
 */
import { describe, expect, it, vi } from 'vitest';
import type { ServiceExport, ServiceImport } from '../../core/resources.js';
import { INITIAL_WINDOW, TunnelError, type TunnelStream } from '../../sync/tunnel.js';
import { muxLink } from '../../test/fixtures/mux-link.js';
import { waitFor } from '../../test/helpers.js';
import { ADMISSION_TTL_MS } from './admission.js';
import { EARLY_LIMIT } from './early.js';
import type { InterconnectPlanner } from './index.js';
import { InterconnectRelay, type RelayDeps } from './relay.js';
import type { InterconnectStats } from './stats.js';

const exp = {
  kind: 'ServiceExport',
  metadata: { name: 'echo', project: 'default', labels: {} },
  spec: { workload: 'echo', port: 7000, idleTimeoutSeconds: 60 },
} as unknown as ServiceExport;
const imp = { kind: 'ServiceImport', metadata: { name: 'echo', project: 'default', labels: {} } } as ServiceImport;

/**
 * A relay whose consumer is edge `a` and whose serving edges are `b` then `c` (both Ready, same
 * region, so tried in that order on the first connection), each answering its streams with `serve`.
 */
function fleet(
  serve: Record<'b' | 'c', (s: TunnelStream) => void>,
  objects = { imp: imp as ServiceImport | undefined },
) {
  const serving = { b: muxLink({ onEdgeStream: serve.b }), c: muxLink({ onEdgeStream: serve.c }) };
  const stats = { refused() {}, connected() {}, notConnected() {}, closed() {} } as unknown as InterconnectStats;
  const planner = {
    selected: () => ['a'],
    exportOf: () => ({ exp, project: 'default' }),
    servingEdges: () => ['b', 'c'].map((edge) => ({ edge, online: true, phase: 'Ready' })),
  } as unknown as InterconnectPlanner;
  /** Reads of each kind of object. */
  const reads = new Map<string, number>();
  const deps: RelayDeps = {
    planner,
    stats,
    objects: {
      get: (kind: string) => {
        reads.set(kind, (reads.get(kind) ?? 0) + 1);
        return kind === 'ServiceImport'
          ? objects.imp
          : kind === 'Edge'
            ? { metadata: { labels: { region: 'r' } } }
            : undefined;
      },
    } as unknown as RelayDeps['objects'],
    edges: { get: () => ({ approved: true, project: 'default' }) } as unknown as RelayDeps['edges'],
    openTo: (edge, header) => serving[edge as 'b' | 'c'].hub.open(header),
  };
  const relay = new InterconnectRelay(deps);
  const consumer = muxLink({ onHubStream: (s) => relay.serve('a' as never, s) });
  return { relay, reads, open: () => consumer.edge.open({ type: 'interconnect', import: 'echo' }) };
}

/** Everything a stream carries until its END, and its META frames. */
function collect(s: TunnelStream) {
  const chunks: Buffer[] = [];
  const metas: unknown[] = [];
  s.on('data', (b: Buffer) => chunks.push(b));
  s.on('meta', (m) => metas.push(m));
  const ended = new Promise<void>((resolve, reject) => {
    s.once('end', resolve);
    s.once('error', reject);
  });
  return { bytes: () => Buffer.concat(chunks), metas, ended };
}

/** A serving edge that echoes once its workload is "connected". */
const echo = (s: TunnelStream) => {
  s.sendMeta({ connected: true });
  s.pipe(s);
};

describe('the interconnect relay at open', () => {
  it("sends the consumer's first bytes to the serving edge with the open, before it says it is connected", async () => {
    // The serving edge says connected only once the request is there: without the bytes travelling
    // with the open, the relay would wait for it forever.
    const seen: Buffer[] = [];
    const { open } = fleet({
      b: (s) => {
        s.once('data', (b: Buffer) => {
          seen.push(b);
          s.sendMeta({ connected: true });
          s.write(b);
          s.end();
        });
      },
      c: echo,
    });
    const s = open();
    const got = collect(s);
    s.end(Buffer.from('GET / HTTP/1.0\r\n\r\n'));
    await got.ended;
    expect(Buffer.concat(seen).toString()).toBe('GET / HTTP/1.0\r\n\r\n');
    expect(got.bytes().toString()).toBe('GET / HTTP/1.0\r\n\r\n');
    expect(got.metas).toContainEqual({ connected: true, edge: 'b' });
  });

  it('fails over to the next edge with every byte the first one was sent before it failed', async () => {
    const atB: Buffer[] = [];
    const atC: Buffer[] = [];
    const { open } = fleet({
      b: (s) =>
        s.on('data', (b: Buffer) => {
          atB.push(b);
          s.destroy(new TunnelError('unavailable', 'workload echo port 7000: connect ECONNREFUSED'));
        }),
      c: (s) => {
        s.on('data', (b: Buffer) => atC.push(b));
        echo(s);
      },
    });
    const s = open();
    const got = collect(s);
    s.write('one,');
    s.write('two,');
    s.end('three');
    await got.ended;
    expect(Buffer.concat(atB).length).toBeGreaterThan(0);
    expect(Buffer.concat(atC).toString()).toBe('one,two,three');
    expect(got.bytes().toString()).toBe('one,two,three');
    expect(got.metas).toContainEqual({ connected: true, edge: 'c' });
  });

  it('tells the consumer the connection was made before it passes on a failure that came in the same read', async () => {
    // A workload that resets at the first bytes: the serving edge says connected, then fails, and
    // both frames reach the hub together.
    const { open } = fleet({
      b: (s) => {
        s.sendMeta({ connected: true });
        queueMicrotask(() =>
          queueMicrotask(() => s.destroy(new TunnelError('aborted', 'workload echo port 7000: read ECONNRESET'))),
        );
      },
      c: echo,
    });
    const s = open();
    const got = collect(s);
    s.write('hello');
    await expect(got.ended).rejects.toThrow(/ECONNRESET/);
    expect(got.metas).toContainEqual({ connected: true, edge: 'b' });
  });

  it('keeps at most about EARLY_LIMIT of a consumer while no edge is connected, and then delivers all of it', async () => {
    let connect!: () => void;
    const { relay, open } = fleet({
      b: (s) => {
        connect = () => echo(s);
      },
      c: echo,
    });
    const s = open();
    const got = collect(s);
    const payload = Buffer.alloc(256 * EARLY_LIMIT, 0x5a);
    for (let i = 0; i < payload.length; i++) payload[i] = i % 251;
    s.end(payload);
    await waitFor(() => connect !== undefined && relay.bufferedBytes() >= EARLY_LIMIT, {
      what: 'the early bytes held by the relay',
    });
    // Wait a little for more to arrive, had the consumer not been paused.
    await new Promise((r) => setTimeout(r, 100));
    // The consumer stream's read window may sit in its buffer too (sync/tunnel-stream.ts).
    expect(relay.bufferedBytes()).toBeLessThan(payload.length);
    connect();
    await got.ended;
    expect(got.bytes().equals(payload)).toBe(true);
  });

  it('reads the objects once for a burst of connections, again after ADMISSION_TTL_MS, and at once after they change', async () => {
    const objects = { imp: imp as ServiceImport | undefined };
    const { relay, reads, open } = fleet({ b: echo, c: echo }, objects);
    const roundTrip = async () => {
      const s = open();
      const got = collect(s);
      s.end('x');
      await got.ended;
      return got.bytes().toString();
    };
    for (let i = 0; i < 20; i++) expect(await roundTrip()).toBe('x');
    // The import, and the region of the consumer and of the two serving edges: once.
    expect(reads.get('ServiceImport')).toBe(1);
    expect(reads.get('Edge')).toBe(3);

    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + ADMISSION_TTL_MS);
      expect(await roundTrip()).toBe('x');
      expect(reads.get('ServiceImport')).toBe(2);
    } finally {
      vi.useRealTimers();
    }

    // The import deleted: the next connection is refused at once, not within the TTL.
    objects.imp = undefined;
    relay.reauthorise();
    await expect(roundTrip()).rejects.toThrow(/ServiceImport echo not found in project default/);
    expect(reads.get('ServiceImport')).toBe(3);
  });
});
