/**
 * @module What this hub process relayed for each ServiceExport, by serving edge (docs/interconnect.md):
 * connections open and made, failures with the last reason, bytes; and the Prometheus series of
 * the relay. Held in memory: each hub replica counts the connections it relayed (the consumers'
 * own figures, which every replica reads, are in their reports: hub/state/interconnect.ts).
 */
import client from 'prom-client';

export interface ServedCounts {
  open: number;
  total: number;
  failed: number;
  bytesIn: number;
  bytesOut: number;
  lastError?: string;
  lastErrorAt?: number;
}

export type RelayResult = 'connected' | 'refused' | 'failed';

export class InterconnectStats {
  private readonly byExport = new Map<string, Map<string, ServedCounts>>();
  private readonly connections?: client.Counter<'result'>;
  private readonly bytes?: client.Counter<'direction'>;
  private readonly connectSeconds?: client.Histogram;

  constructor(registry?: client.Registry, gauges?: { open(): number; buffered(): number }) {
    if (!registry) return;
    this.connections = new client.Counter({
      name: 'outpost_hub_interconnect_connections_total',
      help: 'Interconnect connections relayed by this hub, by result: connected, refused (at open), failed (after it was made)',
      labelNames: ['result'],
      registers: [registry],
    });
    this.bytes = new client.Counter({
      name: 'outpost_hub_interconnect_bytes_total',
      help: 'Interconnect bytes relayed, counted when a connection closes: to_service or to_client',
      labelNames: ['direction'],
      registers: [registry],
    });
    this.connectSeconds = new client.Histogram({
      name: 'outpost_hub_interconnect_connect_seconds',
      help: "Time from a consuming edge's stream reaching the hub to the serving edge connected to the workload",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    });
    if (gauges) {
      new client.Gauge({
        name: 'outpost_hub_interconnect_open_connections',
        help: 'Interconnect connections open through this hub now (connecting or relaying)',
        registers: [registry],
        collect() {
          this.set(gauges.open());
        },
      });
      new client.Gauge({
        name: 'outpost_hub_interconnect_buffered_bytes',
        help: "Bytes the relay holds in its streams' buffers now, all connections (bounded: a window and a write buffer per direction)",
        registers: [registry],
        collect() {
          this.set(gauges.buffered());
        },
      });
    }
  }

  private of(exp: string, edge: string): ServedCounts {
    let m = this.byExport.get(exp);
    if (!m) this.byExport.set(exp, (m = new Map()));
    let c = m.get(edge);
    if (!c) m.set(edge, (c = { open: 0, total: 0, failed: 0, bytesIn: 0, bytesOut: 0 }));
    return c;
  }

  refused(): void {
    this.connections?.inc({ result: 'refused' });
  }

  connected(exp: string, edge: string, seconds: number): void {
    const c = this.of(exp, edge);
    c.open++;
    c.total++;
    this.connections?.inc({ result: 'connected' });
    this.connectSeconds?.observe(seconds);
  }

  /** A serving edge failed before the connection was made (the relay tries the next one). */
  notConnected(exp: string, edge: string, why: string): void {
    const c = this.of(exp, edge);
    c.lastError = why;
    c.lastErrorAt = Date.now();
  }

  /** A relayed connection ended; `error` when it did not end cleanly. */
  closed(exp: string, edge: string, b: { toService: number; toClient: number }, error?: string): void {
    const c = this.of(exp, edge);
    c.open = Math.max(0, c.open - 1);
    c.bytesOut += b.toService;
    c.bytesIn += b.toClient;
    this.bytes?.inc({ direction: 'to_service' }, b.toService);
    this.bytes?.inc({ direction: 'to_client' }, b.toClient);
    if (error !== undefined) {
      c.failed++;
      c.lastError = error;
      c.lastErrorAt = Date.now();
      this.connections?.inc({ result: 'failed' });
    }
  }

  /** What this hub relayed of export `project/name`, by serving edge. */
  ofExport(exp: string): ReadonlyMap<string, ServedCounts> {
    return this.byExport.get(exp) ?? new Map();
  }
}
