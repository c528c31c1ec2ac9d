/**
 * @module The hub's tunnel gateway (docs/tunnel.md): HTTP routes under `/api/v1/edges/NAME/...`
 * that reach into an edge over the WebSocket the edge opened, multiplexed next to sync.
 *
 * Order of checks, all before anything reaches the edge: bearer token (401), the edge exists in
 * the token's project (404, so other projects' edges stay invisible), the role allows the action
 * (403: reading logs and kube reads need read; exec, proxy, actions and kube writes need write),
 * the edge is connected (503 `edge NAME is offline since T`, at once, never a hang), or else served
 * by another hub replica on the same PostgreSQL, to which the request is forwarded (forward.ts),
 * and the project's tunnelSessions quota (403 `over_quota`; project-sessions.ts).
 * Every tunnelled request is logged with the token id, the edge and the target; every stream has a
 * deadline and a byte budget.
 *
 * The routes are served on the raw node request (not hono): responses stream with backpressure
 * (a 50 MB download or a watch), and upgrades (WebSocket, kubectl's SPDY) pass through as bytes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import client from 'prom-client';
import { OutpostError } from '../../core/errors.js';
import { bearerToken, rawErrorResponse } from '../../core/http.js';
import type { EdgeName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { ProtocolError } from '../../sync/messages.js';
import type { EdgeConnection, SyncServer } from '../../sync/server.js';
import type { HubState } from '../state/index.js';
import { TunnelError, TunnelMux, type StreamLimits, type TunnelStream } from '../../sync/tunnel.js';
import type { Action, HubAuth, Principal } from '../auth/contract.js';
import { MISSING_TOKEN, principalOf } from '../auth/principal.js';
import { authorize } from '../auth/roles.js';
import type { EdgeState } from '../state/edges.js';
import { refuseReplicaClaim, type ForwardTarget, type ReplicaForwarder } from './forward.js';
import { handleReplicaInterconnect } from './replica-interconnect.js';
import { kubeAction } from './kube-path.js';
import { DEFAULT_LIMITS, type GatewayLimits } from './limits.js';
import { handleActions, handleExec, handleLogs, handleMetrics } from './ops.js';
import { ProjectSessions } from './project-sessions.js';
import { cookieValues, PROXY_COOKIE, ProxySessions, proxyTargetOf } from './proxy-session.js';
import { handleHttp, sendError, type RouteContext } from './routes.js';
import { createSession, exchangeLink, type SessionRoutes } from './session-routes.js';

const log = createLogger('hub:tunnel');

export const TUNNEL_PATH =
  /^\/api\/v1\/edges\/([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\/(kube|proxy-session|proxy|logs|exec|actions|metrics)(\/.*)?$/;

export interface GatewayOptions {
  /** The proxy sessions' tables, the tokens they are checked against, the events routes record. */
  state: Pick<HubState, 'auth' | 'proxySessions' | 'events'>;
  edges: Pick<EdgeState, 'get'>;
  auth: Pick<HubAuth, 'verifyApiToken' | 'hold' | 'credentialExpiry'>;
  sync: () => SyncServer | undefined;
  registry?: client.Registry;
  limits?: Partial<GatewayLimits>;
  /**
   * Hub replicas on one PostgreSQL: requests for an edge another replica serves go there. Without
   * it (SQLite: one process) an edge not connected here is offline.
   */
  forward?: ReplicaForwarder;
  /**
   * A connection carried a request another replica forwarded (signature checked): every user's
   * forwarded requests arrive from that replica's address, so it leaves the per-address cap.
   */
  onReplicaConnection?(socket: Socket): void;
  /** A stream the edge opened (blob transfers); without it the edge's OPEN is refused. */
  onEdgeStream?(conn: EdgeConnection, stream: TunnelStream): void;
  /** Refuses one more tunnel session of `project` that has `open` now: its tunnelSessions quota. */
  checkSession?(project: string, open: number): void;
  /**
   * An interconnect connection another replica relays to an edge connected here (signature
   * checked; hub/interconnect/relay.ts serveReplica): export `project/name` on `edge`.
   */
  onReplicaInterconnect?(edge: EdgeName, project: string, name: string, socket: Duplex, head: Buffer): void;
}

/** A request admitted here for an edge another replica serves. */
interface Forwarding {
  forward: ForwardTarget;
  principal: Principal;
}

interface EdgeTunnel {
  conn: EdgeConnection;
  mux: TunnelMux;
}

export class TunnelGateway {
  private readonly tunnels = new Map<EdgeName, EdgeTunnel>();
  readonly limits: GatewayLimits;
  private readonly opened?: client.Counter<'type'>;
  private readonly bytes?: client.Counter<'direction'>;
  private readonly forwarded?: client.Counter<'result'>;
  private readonly sessions: ProxySessions;
  private readonly projectSessions: ProjectSessions;
  private readonly verify = (token: string): Principal | null => this.opts.auth.verifyApiToken(token);

