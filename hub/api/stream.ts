/**
 * @module Live updates for the web UI: `GET /api/v1/projects/:project/stream`, a server-sent-events
 * stream of the project's change feed (hub/changes/feed.ts) that emits a small `change` event
 * whenever objects, edge connections or statuses of that project change. The UI refetches what it
 * shows on each event; the events carry no object data, so a slow client never sees stale objects.
 *
 * Authentication: the same bearer token in the `Authorization` header. The UI reads the stream
 * with `fetch` (EventSource cannot set headers), so tokens never appear in URLs or access logs.
 * The stream is held for its token (hub/auth/token-streams.ts): revoked on any replica, or
 * expired, the token loses it at once, with an `unauthorized` event.
 */
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Topic } from '../changes/feed.js';
import type { HubAuth } from '../auth/contract.js';
import type { ChangeFeed } from '../changes/feed.js';
import { authorize, type Env } from '../auth/middleware.js';

/**
 * At most one `change` event per stream per this interval (first at once, the rest coalesced):
 * a 10,000-edge fleet reports constantly, and every event makes each open UI refetch its page.
 */
export const STREAM_THROTTLE_MS = 500;
/** A comment line this often keeps proxies from closing an idle stream and lets clients detect a dead hub. */
export const STREAM_KEEPALIVE_MS = 15_000;

/** The change feed's stream; `auth` ends it when its token is revoked or expires. */
export function streamRoutes(feed: ChangeFeed, auth: Pick<HubAuth, 'hold'>): Hono<Env> {
  const app = new Hono<Env>();

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
      const release = auth.hold(p, (reason) => {
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
