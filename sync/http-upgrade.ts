/**
 * @module The HTTP upgrade of an edge's sync connection on the hub (sync/server.ts), up to its
 * WebSocket: a deadline for every wait before the WebSocket exists, the bearer credential checked
 * first (401, or 503 when it cannot be checked now), the reconnect limit per edge (429), then a
 * handshake slot or a place in line (sync/admission.ts). Refusals are logged at a bounded rate.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import { REFUSAL_LOG_INTERVAL_MS, UPGRADE_DEADLINE_MS } from '../core/durations.js';
import { OutpostError } from '../core/errors.js';
import { bearerToken } from '../core/http.js';
import type { EdgeName } from '../core/ids.js';
import { createLogger, throttle } from '../core/logger.js';
import { answerAndDestroy, HandshakeAdmission } from './admission.js';
import { noteSocket } from './turn-writes.js';

const log = createLogger('sync:server');

export interface EdgeIdentity {
  edge: EdgeName;
}

/** The SyncServerOptions an upgrade uses (sync/server.ts documents them). */
export interface UpgradeOptions {
  /**
   * Handshakes in progress beyond which new upgrades get 503 with Retry-After. After a hub
   * restart thousands of edges return at once; admitting them all makes every handshake slow
   * enough to time out and be retried, which feeds the storm (measured in docs/benchmarks.md).
   */
  maxPendingHandshakes?: number;
  /**
   * Upgrades beyond `maxPendingHandshakes` wait in a FIFO queue of this length for a free slot
   * (the hub never idles while edges wait, and no edge redials into the back of the line); only
   * beyond the queue do they get 503, with a Retry-After that grows with the queue.
   */
  maxQueuedUpgrades?: number;
  /** Resolves the bearer credential of an upgrade request; null refuses it with 401. */
  authenticate(token: string, req: IncomingMessage): EdgeIdentity | null | Promise<EdgeIdentity | null>;
  /**
   * For a credential `authenticate` refused: the message when it is a decommissioned edge's own
   * (then the 401 carries code `decommissioned`, which the edge takes as final), else undefined.
   */
  decommissioned?(token: string): string | undefined;
  /** An upgrade refused (metrics, events). */
  onRefused?(edge: EdgeName | null, code: 'unauthorized' | 'too_many_reconnects', message: string): void;
}

/** An admitted upgrade's WebSocket; `handshakeDone` frees its handshake slot. */
export type OpenedSocket = (
  ws: WebSocket,
  identity: EdgeIdentity,
  req: IncomingMessage,
  handshakeDone: () => void,
) => void;

export class UpgradeGate {
  private readonly admission: HandshakeAdmission;
  /** Refused upgrades are logged at most once per REFUSAL_LOG_INTERVAL_MS, with a count of the others. */
  private readonly refusedLog = throttle(REFUSAL_LOG_INTERVAL_MS);

  constructor(
    private readonly opts: UpgradeOptions,
    private readonly wss: WebSocketServer,
    private readonly opened: OpenedSocket,
  ) {
    this.admission = new HandshakeAdmission({
      maxPending: opts.maxPendingHandshakes ?? 256,
      maxQueued: opts.maxQueuedUpgrades ?? 4096,
    });
  }

  async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    // Every state before the WebSocket exists has a deadline (authenticating, waiting in line);
    // after it, the hello must come within HANDSHAKE_TIMEOUT_MS (sync/edge-connection.ts).
    const deadline = setTimeout(() => {
      this.admission.dropQueued(socket);
      answerAndDestroy(
        socket,
        new OutpostError('unavailable', 'the hub took too long to admit this edge: come back in 5 s'),
        {
          'Retry-After': 5,
        },
      );
    }, UPGRADE_DEADLINE_MS);
    deadline.unref();
    socket.once('close', () => clearTimeout(deadline));
    // The credential is checked before the upgrade takes a handshake slot or a place in line:
    // unauthenticated clients cannot crowd out edges.
    const token = bearerToken(req.headers.authorization);
    let identity: EdgeIdentity | null = null;
    try {
      identity = token ? await this.opts.authenticate(token, req) : null;
    } catch (err) {
      // The credential could not be checked (the hub's database is away): not a refusal of the
      // credential, which would tell the edge to enroll again. It comes back later.
      log.error({ err }, 'authenticating an edge failed');
      clearTimeout(deadline);
      answerAndDestroy(
        socket,
        new OutpostError('unavailable', 'the hub cannot check edge credentials now: come back in 5 s'),
        { 'Retry-After': 5 },
      );
      return;
    }
    if (socket.destroyed) return;
    if (!identity) {
      clearTimeout(deadline);
      const why = token
        ? 'the edge credential is not valid (revoked, decommissioned or unknown): enroll the edge again with a new join token'
        : 'missing bearer credential';
      this.refusedLog((suppressed) =>
        log.warn(
          { remote: req.socket.remoteAddress, ...(suppressed ? { suppressed } : {}) },
          `refused sync upgrade: ${why}${suppressed ? ` (and ${suppressed} more refusals since the last line)` : ''}`,
        ),
      );
      const gone = token ? this.opts.decommissioned?.(token) : undefined;
      this.opts.onRefused?.(null, 'unauthorized', gone ?? why);
      answerAndDestroy(socket, new OutpostError(gone ? 'decommissioned' : 'unauthorized', gone ?? why));
      return;
    }
    const wait = this.admission.reconnectWaitMs(identity.edge);
    if (wait > 0) {
      clearTimeout(deadline);
      const retry = Math.ceil(wait / 1000);
      const why = `edge ${identity.edge} reconnects too often: come back in ${retry} s`;
      this.refusedLog((suppressed) =>
        log.warn({ edge: identity.edge, ...(suppressed ? { suppressed } : {}) }, `refused sync upgrade: ${why}`),
      );
      this.opts.onRefused?.(identity.edge, 'too_many_reconnects', why);
      answerAndDestroy(socket, new OutpostError('too_many_requests', why), { 'Retry-After': retry });
      return;
    }
    this.admission.admit(socket, deadline, (done) => {
      try {
        this.wss.handleUpgrade(req, socket, head, (ws) => {
          noteSocket(ws, socket);
          this.opened(ws, identity, req, done);
        });
      } catch (err) {
        done();
        socket.destroy();
        log.error({ err }, 'upgrading a sync connection failed');
      }
    });
  }
}
