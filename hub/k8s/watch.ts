/**
 * @module Watches (`?watch=true`): a stream of JSON lines `{"type":"ADDED"|"MODIFIED"|"DELETED"|
 * "BOOKMARK"|"ERROR","object":...}` read from the hub's record of object changes
 * (hub/state/kube-api.ts `kube_watch_events`, written in each change's transaction).
 *
 * resourceVersion semantics, as the Kubernetes API's:
 * - unset or `0`: the objects that exist now as ADDED, then the changes after;
 * - `N`: the changes after N (through a hub restart too: the record is in the database); N older
 *   than the oldest change kept is answered with an ERROR event holding a 410 Gone `Expired`
 *   Status, so the client lists again;
 * - `sendInitialEvents=true`: the objects as ADDED, then a BOOKMARK marked
 *   `k8s.io/initial-events-end`;
 * - `allowWatchBookmarks=true`: a BOOKMARK with the newest resourceVersion every minute.
 *
 * One broker reads new changes for every open watch: right after each local commit, and every
 * second for changes other hub replicas commit. With a label selector, an object that stops
 * matching is sent as DELETED and one that starts as ADDED.
 */
import type { Context } from 'hono';
import { stream } from 'hono/streaming';
import { createLogger } from '../../core/logger.js';
import type { Resource } from '../../core/resources.js';
import type { ApiPrincipal } from '../auth/principal.js';
import type { StoredWatchEvent } from '../state/kube-api.js';
import { toKube, type KubeObject } from './convert.js';
import type { KubeApiDeps } from './deps.js';
import { GROUP_VERSION, type KubeResource } from './kinds.js';
import { selectorFilter, type ListQuery } from './list.js';
import { statusOf } from './status.js';
import { tableObject, wantsTable } from './table.js';

const log = createLogger('hub:k8s:watch');

/** How often a watch that allows bookmarks gets one (Kubernetes: about every minute). */
export const BOOKMARK_MS = 60_000;
/** How often the broker looks for changes other replicas committed. */
export const WATCH_POLL_MS = 1_000;
/** A watch ends after this unless it names a shorter timeoutSeconds (clients watch again). */
export const MAX_WATCH_MS = 30 * 60_000;
const BATCH = 500;

interface Watcher {
  kind: string;
  namespace?: string;
  /** The newest resourceVersion this watch has passed. */
  rv: number;
  deliver(e: StoredWatchEvent): void;
}

export class WatchBroker {
  private readonly watchers = new Set<Watcher>();
  private seen = 0;
  private timer: NodeJS.Timeout | undefined;
  private scheduled = false;

  constructor(private readonly source: KubeApiDeps['watch']) {
    source.onCommit(() => this.wake());
  }

  get size(): number {
    return this.watchers.size;
  }

  /** Replays the changes after `w.rv` to `w`, then delivers new ones until removed. */
  add(w: Watcher): () => void {
    this.catchUp(w);
    if (this.watchers.size === 0) {
      this.seen = Math.max(this.seen, w.rv);
      this.timer = setInterval(() => this.poll(), WATCH_POLL_MS);
      this.timer.unref();
    }
    this.watchers.add(w);
    return () => {
      this.watchers.delete(w);
      if (this.watchers.size === 0) clearInterval(this.timer);
    };
  }

  /** The newest resourceVersion read. */
  get newest(): number {
    return this.seen;
  }

  private catchUp(w: Watcher): void {
    for (;;) {
      const rows = this.source.events.after(w.rv, BATCH);
      for (const r of rows) this.dispatch(w, r);
      if (rows.length < BATCH) return;
    }
  }

  private dispatch(w: Watcher, r: StoredWatchEvent): void {
    if (r.rv <= w.rv) return;
    w.rv = r.rv;
    if (r.kind === w.kind && (w.namespace === undefined || r.project === w.namespace)) w.deliver(r);
  }

  private wake(): void {
    if (this.watchers.size === 0 || this.scheduled) return;
    this.scheduled = true;
    // After the commit that fired it: the change is readable then.
    setImmediate(() => {
      this.scheduled = false;
      this.poll();
    });
  }

  private poll(): void {
    try {
      for (;;) {
        const rows = this.source.events.after(this.seen, BATCH);
        for (const r of rows) {
          this.seen = r.rv;
          for (const w of this.watchers) this.dispatch(w, r);
        }
        if (rows.length < BATCH) return;
      }
    } catch (err) {
      log.warn({ err }, 'reading object changes for watches failed; retrying');
    }
  }
}

type C = Context<{ Variables: { principal: ApiPrincipal } }>;

const keyOf = (o: { metadata: { project?: string; namespace?: string; name: string } }) =>
  `${o.metadata.project ?? o.metadata.namespace}/${o.metadata.name}`;

