/**
 * @module The hub's change feed: what changed, per project, for the live updates of the web UI
 * (`GET /api/v1/projects/:project/stream`, hub/api/stream.ts). The events carry no object data: a
 * listener refetches what it shows.
 *
 * Three sources feed it: the hub calls `notify` for object changes and `notifyDoc` for mailbox
 * document changes (statuses, rollout progress), and the feed itself tails the `events` table, so
 * every recorded event (connect, disconnect, enrollment, approval, drain...) reaches the UI even
 * when its code path has no hook. Another hub replica's changes arrive through the replicas' bus
 * (hub/replicas/).
 */
import { parseMailboxDocId } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import type { HubState } from '../state/index.js';

const log = createLogger('hub:changes');

/** What changed, coarsely: enough for a client to decide what to refetch. */
export type Topic = 'objects' | 'edges' | 'status' | 'events';

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
