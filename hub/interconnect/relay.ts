/**
 * @module The interconnect's data path on the hub (docs/interconnect.md): a consuming edge opens a
 * stream for each connection it accepts (header core/orders/interconnect.ts InterconnectOpen); the
 * hub authorises it against the objects now (the import exists in the edge's project and selects
 * the edge, the export exists and allows the import's project; read once per change of the
 * objects, hub/interconnect/admission.ts), orders the edges serving the
 * export by health and locality (hub/interconnect/pick.ts), and opens a `tcp` stream to the first
 * through the tunnel gateway (hub/tunnel/gateway.ts `openTo`: the same mux, bounds and counters as
 * every tunnel stream). Until that edge says it is connected to the workload (META `connected`),
 * a failure moves on to the next edge (failover at open); once it is, the two streams are spliced
 * (hub/interconnect/splice.ts: backpressure, half-close, idle timeout) and a failure of either
 * side resets the other, with its reason. A refusal is a RESET at once, naming why.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { OutpostError } from '../../core/errors.js';
import { rawErrorResponse } from '../../core/http.js';
import type { EdgeName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { InterconnectConnected, InterconnectOpen } from '../../core/orders/interconnect.js';
import type { ServiceExport } from '../../core/resources.js';
import { TunnelError, TunnelStream, type TunnelErrorCode } from '../../sync/tunnel.js';
import { INTERCONNECT_UPGRADE, type ReplicaForwarder } from '../tunnel/forward.js';
import type { ObjectStore } from '../objects.js';
import type { EdgeState } from '../state/edges.js';
import type { InterconnectPlanner } from './index.js';
import { Admissions, type Admission } from './admission.js';
import { servingOrder } from './pick.js';
import { EarlyBytes } from './early.js';
import { bufferedBytes, movedBy, splice } from './splice.js';
import type { InterconnectStats } from './stats.js';

const log = createLogger('hub:interconnect');

export interface RelayDeps {
  planner: InterconnectPlanner;
  objects: ObjectStore;
  edges: Pick<EdgeState, 'get'>;
  stats: InterconnectStats;
  /** Opens a stream to an edge connected to this process; throws when it is not (hub/tunnel/gateway.ts `openTo`). */
  openTo(edge: EdgeName, header: Record<string, unknown>): TunnelStream;
  /** With replicas: the replica that holds an edge, and a byte pipe to it (hub/tunnel/forward.ts). */
  remote?: Pick<ReplicaForwarder, 'holder' | 'dial'>;
}

/** The path at which a replica relays a connection for export `project/name` to `edge` (hub/tunnel/gateway.ts). */
const replicaPath = (edge: string, project: string, name: string) =>
  `/api/v1/replicas/interconnect/${edge}/${project}/${name}`;

export function isInterconnectHeader(h: Record<string, unknown>): boolean {
  return h.type === 'interconnect';
}

export class InterconnectRelay {
  /** Per export (`project/name`), where the round robin goes next. */
  private readonly turn = new Map<string, number>();
  /** Every stream the relay holds now (connecting or spliced), for its memory bound. */
  private readonly live = new Set<Duplex>();
  private connections = 0;
  /** What the connections not yet connected to a serving edge keep of their consumer's bytes. */
  private readonly early = new Set<EarlyBytes>();
  /** The consumers' streams open now, with what they were authorised for. */
  private readonly authorised = new Map<TunnelStream, { edge: EdgeName; name: string }>();

  /** What connections are checked against, read once per change of the objects (hub/interconnect/admission.ts). */
  private readonly admissions: Admissions;

  constructor(private readonly d: RelayDeps) {
    this.admissions = new Admissions(d.planner, d.objects);
  }

  /** Bytes held in the relay's stream buffers now, all connections (Prometheus and the tests). */
  bufferedBytes(): number {
    let kept = 0;
    for (const e of this.early) kept += e.keptBytes();
    return bufferedBytes(this.live) + kept;
  }

  /** Bytes the hub received from the edges over the streams it holds now (what the open connections moved). */
  relayedBytes(): number {
    let n = 0;
    for (const s of this.live) n += s instanceof TunnelStream ? s.bytesIn : (s as Socket).bytesRead;
    return n;
  }

  /** Connections open through this hub now (connecting or relaying). */
  openConnections(): number {
    return this.connections;
  }

  private hold(s: Duplex): void {
    this.live.add(s);
    s.once('close', () => this.live.delete(s));
  }

