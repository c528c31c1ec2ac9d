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
 *
 * Where the driver publishes imports by name (`Driver.publishImports`: the kubernetes driver's
 * Service and Endpoints, pointing at the address the pods reach this host at), the imports
 * listening on that address are published (publish.ts), and a problem doing so is the import's
 * `error` in the report.
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
import type { PublishedImport } from '../drivers/driver.js';
import { TunnelError, type TunnelStream } from '../../sync/tunnel.js';
import type { SpecFollower } from '../orders/followers.js';
import { ImportPublication } from './publish.js';

const log = createLogger('edge:interconnect');

export interface InterconnectListenersDeps {
  edge: EdgeName;
  store: ReplicaStore;
  /** Opens a stream to the hub over this edge's connection; throws when it is not connected. */
  open(header: Record<string, unknown>): TunnelStream;
  /**
   * Where else the listeners bind besides 127.0.0.1 (which host-network workloads share): the
   * addresses of this host the driver's workloads reach (the podman bridge's gateway,
   * `Driver.hostAddresses`). Best effort: 127.0.0.1 listens whatever happens there, and an address
   * that cannot be asked or bound yet (the bridge comes with the first pod) is tried again every
   * EXTRA_RETRY_MS, its error in the report meanwhile.
   */
  hostAddresses?: () => Promise<string[]>;
  /**
   * Publishes the imports listening on an address of `hostAddresses` to the driver's workloads by
   * name (`Driver.publishImports`), done again every `retryMs` (and `hostAddresses` asked again
   * as often while there are imports, so the objects follow the address).
   */
  publish?: (imports: PublishedImport[]) => Promise<Record<string, string>>;
  /** How often an address is tried again and the publication done again; default EXTRA_RETRY_MS. */
  retryMs?: number;
}

interface Listener {
  port: number;
  /** The 127.0.0.1 server, while bound. */
  server?: net.Server;
  /** Servers on the driver's addresses, by address. */
  extra: Map<string, net.Server>;
  /** Why an extra address does not listen (reported while 127.0.0.1 does). */
  extraError?: string;
  sockets: Set<net.Socket>;
  /**
   * Connect latencies of the last LATENCY_SAMPLES connections, ms: a ring, `latencyAt` the next
   * slot. Their percentiles are taken when the report is written, not per connection (a sort of
   * a thousand samples on each connect was a quarter of what the agent allocated per connection).
   */
  latencies: number[];
  latencyAt: number;
  report: ImportReport;
}

