/**
 * @module The open long-lived requests of each API token (docs/security.md, "Tokens"): the web
 * UI's event streams, tunnel requests (log follows, exec sessions, proxied HTTP and WebSockets,
 * kube watches, metrics), blob and image transfers. A token's requests end when it does:
 *
 * - revoked (`outpost token revoke`, `token rotate-admin`): closed at once on the replica that
 *   revoked it, and on every other hub replica when the replicas' bus brings the news
 *   (hub/replicas/bus.ts, a message of a few hundred bytes);
 * - expired: a timer at the expiry of each request's credential (for a proxy session the earlier
 *   of its own and its token's);
 * - and every TOKEN_RECHECK_MS the tokens of all open requests are read again in one statement,
 *   the net under both (a replica that lost its bus session reads them at once when it is back).
 *
 * Before, only the event stream checked its token, at its 15 s keep-alive, and a `logs --follow`
 * ran on for up to the tunnel's hour-long stream deadline after its token was revoked.
 */
import { TOKEN_RECHECK_MS } from '../../core/durations.js';
import { createLogger } from '../../core/logger.js';
import type { ApiPrincipal } from './principal.js';

const log = createLogger('hub:auth');

/** setTimeout's longest delay (~24.8 days); an expiry further out is left to the recheck. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Ends one open request, saying why (the token was revoked, or it expired). */
export type CloseStream = (reason: string) => void;

interface Held {
  close: CloseStream;
  timer: NodeJS.Timeout | undefined;
}

export interface TokenStreamsOptions {
  /** Which of these token ids are valid now (hub/auth/tokens.ts liveApiTokens). */
  live(ids: string[]): Set<string>;
  /** Tells the other hub replicas these tokens were revoked (their bus); absent on SQLite. */
  broadcast?(ids: string[]): void;
  recheckMs?: number;
}

export class TokenStreams {
  private readonly byToken = new Map<string, Set<Held>>();
  private recheckTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: TokenStreamsOptions) {}

  /** Open requests now, all tokens. */
  get size(): number {
    let n = 0;
    for (const s of this.byToken.values()) n += s.size;
    return n;
  }

  /**
   * Holds an open request of `p` until the returned release is called (when it ends by itself);
   * `close` ends it if the token is revoked or the credential expires first.
   */
  hold(p: Pick<ApiPrincipal, 'tokenId' | 'expiresAt'>, close: CloseStream, now = Date.now()): () => void {
    const held: Held = { close, timer: undefined };
    let set = this.byToken.get(p.tokenId);
    if (!set) this.byToken.set(p.tokenId, (set = new Set()));
    set.add(held);
    const expiresAt = p.expiresAt ?? null;
    if (expiresAt !== null && expiresAt - now <= MAX_TIMER_MS) {
      held.timer = setTimeout(
        () => {
          const reason = `token ${p.tokenId} expired at ${new Date(expiresAt).toISOString()}`;
          log.info({ token: p.tokenId }, `closed an open stream of a token: ${reason}`);
          this.end(p.tokenId, held, reason);
        },
        Math.max(0, expiresAt - now),
      );
      held.timer.unref();
    }
    if (!this.recheckTimer) {
      this.recheckTimer = setInterval(() => this.recheck(), this.opts.recheckMs ?? TOKEN_RECHECK_MS);
      this.recheckTimer.unref();
    }
    return () => this.release(p.tokenId, held);
  }

  /** Token `id` was revoked here: its requests end now, and the other replicas are told. */
  revoke(id: string): number {
    this.opts.broadcast?.([id]);
    return this.revoked([id]);
  }

  /** Tokens revoked (here or, by the bus, on another replica): their requests on this one end now. */
  revoked(ids: string[]): number {
    let n = 0;
    for (const id of ids) n += this.endAll(id, `token ${id} was revoked`);
    return n;
  }

  /** Reads the tokens of every open request again; those no longer valid end. Never throws. */
  recheck(): number {
    const ids = [...this.byToken.keys()];
    if (ids.length === 0) return 0;
    let live: Set<string>;
    try {
      live = this.opts.live(ids);
    } catch (err) {
      log.warn({ err }, 'could not read whether the tokens of open streams are still valid (retried)');
      return 0;
    }
    let n = 0;
    for (const id of ids)
      if (!live.has(id)) n += this.endAll(id, `token ${id} is no longer valid (revoked or expired)`);
    return n;
  }

  /** Stops the timers (the hub closes; its server ends the requests themselves). */
  close(): void {
    clearInterval(this.recheckTimer);
    this.recheckTimer = undefined;
    for (const set of this.byToken.values()) for (const h of set) clearTimeout(h.timer);
    this.byToken.clear();
  }

  private endAll(id: string, reason: string): number {
    const set = this.byToken.get(id);
    if (!set) return 0;
    const n = set.size;
    for (const h of [...set]) this.end(id, h, reason);
    log.info({ token: id, streams: n }, `closed the open streams of a token: ${reason}`);
    return n;
  }

  private end(id: string, held: Held, reason: string): void {
    if (!this.release(id, held)) return;
    try {
      held.close(reason);
    } catch (err) {
      log.warn({ err, token: id }, 'closing an open stream of a token failed');
    }
  }

  /** Forgets one request; false when it was already gone. */
  private release(id: string, held: Held): boolean {
    const set = this.byToken.get(id);
    if (!set?.delete(held)) return false;
    clearTimeout(held.timer);
    if (set.size === 0) this.byToken.delete(id);
    if (this.byToken.size === 0) {
      clearInterval(this.recheckTimer);
      this.recheckTimer = undefined;
    }
    return true;
  }
}