  /**
   * Whether `edge` may open a connection for its import `name` now: the one rule, at open and
   * again for the connections open when the objects change (reauthorise). What it reads of the
   * objects is kept until they change (hub/interconnect/admission.ts); the edge's approval is read
   * each time.
   */
  private authorise(
    edge: EdgeName,
    name: string,
  ):
    { exp: ServiceExport; admission: Admission; consumerProject: string } | { code: TunnelErrorCode; message: string } {
    const rt = this.d.edges.get(edge);
    if (!rt?.approved) return { code: 'forbidden', message: `edge ${edge} is not enrolled and approved` };
    const a = this.admissions.of(rt.project, name);
    if (!a.imp) return { code: 'not_found', message: `ServiceImport ${name} not found in project ${rt.project}` };
    if (!a.selected.has(edge))
      return { code: 'forbidden', message: `ServiceImport ${rt.project}/${name} does not select edge ${edge}` };
    if (a.refused || !a.exp) return { code: 'forbidden', message: a.refused ?? 'no export' };
    return { exp: a.exp, admission: a, consumerProject: rt.project };
  }

  /**
   * The objects changed (an import, an export, an edge): every connection open through this hub
   * is authorised again, and one no longer allowed (the grant removed, the import deleted or no
   * longer selecting its edge) is reset at both ends, with the reason.
   */
  reauthorise(): void {
    this.admissions.clear();
    for (const [s, c] of this.authorised) {
      const a = this.authorise(c.edge, c.name);
      if ('code' in a)
        s.destroy(new TunnelError(a.code, `${a.message} (changed while the connection was open): closed by the hub`));
    }
  }

  /** A stream a consuming edge opened for one connection. */
  serve(edge: EdgeName, s: TunnelStream): void {
    s.on('error', () => undefined);
    const refuse = (code: TunnelErrorCode, message: string): void => {
      log.debug({ edge, code, message }, 'interconnect connection refused');
      this.d.stats.refused();
      s.destroy(new TunnelError(code, message));
    };
    const parsed = InterconnectOpen.safeParse(s.header);
    if (!parsed.success) return refuse('refused', `malformed interconnect stream: ${parsed.error.issues[0]?.message}`);
    const name = parsed.data.import;
    const a = this.authorise(edge, name);
    if ('code' in a) return refuse(a.code, a.message);
    const { exp, admission } = a;
    const key = `${admission.project}/${exp.metadata.name}`;
    const region = this.admissions.regionOf(admission, a.consumerProject, edge);
    const turn = this.turn.get(key) ?? 0;
    this.turn.set(key, turn + 1);
    const order = servingOrder(admission.serving, region, turn);
    if (!order.length)
      return refuse('unavailable', `no edge serving ServiceExport ${key} is online: connection refused`);
    this.connections++;
    this.hold(s);
    this.authorised.set(s, { edge, name });
    const early = new EarlyBytes(s);
    this.early.add(early);
    s.once('close', () => {
      this.connections--;
      this.authorised.delete(s);
      this.early.delete(early);
    });
    this.connect(s, exp, key, order, Date.now(), [], early);
  }

  /**
   * Tries the serving edges in `order` until one is connected to the workload, then splices. The
   * consumer's bytes go to the edge tried as they come (hub/interconnect/early.ts).
   */
  private connect(
    s: TunnelStream,
    exp: ServiceExport,
    key: string,
    order: string[],
    started: number,
    tried: string[],
    early: EarlyBytes,
  ): void {
    const to = order[tried.length];
    if (to === undefined) {
      this.d.stats.refused();
      s.destroy(
        new TunnelError('unavailable', `no edge serving ServiceExport ${key} could connect: ${tried.join('; ')}`),
      );
      return;
    }
    if (s.destroyed) return;
    const next = (why: string) => {
      early.sendTo(undefined);
      this.d.stats.notConnected(key, to, why);
      log.debug({ edge: to, export: key, why }, 'serving edge did not connect; trying the next');
      this.connect(s, exp, key, order, started, [...tried, `${to}: ${why}`], early);
    };
    const made = (server: Duplex, serverMoved: () => number, bytesToService: () => number) => {
      early.release(server);
      this.early.delete(early);
      this.d.stats.connected(key, to, (Date.now() - started) / 1000);
      s.sendMeta({ connected: true, edge: to });
      splice({ consumer: s, server, serverMoved }, exp.spec.idleTimeoutSeconds * 1000, (error) =>
        this.d.stats.closed(key, to, { toService: bytesToService(), toClient: s.bytesOut }, error),
      );
    };
    let out: TunnelStream;
    try {
      out = this.d.openTo(to as EdgeName, { type: 'tcp', workload: exp.spec.workload, port: exp.spec.port });
    } catch (err) {
      // Held by another replica: relayed there (it opens the stream to the edge).
      const replica = this.d.remote?.holder(to);
      if (!replica) return next((err as Error).message);
      let gone = false;
      const abandon = () => (gone = true);
      s.once('close', abandon);
      this.d.remote!.dial(replica, replicaPath(to, exp.metadata.project, exp.metadata.name)).then(
        (sock) => {
          s.off('close', abandon);
          if (gone || s.destroyed) return sock.resetAndDestroy();
          this.hold(sock);
          made(
            sock,
            () => movedBy(sock),
            () => sock.bytesWritten,
          );
        },
        (e: Error) => {
          s.off('close', abandon);
          if (!gone && !s.destroyed) next(`through hub replica ${replica.id}: ${e.message}`);
        },
      );
      return;
    }
    this.hold(out);
    early.sendTo(out);
    this.whenConnected(
      out,
      () =>
        made(
          out,
          () => movedBy(out),
          () => out.bytesOut,
        ),
      next,
      s,
    );
  }

