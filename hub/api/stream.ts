/**
 * @module Live updates for the web UI: a per-project change feed and `GET
 * /api/v1/projects/:project/stream`, a server-sent-events stream that emits a small `change` event
 * whenever objects, edge connections or statuses of that project change. The UI refetches what it
 * shows on each event; the events carry no object data, so a slow client never sees stale objects.
 *
 * Three sources feed it: the hub calls `notify` for object changes and `notifyDoc` for mailbox
 * document changes (statuses, rollout progress), and the feed itself tails the `events` table, so
 * every recorded event (connect, disconnect, enrollment, approval, drain...) reaches the UI even
 * when its code path has no hook.
 *
 * Authentication: the same bearer token in the `Authorization` header. The UI reads the stream
 * with `fetch` (EventSource cannot set headers), so tokens never appear in URLs or access logs.
 * The stream is held for its token (hub/auth/token-streams.ts): revoked on any replica, or
 * expired, the token loses it at once, with an `unauthorized` event.
 */
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { parseMailboxDocId } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import type { HubState } from '../state/index.js';
import { authorize, type Env, type HubDeps } from './context.js';

const log = createLogger('hub:stream');

/** What changed, coarsely: enough for a client to decide what to refetch. */
export type Topic = 'objects' | 'edges' | 'status' | 'events';

/**
 * At most one `change` event per stream per this interval (first at once, the rest coalesced):
 * a 10,000-edge fleet reports constantly, and every event makes each open UI refetch its page.
 */
export const STREAM_THROTTLE_MS = 500;
/** A comment line this often keeps proxies from closing an idle stream and lets clients detect a dead hub. */
export const STREAM_KEEPALIVE_MS = 15_000;
/** How often the feed looks for new rows in the events table, while anyone listens. */
export const EVENTS_POLL_MS = 1_000;

type Listener = (topic: Topic) => void;

export class ChangeFeed {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly closers = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private lastEventId = 0;
  private closed = false;

  constructor(private readonly state: Pick<HubState, 'edges' | 'events'>) {}

  get subscribers(): number {
    let n = 0;
    for (const s of this.listeners.values()) n += s.size;
    return n;
  }

  notify(project: string, topic: Topic): void {
    for (const fn of this.listeners.get(project) ?? []) fn(topic);
  }

  /** A mailbox document changed (an edge's status report, or the hub's spec for it). */
  notifyDoc(id: string): void {
    if (this.listeners.size === 0) return;
    const p = parseMailboxDocId(id);
    if (!p) return;
    const project = this.state.edges.projectOf(p.edge);
    if (project !== undefined) this.notify(project, p.role === 'report' ? 'status' : 'edges');
  }

  /** Subscribes to one project's changes; `onClose` runs when the hub shuts the feed down. */
  subscribe(project: string, fn: Listener, onClose: () => void): () => void {
    if (this.closed) {
      onClose();
      return () => {};
    }
    let set = this.listeners.get(project);
    if (!set) this.listeners.set(project, (set = new Set()));
    set.add(fn);
    this.closers.add(onClose);
    this.startPolling();
    return () => {
      set.delete(fn);
      if (set.size === 0) this.listeners.delete(project);
      this.closers.delete(onClose);
      if (this.listeners.size === 0) this.stopPolling();
    };
  }

  /** Ends every open stream: an HTTP server does not finish closing while a stream is open. */
  close(): void {
    this.closed = true;
    this.stopPolling();
    for (const c of [...this.closers]) c();
    this.closers.clear();
    this.listeners.clear();
  }

  private startPolling(): void {
    if (this.timer) return;
    this.lastEventId = this.state.events.lastId();
    this.timer = setInterval(() => {
      try {
        this.pollEvents();
      } catch (err) {
        log.warn({ err }, 'reading new events for live updates failed; retrying');
      }
    }, EVENTS_POLL_MS);
    this.timer.unref();
  }

  private stopPolling(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private pollEvents(): void {
    const rows = this.state.events.after(this.lastEventId);
    if (rows.length === 0) return;
    this.lastEventId = rows[rows.length - 1].id;
    for (const project of new Set(rows.map((r) => r.project))) this.notify(project, 'events');
  }
}

export function streamRoutes(deps: HubDeps): Hono<Env> {
  const app = new Hono<Env>();
  const feed = deps.changes;

  app.get('/projects/:project/stream', (c) => {
    const project = c.req.param('project');
    const p = authorize(c, 'read', project);
    // Tells nginx-style proxies not to buffer the stream.
    c.header('X-Accel-Buffering', 'no');
    return streamSSE(c, async (stream) => {
      let pending = new Set<Topic>();
      let last = 0;
      let flushTimer: NodeJS.Timeout | undefined;
      let finish!: () => void;
      const done = new Promise<void>((r) => (finish = r));

      const flush = () => {
        flushTimer = undefined;
        if (pending.size === 0 || stream.aborted || stream.closed) return;
        const topics = [...pending];
        pending = new Set();
        last = Date.now();
        void stream.writeSSE({ event: 'change', data: JSON.stringify({ topics }) });
      };
      const unsubscribe = feed.subscribe(
        project,
        (topic) => {
          pending.add(topic);
          if (flushTimer) return;
          flushTimer = setTimeout(flush, Math.max(0, last + STREAM_THROTTLE_MS - Date.now()));
        },
        () => finish(),
      );
      // Revoked (on any replica) or expired: the stream ends at once, saying why.
      const release = deps.auth.hold(p, (reason) => {
        void stream
          .writeSSE({
            event: 'unauthorized',
            data: JSON.stringify({ message: `the token is no longer valid (${reason}): sign in again` }),
          })
          .finally(() => finish());
      });
      const keepalive = setInterval(() => void stream.write(': keepalive\n\n'), STREAM_KEEPALIVE_MS);
      stream.onAbort(() => finish());

      await stream.writeSSE({
        event: 'hello',
        data: JSON.stringify({ project, throttleMs: STREAM_THROTTLE_MS, keepaliveMs: STREAM_KEEPALIVE_MS }),
      });
      await done;
      release();
      clearInterval(keepalive);
      clearTimeout(flushTimer);
      unsubscribe();
      await stream.close();
    });
  });

  return app;
}
