/**
 * @module The consuming edge's end of interconnect (docs/interconnect.md): the follower of the
 * `interconnect` order (core/orders/interconnect.ts). For each ServiceImport that selects this edge
 * it listens on 127.0.0.1:PORT (and on the addresses the driver's workloads reach the host at: the
 * podman bridge's gateway); each connection it accepts becomes a stream over this edge's
 * connection to the hub (which authorises it and relays it to an edge serving the export), piped
 * both ways: the stream's credit is the backpressure, an END is a half-close.
 *
 * A connection the hub refuses (no edge serving the export is online, the export does not allow
 * this project), or accepted while the hub is away, is reset at once (the client sees the
 * connection reset, never a hang), and the reason goes into the report, where the import's status
 * shows it. The report is written at most every INTERCONNECT_REPORT_MS.
 */
import net from 'node:net';
import { mailboxDocId, type EdgeName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import type { ReportDoc, SpecDoc } from '../../core/mailbox.js';
import {
  INTERCONNECT_ORDER,
  INTERCONNECT_REPORT_MS,
  InterconnectConnected,
  readSpecInterconnect,
  setReportInterconnect,
  type ImportReport,
} from '../../core/orders/interconnect.js';
import type { ReplicaStore } from '../../sync/store.js';
import { TunnelError, type TunnelStream } from '../../sync/tunnel.js';
import type { SpecFollower } from '../orders/followers.js';

const log = createLogger('edge:interconnect');

export interface InterconnectListenersDeps {
  edge: EdgeName;
  store: ReplicaStore;
  /** Opens a stream to the hub over this edge's connection; throws when it is not connected. */
  open(header: Record<string, unknown>): TunnelStream;
  /**
   * Where else the listeners bind besides 127.0.0.1 (which host-network workloads share): the
   * addresses of this host the driver's workloads reach (the podman bridge's gateway,
   * `Driver.hostAddresses`). Asked once; until it answered nothing listens.
   */
  hostAddresses?: () => Promise<string[]>;
}

interface Listener {
  port: number;
  /** One server per address; empty while not bound. */
  servers: net.Server[];
  sockets: Set<net.Socket>;
  /** Connect latencies of the last LATENCY_SAMPLES connections, ms. */
  latencies: number[];
  report: ImportReport;
}

/** How many connect latencies the percentiles are taken over. */
const LATENCY_SAMPLES = 1000;

/** p50 and p99 of the samples (nearest rank). */
export function percentiles(samples: readonly number[]): { connectP50Ms: number; connectP99Ms: number } {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] ?? 0;
  return { connectP50Ms: at(0.5), connectP99Ms: at(0.99) };
}

export class InterconnectListeners implements SpecFollower {
  readonly kind = INTERCONNECT_ORDER.name;
  private readonly listeners = new Map<string, Listener>();
  private readonly specId;
  private readonly reportId;
  private reportTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** 127.0.0.1 and the driver's addresses, once known. */
  private hosts: string[] | undefined;
  private hostsAsked: Promise<void> | undefined;

  constructor(private readonly d: InterconnectListenersDeps) {
    this.specId = mailboxDocId(d.edge, 'spec');
    this.reportId = mailboxDocId(d.edge, 'report');
  }

  check(): void {
    if (this.stopped) return;
    if (!this.hosts) {
      this.hostsAsked ??= (this.d.hostAddresses?.() ?? Promise.resolve([]))
        .catch((err: unknown) => {
          log.warn(
            { err },
            "the driver's workload-facing addresses are unknown; interconnect listens on 127.0.0.1 only",
          );
          return [];
        })
        .then((extra) => {
          this.hosts = ['127.0.0.1', ...extra.filter((a) => a !== '127.0.0.1')];
          this.check();
        });
      return;
    }
    const spec = this.d.store.get<SpecDoc>(this.specId);
    const want = new Map(readSpecInterconnect(spec ?? {}).map((l) => [l.import, l.port]));
    for (const [name, l] of [...this.listeners])
      if (want.get(name) !== l.port) {
        this.close(l);
        this.listeners.delete(name);
      }
    for (const [name, port] of want) {
      const l = this.listeners.get(name);
      if (!l) this.listen(name, port);
      else if (!l.servers.length) this.bind(name, l);
    }
    this.changed();
  }