  constructor(private readonly opts: GatewayOptions) {
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.sessions = new ProxySessions(opts.state, (id, now) => opts.auth.credentialExpiry(id, now));
    this.projectSessions = new ProjectSessions(opts.checkSession?.bind(opts));
    if (opts.registry) {
      const self = this;
      new client.Gauge({
        name: 'outpost_hub_tunnel_streams',
        help: 'Tunnel streams open now, all edges',
        registers: [opts.registry],
        collect() {
          this.set(self.openStreams());
        },
      });
      this.opened = new client.Counter({
        name: 'outpost_hub_tunnel_streams_total',
        help: 'Tunnel streams opened, by type',
        labelNames: ['type'],
        registers: [opts.registry],
      });
      this.bytes = new client.Counter({
        name: 'outpost_hub_tunnel_bytes_total',
        help: 'Tunnel stream bytes, counted when a stream closes: from_edge or to_edge',
        labelNames: ['direction'],
        registers: [opts.registry],
      });
      this.forwarded = new client.Counter({
        name: 'outpost_hub_tunnel_forwarded_total',
        help: 'Tunnel requests forwarded to the hub replica serving the edge: ok (connected to it) or unreachable',
        labelNames: ['result'],
        registers: [opts.registry],
      });
    }
  }

  /** The tunnel sessions of `project` open now on this hub process (project-sessions.ts). */
  openSessions(project: string): number {
    return this.projectSessions.of(project);
  }

  /** Streams open now over every edge's tunnel. */
  openStreams(): number {
    let n = 0;
    for (const t of this.tunnels.values()) n += t.mux.size;
    return n;
  }

  /** SyncServer's onTunnel hook: a 0x02 payload from an edge. A malformed one closes that edge's connection. */
  onTunnel(conn: EdgeConnection, payload: Buffer): void {
    const t = this.tunnels.get(conn.edge);
    let mux = t?.conn === conn ? t.mux : undefined;
    // Before any stream was opened on this connection too (the edge opens transfer streams): a
    // well-formed frame about a stream the mux does not know is dropped, a malformed one closes
    // the connection (docs/tunnel.md). Frames of a connection already replaced are dropped.
    if (!mux && this.opts.sync()?.connection(conn.edge) === conn) mux = this.mux(conn);
    if (!mux) return; // a connection already replaced: stale frames
    try {
      mux.receive(payload);
    } catch (err) {
      throw new ProtocolError('bad_frame', `bad tunnel frame: ${(err as Error).message}`);
    }
  }

  /** The edge's connection closed: its streams fail now and are freed. */
  onDisconnect(conn: EdgeConnection): void {
    const t = this.tunnels.get(conn.edge);
    if (!t || t.conn !== conn) return;
    this.tunnels.delete(conn.edge);
    t.mux.close(`edge ${conn.edge} disconnected`);
  }

  close(): void {
    this.opts.forward?.close();
    for (const t of this.tunnels.values()) t.mux.close('the hub is shutting down');
    this.tunnels.clear();
  }

  /**
   * Opens a stream to an edge connected to this process for another part of the hub (the
   * interconnect's relay, hub/interconnect/relay.ts), on the same mux, bounds and counters as the
   * routes' streams. Throws `offline` when the edge is not connected here.
   */
  openTo(edge: EdgeName, header: Record<string, unknown>, limits: StreamLimits = {}): TunnelStream {
    const conn = this.opts.sync()?.connection(edge);
    if (!conn) throw new OutpostError('offline', `edge ${edge} is not connected to this hub`);
    const s = this.mux(conn).open(header, limits);
    this.opened?.inc({ type: String(header.type) });
    s.once('close', () => {
      this.bytes?.inc({ direction: 'from_edge' }, s.bytesIn);
      this.bytes?.inc({ direction: 'to_edge' }, s.bytesOut);
    });
    return s;
  }

  private mux(conn: EdgeConnection): TunnelMux {
    const t = this.tunnels.get(conn.edge);
    if (t && t.conn === conn) return t.mux;
    t?.mux.close(`edge ${conn.edge} reconnected`);
    const socket = conn.socket;
    const onEdgeStream = this.opts.onEdgeStream;
    const mux = new TunnelMux({
      side: 'hub',
      send: (p, written) => conn.sendTunnel(p, written),
      bufferedAmount: () => socket.bufferedAmount,
      maxStreams: this.limits.maxStreamsPerEdge,
      ...(onEdgeStream ? { onStream: (s: TunnelStream) => onEdgeStream(conn, s) } : {}),
    });
    this.tunnels.set(conn.edge, { conn, mux });
    return mux;
  }