/** How often an address of the driver that could not be listened on is tried again (and imports published again). */
const EXTRA_RETRY_MS = 10_000;

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
  /** The driver's addresses, as last asked (hostAddresses). */
  private extraHosts: string[] = [];
  private extraAsking = false;
  /** Whether hostAddresses answered once: until then nothing is published. */
  private extraKnown = false;
  private extraTimer: NodeJS.Timeout | undefined;
  private readonly retryMs: number;
  private readonly publication: ImportPublication | undefined;

  constructor(private readonly d: InterconnectListenersDeps) {
    this.specId = mailboxDocId(d.edge, 'spec');
    this.reportId = mailboxDocId(d.edge, 'report');
    this.retryMs = d.retryMs ?? EXTRA_RETRY_MS;
    const publish = d.publish;
    this.publication = publish
      ? new ImportPublication({ publish, everyMs: this.retryMs, changed: () => this.changed() })
      : undefined;
  }

  check(): void {
    if (this.stopped) return;
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
      else if (!l.server) this.bind(name, l);
    }
    this.refreshExtra();
    this.publishNow();
    this.changed();
  }

  /**
   * Publishes each import listening on an address of the driver at the first such address, once
   * the addresses are known and no bind is under way (a bind not finished yet must not read as
   * an import to unpublish). With no import, nothing is to be published whatever the addresses.
   */
  private publishNow(): void {
    if (!this.publication) return;
    if (this.listeners.size === 0) return this.publication.set([]);
    if (!this.extraKnown) return;
    const out: PublishedImport[] = [];
    for (const [name, l] of this.listeners) {
      if ([...l.extra.values()].some((x) => !x.listening)) return;
      const address = this.extraHosts.find((h) => l.extra.get(h)?.listening);
      if (address) out.push({ name, port: l.port, address });
    }
    this.publication.set(out);
  }

  /** Asks the driver for its addresses again and listens on those not listened on yet. */
  private refreshExtra(): void {
    if (!this.d.hostAddresses || this.extraAsking || this.stopped || this.listeners.size === 0) return;
    this.extraAsking = true;
    clearTimeout(this.extraTimer);
    this.extraTimer = undefined;
    this.d
      .hostAddresses()
      .then(
        (hosts) => {
          this.extraHosts = hosts.filter((h) => h !== '127.0.0.1');
          this.extraKnown = true;
          for (const [name, l] of this.listeners) this.bindExtra(name, l);
          this.publishNow();
          // Where the imports are published the address may move (a node's pod bridge comes with
          // its first pod): asked again at the publication's pace.
          if (this.publication) this.retryExtra();
        },
        (err: unknown) => {
          for (const l of this.listeners.values())
            l.extraError = `cannot tell where this driver's workloads reach the host: ${(err as Error).message}; tried again every ${this.retryMs / 1000}s`;
          this.retryExtra();
          this.changed();
        },
      )
      .finally(() => (this.extraAsking = false));
  }

  private retryExtra(): void {
    if (this.extraTimer || this.stopped) return;
    this.extraTimer = setTimeout(() => {
      this.extraTimer = undefined;
      this.refreshExtra();
    }, this.retryMs);
    this.extraTimer.unref();
  }

  /** Listens on the driver's addresses this listener is not on yet (and leaves those gone). */
  private bindExtra(name: string, l: Listener): void {
    if (this.listeners.get(name) !== l) return;
    for (const [host, server] of l.extra)
      if (!this.extraHosts.includes(host)) {
        server.close();
        l.extra.delete(host);
      }
    for (const host of this.extraHosts) {
      if (l.extra.has(host)) continue;
      const server = net.createServer({ allowHalfOpen: true }, (sock) => this.accept(name, l, sock));
      l.extra.set(host, server);
      server.once('error', (err) => {
        l.extra.delete(host);
        l.extraError = `cannot listen on ${host}:${l.port} (where this driver's workloads reach the host): ${err.message}; tried again every ${this.retryMs / 1000}s`;
        this.retryExtra();
        this.publishNow();
        this.changed();
      });
      server.listen(l.port, host, () => {
        if (l.extra.size === this.extraHosts.length && [...l.extra.values()].every((x) => x.listening))
          l.extraError = undefined;
        log.info({ import: name, host, port: l.port }, 'interconnect listening for the workloads of the driver');
        this.publishNow();
        this.changed();
      });
    }
  }

  /** Closes every listener and the connections through them. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.reportTimer);
    clearTimeout(this.extraTimer);
    this.publication?.stop();
    for (const l of this.listeners.values()) this.close(l);
    this.listeners.clear();
  }

  private listen(name: string, port: number): void {
    const l: Listener = {
      port,
      extra: new Map(),
      sockets: new Set(),
      latencies: [],
      latencyAt: 0,
      report: { port, listening: false, open: 0, total: 0, refused: 0, failed: 0, bytesIn: 0, bytesOut: 0 },
    };
    this.listeners.set(name, l);
    this.bind(name, l);
  }

  private bind(name: string, l: Listener): void {
    const server = net.createServer({ allowHalfOpen: true }, (sock) => this.accept(name, l, sock));
    l.server = server;
    server.once('error', (err) => {
      l.server = undefined;
      l.report = { ...l.report, listening: false, error: `cannot listen on 127.0.0.1:${l.port}: ${err.message}` };
      log.warn(
        { err, import: name, port: l.port },
        'interconnect listener failed; retried at the next change of the spec',
      );
      this.changed();
    });
    server.listen(l.port, '127.0.0.1', () => {
      const { error: _gone, ...rest } = l.report;
      l.report = { ...rest, listening: true };
      log.info({ import: name, port: l.port }, 'interconnect listening');
      this.changed();
    });
  }

  private close(l: Listener): void {
    l.server?.close();
    l.server = undefined;
    for (const x of l.extra.values()) x.close();
    l.extra.clear();
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
      l.latencies[l.latencyAt] = Date.now() - accepted;
      l.latencyAt = (l.latencyAt + 1) % LATENCY_SAMPLES;
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
      const body = Object.fromEntries(
        [...this.listeners].map(([name, l]) => {
          // 127.0.0.1's own error when it does not listen, else what fails besides it.
          const more = [l.report.listening ? l.extraError : undefined, this.publication?.problemOf(name)].filter(
            (x): x is string => !!x,
          );
          const error = [...(l.report.error ? [l.report.error] : []), ...more].join('; ').slice(0, 2000);
          const { error: _own, ...own } = l.report;
          const rest = l.latencies.length ? { ...own, ...percentiles(l.latencies) } : own;
          return [name, error ? { ...rest, error } : rest];
        }),
      );
      try {
        this.d.store.change<ReportDoc>(this.reportId, (d) => setReportInterconnect(d, body));
      } catch (err) {
        log.warn({ err }, 'writing the interconnect report failed; written again at the next change');
      }
    }, INTERCONNECT_REPORT_MS);
    this.reportTimer.unref();
  }
}
