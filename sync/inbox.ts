/**
 * @module The hub's inbox of sync frames (sync/server.ts): the frames of every connection read in
 * one turn of the event loop are applied together in one transaction, each in a savepoint of its
 * own, once the socket reads of that turn are done, and answered after it committed. A frame that
 * fails refuses its connection alone; a commit that fails keeps nothing of the burst.
 */
import type { WebSocket } from 'ws';
import type { DocId, EdgeName } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import type { EdgeConnection } from './edge-connection.js';
import type { ErrorCode, SyncFrame } from './messages.js';
import type { ReplicaStore } from './store.js';

const log = createLogger('sync:server');

export class SyncInbox {
  /**
   * Sync frames received since the last drain, of every connection, in arrival order: applied
   * together in one transaction (a savepoint each) once the socket reads of this turn of the
   * event loop are done, and answered after it committed. One commit per burst instead of one
   * per frame: under a fan-out's Ready reports that commit was the hub's largest single cost.
   */
  private inbox: { conn: EdgeConnection; frame: SyncFrame; bytes: number }[] = [];
  private inboxScheduled = false;

  /**
   * `conns`: the connections served, by edge (a frame of any other is dropped); `frameFailed`
   * refuses the connection of a frame that failed, `refuse` one whose burst could not be kept
   * (SyncServer's own).
   */
  constructor(
    private readonly store: ReplicaStore,
    private readonly conns: ReadonlyMap<EdgeName, EdgeConnection>,
    private readonly frameFailed: (ws: WebSocket, edge: EdgeName, err: unknown) => void,
    private readonly refuse: (ws: WebSocket, edge: EdgeName, code: ErrorCode, message: string) => void,
  ) {}

  enqueue(conn: EdgeConnection, frame: SyncFrame, bytes: number): void {
    this.inbox.push({ conn, frame, bytes });
    if (this.inboxScheduled) return;
    this.inboxScheduled = true;
    setImmediate(() => this.drainInbox());
  }

  /** Applies the frames received since the last drain in one transaction, then answers them. */
  private drainInbox(): void {
    this.inboxScheduled = false;
    const items = this.inbox;
    this.inbox = [];
    // One answer per connection and document, however many of its frames the burst held.
    const answer = new Map<EdgeConnection, Set<DocId>>();
    const failed = new Set<EdgeConnection>();
    try {
      this.store.batch(() => {
        for (const it of items) {
          // A connection refused earlier in this burst, or gone since: its later frames are moot.
          if (failed.has(it.conn) || this.conns.get(it.conn.edge) !== it.conn) continue;
          try {
            const id = it.conn.session.receive(it.frame, it.bytes, { deferFlush: true });
            if (id) (answer.get(it.conn) ?? answer.set(it.conn, new Set()).get(it.conn)!).add(id);
          } catch (err) {
            failed.add(it.conn);
            this.frameFailed(it.conn.socket, it.conn.edge, err);
          }
        }
      });
    } catch (err) {
      // The commit failed (a full disk): nothing of this burst is kept. What each session learnt
      // from its frames is forgotten, and its edge reconnects and sends them again.
      log.error({ err, frames: items.length }, 'could not keep a burst of sync frames; those edges reconnect');
      for (const it of items) {
        it.conn.session.forget(it.frame.docId as DocId);
        if (!failed.has(it.conn)) {
          failed.add(it.conn);
          this.refuse(
            it.conn.socket,
            it.conn.edge,
            'internal',
            'the hub could not store what the edge sent; it will reconnect',
          );
        }
      }
      return;
    }
    for (const [conn, ids] of answer) if (!failed.has(conn)) for (const id of ids) conn.session.flush(id);
  }
}