  private sessionRoutes(): SessionRoutes {
    return { sessions: this.sessions, verify: this.verify, edges: this.opts.edges };
  }

  /** Serves a tunnel route; false when `req` is not one (the caller passes it on). */
  handleRequest(req: IncomingMessage, res: ServerResponse): boolean {
    const m = TUNNEL_PATH.exec(new URL(req.url ?? '/', 'http://x').pathname);
    if (!m) return false;
    const route = m[3];
    if (route === 'proxy-session') {
      createSession(this.sessionRoutes(), req, res, m[1] as EdgeName, m[4] ?? '').catch((err: unknown) =>
        sendError(res, err),
      );
      return true;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    if (route === 'proxy' && !req.headers.authorization && url.searchParams.has('session')) {
      try {
        exchangeLink(this.sessionRoutes(), req, res, m[1] as EdgeName, m[4] ?? '', url);
      } catch (err) {
        sendError(res, err);
      }
      return true;
    }
    let ctx: RouteContext | Forwarding;
    try {
      ctx = this.admit(req, m[1] as EdgeName, m[3], m[4] ?? '', false, (f) => res.once('close', f));
    } catch (err) {
      sendError(res, err, m[3] === 'kube');
      return true;
    }
    // Held for its token: revoked or expired, the request ends at once, whatever it streams.
    const release = this.opts.auth.hold(ctx.principal, (reason) => this.cut(ctx, reason, () => res.destroy()));
    res.once('close', release);
    if ('forward' in ctx) {
      this.opts.forward!.http(req, res, ctx.forward, (err) => sendError(res, err, route === 'kube'));
      return true;
    }
    const work =
      route === 'logs'
        ? handleLogs(ctx, req, res)
        : route === 'exec'
          ? handleExec(ctx, req, res)
          : route === 'actions'
            ? handleActions(ctx, req, res)
            : route === 'metrics'
              ? handleMetrics(ctx, req, res)
              : handleHttp(ctx, req, res);
    work.catch((err: unknown) => {
      if (!(err instanceof OutpostError || err instanceof TunnelError))
        log.error({ err, path: req.url }, 'tunnel request failed');
      sendError(res, err, route === 'kube');
    });
    return true;
  }

  /** Serves an upgrade on a tunnel route (proxy/kube WebSocket or SPDY, interactive exec); false when not one. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    if (handleReplicaInterconnect(this.opts, pathname, req, socket, head)) return true;
    const m = TUNNEL_PATH.exec(pathname);
    if (!m) return false;
    socket.on('error', () => socket.destroy());
    let ctx: RouteContext | Forwarding;
    try {
      ctx = this.admit(req, m[1] as EdgeName, m[3], m[4] ?? '', true, (f) => socket.once('close', f));
      if (m[3] !== 'proxy' && m[3] !== 'kube' && m[3] !== 'exec')
        throw new OutpostError('bad_request', `${m[3]} does not take a WebSocket: use a plain request`);
    } catch (err) {
      if (!(err instanceof OutpostError)) log.error({ err, path: req.url }, 'tunnel upgrade failed');
      socket.end(rawErrorResponse(err));
      return true;
    }
    const release = this.opts.auth.hold(ctx.principal, (reason) => this.cut(ctx, reason, () => socket.destroy()));
    socket.once('close', release);
    if ('forward' in ctx) {
      this.opts.forward!.upgrade(req, socket, head, ctx.forward);
      return true;
    }
    ctx.upgrade = { socket, head };
    const work = m[3] === 'exec' ? handleExec(ctx, req, undefined) : handleHttp(ctx, req, undefined);
    work.catch((err: unknown) => {
      log.warn({ err, path: req.url }, 'tunnelled upgrade failed');
      socket.destroy();
    });
    return true;
  }

  /**
   * Ends an admitted request whose token was revoked or expired: its connection is cut (the
   * client sees the stream break off, not a clean end it could take for the whole answer), and
   * with it the tunnel stream to the edge, or the forwarded request to the replica serving it.
   */
  private cut(ctx: RouteContext | Forwarding, reason: string, destroy: () => void): void {
    const edge = 'forward' in ctx ? ctx.forward.edge : ctx.edge;
    log.info(
      { user: ctx.principal.tokenId, ...(ctx.principal.person ? { person: ctx.principal.person } : {}), edge },
      `tunnel request ended: ${reason}`,
    );
    destroy();
  }

  /**
   * Who is asking: the bearer token, or on the proxy route a browser session cookie valid for
   * exactly this edge, workload and port (proxy-session.ts).
   */
  private authenticate(req: IncomingMessage, edge: EdgeName, route: string, rest: string): Principal {
    const h = req.headers.authorization;
    const bearer = bearerToken(h);
    if (bearer) return principalOf(this.verify, bearer);
    const cookies = route === 'proxy' && !h ? cookieValues(req.headers.cookie, PROXY_COOKIE) : [];
    if (cookies.length > 0) {
      const target = proxyTargetOf(edge, rest);
      const p = target ? this.sessions.verify(cookies, target) : null;
      if (p) return p;
      throw new OutpostError(
        'unauthorized',
        `the proxy session is not valid here (expired, its token revoked, or made for another workload port): run \`outpost edge proxy-url ${edge}${target ? ` ${target.workload} ${target.port}` : ' WORKLOAD PORT'}\` for a new link`,
      );
    }
    return principalOf(
      this.verify,
      null,
      `${MISSING_TOKEN} (a browser opens a proxied app with a link from \`outpost edge proxy-url\`)`,
    );
  }

  /**
   * Authentication, authorization, the online check and the project's session quota: everything
   * that happens before the edge is involved. A request served here is counted as a session of the
   * edge's project until `closed` calls back.
   */
  private admit(
    req: IncomingMessage,
    edge: EdgeName,
    route: string,
    rest: string,
    upgrade: boolean,
    closed: (release: () => void) => void,
  ): RouteContext | Forwarding {
    // Another replica forwarded it (checked signature), or a client: its claim to be one is refused.
    const fw = this.opts.forward;
    const forwardedBy = fw ? fw.forwardedBy(req) : refuseReplicaClaim(req);
    if (forwardedBy) this.opts.onReplicaConnection?.(req.socket);
    const p = this.authenticate(req, edge, route, rest);
    const rt = this.opts.edges.get(edge);
    if (!rt) throw new OutpostError('not_found', `edge ${edge} not found`);
    const action = neededAction(route, req.method ?? 'GET', rest, upgrade);
    authorize(p, action, rt.project, {
      doing: `${route === 'logs' || (route === 'kube' && action === 'read') ? 'read' : `use ${route}`} on edge ${edge}`,
      notFound: `edge ${edge}`,
    });
    const conn = this.opts.sync()?.connection(edge);
    // Served by another replica: forwarded there, once (a forwarded request is never sent on again).
    const to = !conn && !forwardedBy ? fw?.holder(edge) : undefined;
    if (to) {
      log.info(
        {
          user: p.tokenId,
          ...(p.person ? { person: p.person } : {}),
          role: p.role,
          edge,
          target: `${route}${rest} ${req.method}`,
          replica: to.id,
          url: to.url,
        },
        'tunnel request forwarded to the hub replica serving the edge',
      );
      return {
        forward: { edge, to, counted: (result) => this.forwarded?.inc({ result }) },
        principal: p,
      };
    }
    if (!conn && forwardedBy)
      throw new OutpostError(
        'offline',
        `edge ${edge} is not connected to hub replica ${fw!.self} any more (hub replica ${forwardedBy} forwarded the request here): it moved or went offline; try again`,
      );
    if (!conn) {
      const since = rt.disconnectedAt
        ? new Date(rt.disconnectedAt).toISOString()
        : rt.lastSeen
          ? new Date(rt.lastSeen).toISOString()
          : 'enrollment (it never connected)';
      throw new OutpostError('offline', `edge ${edge} is offline since ${since}`);
    }
    this.projectSessions.take(rt.project, closed);
    const gw = this;
    return {
      principal: p,
      edge,
      project: rt.project,
      route,
      rest,
      limits: this.limits,
      open(header: Record<string, unknown>, long: boolean, target: string): TunnelStream {
        const limits: StreamLimits = {
          deadlineMs: long ? gw.limits.streamDeadlineMs : gw.limits.requestDeadlineMs,
          maxBytes: gw.limits.maxBytesPerStream,
        };
        const s = gw.mux(conn).open(header, limits);
        gw.opened?.inc({ type: String(header.type) });
        s.once('close', () => {
          gw.bytes?.inc({ direction: 'from_edge' }, s.bytesIn);
          gw.bytes?.inc({ direction: 'to_edge' }, s.bytesOut);
        });
        log.info(
          {
            user: p.tokenId,
            ...(p.person ? { person: p.person } : {}),
            role: p.role,
            edge,
            target,
            stream: s.id,
            ...(forwardedBy ? { forwardedBy } : {}),
          },
          'tunnel request',
        );
        return s;
      },
      events: this.opts.state.events,
    };
  }
}

/** Which action a tunnel route needs. Kube reads are read; anything that changes or runs code is write. */
export function neededAction(route: string, method: string, rest: string, upgrade: boolean): Action {
  if (route === 'logs' || route === 'metrics') return 'read';
  if (route !== 'kube') return 'write';
  return kubeAction(method, rest, upgrade);
}

export type { Principal };