/** Answers `?watch=true` on a collection. */
export function serveWatch(
  deps: KubeApiDeps,
  broker: WatchBroker,
  c: C,
  r: KubeResource,
  namespace: string | undefined,
): Response {
  const q = c.req.query() as ListQuery & {
    resourceVersion?: string;
    allowWatchBookmarks?: string;
    sendInitialEvents?: string;
    timeoutSeconds?: string;
  };
  const match = selectorFilter(q);
  const filtered = !!q.labelSelector || !!q.fieldSelector;
  const table = wantsTable(c);
  const bookmarks = q.allowWatchBookmarks === 'true';
  const initialEvents = q.sendInitialEvents === 'true';
  const timeoutMs = Math.min(
    Number(q.timeoutSeconds) > 0 ? Number(q.timeoutSeconds) * 1000 : MAX_WATCH_MS,
    MAX_WATCH_MS,
  );
  const p = c.get('principal');
  const fromRv = q.resourceVersion && q.resourceVersion !== '0' ? Number(q.resourceVersion) : undefined;
  if (fromRv !== undefined && !Number.isInteger(fromRv))
    return c.json(
      statusOf(400, 'BadRequest', `resourceVersion: not a resourceVersion this hub gave ("${q.resourceVersion}")`),
      400,
    );

  c.header('content-type', table ? 'application/json;as=Table;v=v1;g=meta.k8s.io' : 'application/json');
  c.header('transfer-encoding', 'chunked');
  return stream(c, async (s) => {
    let first = true;
    const lines: string[] = [];
    let flushing: Promise<void> | undefined;
    const flush = async () => {
      while (lines.length && !s.aborted) await s.write(lines.splice(0).join(''));
      flushing = undefined;
    };
    const emit = (type: string, object: unknown) => {
      lines.push(`${JSON.stringify({ type, object })}\n`);
      flushing ??= flush();
    };
    // One row per event; only the first carries the column definitions, as the API server's do.
    const asTable = (o: KubeObject) => {
      const t = tableObject(c, r, [o], { resourceVersion: o.metadata.resourceVersion });
      if (!first) t.columnDefinitions = [];
      first = false;
      return t;
    };
    const send = (type: string, o: Resource) => {
      const k = toKube(deps.objects.present(o));
      emit(type, table ? asTable(k) : k);
    };
    const bookmark = (rv: number, annotations?: Record<string, string>) =>
      emit('BOOKMARK', {
        apiVersion: GROUP_VERSION,
        kind: r.kind,
        metadata: { resourceVersion: String(rv), ...(annotations ? { annotations } : {}) },
      });

    let finish!: () => void;
    const done = new Promise<void>((res) => (finish = res));
    s.onAbort(() => finish());

    const expired = fromRv !== undefined ? deps.watch.events.compactedThrough() : 0;
    if (fromRv !== undefined && fromRv < expired) {
      emit('ERROR', statusOf(410, 'Expired', `too old resource version: ${fromRv} (${expired})`));
      await flushing;
      return;
    }
    // Objects matching the selectors, to turn changes into ADDED/DELETED as they start or stop matching.
    const matching = new Set<string>();
    let start = fromRv ?? 0;
    if (fromRv === undefined || initialEvents) {
      // Read in one turn with the list: no change can fall between the two.
      start = Number(deps.objects.resourceVersion());
      let after = '';
      for (;;) {
        const batch = deps.objects.list(r.kind, namespace ?? '*', { after, limit: BATCH });
        for (const o of batch) {
          after = namespace === undefined ? keyOf(o) : o.metadata.name;
          if (!match(o)) continue;
          matching.add(keyOf(o));
          send('ADDED', o);
        }
        if (batch.length < BATCH) break;
      }
      if (initialEvents) bookmark(start, { 'k8s.io/initial-events-end': 'true' });
    } else if (filtered)
      for (const o of deps.objects.list(r.kind, namespace ?? '*')) if (match(o)) matching.add(keyOf(o));

    const watcher: Watcher = {
      kind: r.kind,
      ...(namespace !== undefined ? { namespace } : {}),
      rv: start,
      deliver(e) {
        const o = JSON.parse(e.object) as Resource;
        const key = keyOf(o);
        const known = matching.has(key);
        if (e.type === 'DELETED') {
          matching.delete(key);
          if (known || !filtered) send('DELETED', o);
          return;
        }
        if (match(o)) {
          matching.add(key);
          send(known || (!filtered && e.type === 'MODIFIED') ? 'MODIFIED' : 'ADDED', o);
        } else if (known) {
          matching.delete(key);
          send('DELETED', o);
        }
      },
    };
    const remove = broker.add(watcher);
    const release = deps.hold(p, () => finish());
    const ticker = bookmarks
      ? setInterval(() => bookmark(Math.max(watcher.rv, broker.newest)), BOOKMARK_MS)
      : undefined;
    const timeout = setTimeout(finish, timeoutMs);
    await done;
    clearInterval(ticker);
    clearTimeout(timeout);
    remove();
    release();
    await flushing;
  });
}