  /**
   * Calls `connected` once the serving edge says it is connected to the workload (META), or
   * `failed` when its stream fails or closes first; `abandonedBy` closing first resets it.
   */
  private whenConnected(
    out: TunnelStream,
    connected: () => void,
    failed: (why: string) => void,
    abandonedBy: Duplex,
  ): void {
    const abandon = () => out.destroy(new TunnelError('aborted', 'the consuming side went away while connecting'));
    abandonedBy.once('close', abandon);
    let settled = false;
    const cleanup = () => {
      settled = true;
      abandonedBy.off('close', abandon);
      out.off('meta', onMeta);
      out.off('error', onError);
      out.off('close', onClose);
    };
    const onClose = () => onError(new Error('the stream closed before it was connected'));
    const onError = (err: Error) => {
      if (settled) return;
      cleanup();
      failed(err.message);
    };
    const onMeta = (m: unknown) => {
      if (settled || !InterconnectConnected.safeParse(m).success) return;
      cleanup();
      out.on('error', () => undefined);
      connected();
    };
    out.on('meta', onMeta);
    out.once('error', onError);
    out.once('close', onClose);
  }

  /**
   * A connection another replica relays here (its signature checked by the gateway) for export
   * `project/name` on `edge`, which is connected here: the export must still name a workload that
   * edge runs; the stream goes to the export's own workload and port (not what the request says).
   * Answers 101 once the edge is connected to the workload, and then pipes bytes; an error answer
   * otherwise (the other replica tries its next serving edge). Idle time and counts are the
   * other replica's (it splices the consumer's stream).
   */
  serveReplica(edge: EdgeName, project: string, name: string, socket: Duplex, head: Buffer): void {
    const sock = socket as Socket;
    const exp = this.d.objects.get<ServiceExport>('ServiceExport', project, name);
    const answer = (err: OutpostError): void => void sock.end(rawErrorResponse(err));
    if (!exp) return answer(new OutpostError('not_found', `ServiceExport ${project}/${name} not found`));
    if (!this.d.planner.servingEdges(exp).some((e) => e.edge === edge))
      return answer(
        new OutpostError(
          'forbidden',
          `edge ${edge} does not run workload ${exp.spec.workload} of ServiceExport ${project}/${name}`,
        ),
      );
    let out: TunnelStream;
    try {
      out = this.d.openTo(edge, { type: 'tcp', workload: exp.spec.workload, port: exp.spec.port });
    } catch (err) {
      return answer(new OutpostError('offline', (err as Error).message));
    }
    this.hold(out);
    this.hold(sock);
    this.whenConnected(
      out,
      () => {
        sock.allowHalfOpen = true;
        sock.write(
          `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${INTERCONNECT_UPGRADE}\r\n\r\n`,
        );
        if (head.length) out.write(head);
        // A failure either way is a reset: the other replica must not take it for a clean end.
        out.on('error', () => sock.resetAndDestroy());
        sock.on('error', () =>
          out.destroy(new TunnelError('aborted', 'the hub replica relaying the connection reset it')),
        );
        sock.once('close', () => {
          if (!out.destroyed && !(sock.readableEnded && sock.writableFinished))
            out.destroy(new TunnelError('aborted', 'the hub replica relaying the connection went away'));
        });
        sock.pipe(out);
        out.pipe(sock);
      },
      (why) => answer(new OutpostError('unavailable', why)),
      sock,
    );
  }
}