  /** Closes every listener and the connections through them. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.reportTimer);
    for (const l of this.listeners.values()) this.close(l);
    this.listeners.clear();
  }

  private listen(name: string, port: number): void {
    const l: Listener = {
      port,
      servers: [],
      sockets: new Set(),
      latencies: [],
      report: { port, listening: false, open: 0, total: 0, refused: 0, failed: 0, bytesIn: 0, bytesOut: 0 },
    };
    this.listeners.set(name, l);
    this.bind(name, l);
  }

  /** Listens on every address; one that fails closes the others (listening is all or nothing). */
  private bind(name: string, l: Listener): void {
    const hosts = this.hosts ?? ['127.0.0.1'];
    let bound = 0;
    let failed = false;
    for (const host of hosts) {
      const server = net.createServer({ allowHalfOpen: true }, (sock) => this.accept(name, l, sock));
      l.servers.push(server);
      server.once('error', (err) => {
        if (failed) return;
        failed = true;
        for (const s of l.servers) s.close();
        l.servers = [];
        l.report = { ...l.report, listening: false, error: `cannot listen on ${host}:${l.port}: ${err.message}` };
        log.warn(
          { err, import: name, host, port: l.port },
          'interconnect listener failed; retried at the next change of the spec',
        );
        this.changed();
      });
      server.listen(l.port, host, () => {
        if (failed || ++bound < hosts.length) return;
        const { error: _gone, ...rest } = l.report;
        l.report = { ...rest, listening: true };
        log.info({ import: name, hosts, port: l.port }, 'interconnect listening');
        this.changed();
      });
    }
  }

  private close(l: Listener): void {
    for (const s of l.servers) s.close();
    l.servers = [];
    for (const s of l.sockets) s.destroy();
    l.sockets.clear();
  }

  private accept(name: string, l: Listener, sock: net.Socket): void {
    sock.setNoDelay(true);
    const accepted = Date.now();
    let connected = false;
    const failed = (message: string): void => {
      l.report = {
        ...l.report,
        ...(connected ? { failed: l.report.failed + 1 } : { refused: l.report.refused + 1 }),
        lastError: message,
        lastErrorAt: Date.now(),
      };
      this.changed();
    };
    // Reset, not a clean end: the client must not take a refusal for an empty answer.
    const reset = () => (sock.destroyed ? undefined : sock.resetAndDestroy());
    l.report = { ...l.report, total: l.report.total + 1 };
    let s: TunnelStream;
    try {
      s = this.d.open({ type: 'interconnect', import: name });
    } catch (err) {
      failed(`the hub is not connected: ${(err as Error).message}`);
      sock.on('error', () => undefined);
      reset();
      return;
    }
    l.sockets.add(sock);
    l.report = { ...l.report, open: l.report.open + 1 };
    this.changed();
    s.on('meta', (m) => {
      if (connected || !InterconnectConnected.safeParse(m).success) return;
      connected = true;
      l.latencies.push(Date.now() - accepted);
      if (l.latencies.length > LATENCY_SAMPLES) l.latencies.shift();
      l.report = { ...l.report, ...percentiles(l.latencies) };
      this.changed();
    });
    s.on('error', (err) => {
      failed(err.message);
      reset();
    });
    s.once('close', () => {
      l.report = { ...l.report, bytesOut: l.report.bytesOut + s.bytesOut, bytesIn: l.report.bytesIn + s.bytesIn };
      this.changed();
    });
    sock.on('error', () => {
      if (!s.destroyed) s.destroy(new TunnelError('aborted', 'the consuming client reset the connection'));
    });
    sock.on('close', () => {
      l.sockets.delete(sock);
      l.report = { ...l.report, open: Math.max(0, l.report.open - 1) };
      this.changed();
      if (!s.destroyed && !(s.writableEnded && s.readableEnded))
        s.destroy(new TunnelError('aborted', 'the consuming client closed the connection'));
    });
    sock.pipe(s);
    s.pipe(sock);
  }

  /** Writes the report soon, at most every INTERCONNECT_REPORT_MS. */
  private changed(): void {
    if (this.reportTimer || this.stopped) return;
    this.reportTimer = setTimeout(() => {
      this.reportTimer = undefined;
      if (this.stopped) return;
      const body = Object.fromEntries([...this.listeners].map(([name, l]) => [name, l.report]));
      try {
        this.d.store.change<ReportDoc>(this.reportId, (d) => setReportInterconnect(d, body));
      } catch (err) {
        log.warn({ err }, 'writing the interconnect report failed; written again at the next change');
      }
    }, INTERCONNECT_REPORT_MS);
    this.reportTimer.unref();
  }
}
