/**
 * @module One sync session: the Automerge sync protocol for a fixed set of documents over one
 * connection. Used on both ends (the hub per edge connection, the edge towards the hub).
 *
 * Delivery: messages are generated after every receive and every local change; the connection
 * is ordered and reliable while it lasts, and on reconnect the persisted sync state (shared
 * heads) lets both sides exchange only what changed. A session never trusts its peer: a frame
 * for a document outside the session, or one that would add changes to a document the peer
 * does not write, raises a ProtocolError and the caller closes the connection.
 */
import * as A from '@automerge/automerge/slim';
import type { DocId } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import { encodeSyncFrame, ProtocolError, type SyncFrame } from './messages.js';
import { WriteViolation, type ReplicaStore } from './store.js';
import * as wasmSync from './wasm-sync.js';
import type { SyncHandle } from './wasm-sync.js';

export interface SessionDoc {
  id: DocId;
  /** True when this side is the document's only writer: the peer may then add no changes. */
  weWrite: boolean;
}

export interface SessionStats {
  bytesIn: number;
  bytesOut: number;
  messagesIn: number;
  messagesOut: number;
  /** Frames dropped because they were about an epoch this side has left. */
  staleFrames: number;
}

/**
 * The sync state of two peers known to hold exactly `heads` (both said so at the handshake): the
 * state Automerge itself reaches after a completed exchange, so neither side generates a message
 * until something changes, and the next change is sent as usual. Built without loading the
 * document, which is what makes a quiet reconnect cheap for a hub with thousands of edges.
 */
export function settledSyncState(heads: A.Heads): SyncHandle {
  return wasmSync.importSyncState({
    ...A.initSyncState(),
    sharedHeads: heads,
    lastSentHeads: heads,
    theirHeads: heads,
    theirNeed: [],
    theirHave: [{ lastSync: heads, bloom: new Uint8Array(0) }],
    haveResponded: true,
  } as A.SyncState);
}

export class SyncSession {
  readonly stats: SessionStats = { bytesIn: 0, bytesOut: 0, messagesIn: 0, messagesOut: 0, staleFrames: 0 };
  private readonly states = new Map<DocId, SyncHandle>();
  private readonly docs = new Map<DocId, SessionDoc>();
  /** The epoch each document's sync state belongs to; a document in another epoch waits for resetDoc. */
  private readonly epochs = new Map<DocId, string>();
  /** Documents changed by a frame received with `deferFlush` and not answered since. */
  private readonly unanswered = new Set<DocId>();
  /** Answers generated within a burst (`receive` with `deferFlush`), sent at the next flush. */
  private held: Buffer[] = [];
  private closed = false;

  constructor(
    private readonly store: ReplicaStore,
    /** Whose sync states these are: the edge name on the hub, `hub` on an edge. */
    private readonly peer: string,
    docs: SessionDoc[],
    private readonly send: (frame: Buffer) => void,
    private readonly log: Logger,
  ) {
    for (const d of docs) this.docs.set(d.id, d);
  }

  /**
   * Loads persisted sync states and sends the first message for every document, except the
   * `quiet` ones: both sides agreed at the handshake that they hold these heads. A quiet
   * document is flushed only if it is loaded anyway (it may have changed since the hello);
   * otherwise it stays on disk until one side changes it.
   */
  start(quiet: ReadonlyMap<DocId, A.Heads> = new Map()): void {
    for (const id of this.docs.keys()) {
      const heads = quiet.get(id);
      this.states.set(id, heads ? settledSyncState(heads) : this.store.loadSyncState(this.peer, id));
      this.epochs.set(id, this.store.epoch(id) ?? '');
      if (!heads || this.store.isLoaded(id)) this.flush(id);
    }
  }

  /** The writer moved a document to a new epoch: forget what we knew about the peer's copy. */
  resetDoc(id: DocId): void {
    if (!this.docs.has(id)) return;
    this.states.set(id, wasmSync.newSyncState());
    this.epochs.set(id, this.store.epoch(id) ?? '');
    this.flush(id);
  }

  /**
   * Applies one sync frame. `deferFlush`: the caller answers later (sync/inbox.ts receives a
   * burst of frames in one transaction and answers once it has committed); the document to flush
   * is returned, or undefined when there is nothing to answer (a stale frame). A frame of a
   * document that an earlier frame of the same burst changed first has the answer to the frames
   * before it generated (and held until the flush): Automerge answers every message, and a
   * later frame can take away what we owed for earlier changes. Without it, a burst ending with
   * the peer's changes and then its frame saying "I have these heads" (sent when it read our
   * previous answer) left both sides silent: we took its heads as told, and it waited for our
   * answer to its changes (sync/session.test.ts).
   */
  receive(frame: SyncFrame, frameBytes: number, opts: { deferFlush?: boolean } = {}): DocId | undefined {
    const id = frame.docId as DocId;
    const doc = this.docs.get(id);
    if (!doc) throw new ProtocolError('forbidden_document', `document ${frame.docId} is not part of this mailbox`);
    this.stats.bytesIn += frameBytes;
    this.stats.messagesIn++;
    // A frame about an epoch we left (the writer compacted and both moved on) is stale: drop it.
    if (frame.epoch !== this.store.epoch(id)) {
      this.stats.staleFrames++;
      return undefined;
    }
    if (opts.deferFlush && this.unanswered.has(id)) {
      const answer = this.answer(id);
      if (answer) this.held.push(answer);
    }
    const state = this.states.get(id) ?? this.store.loadSyncState(this.peer, id);
    this.states.set(id, state);
    let changed: boolean;
    try {
      ({ changed } = this.store.receive(this.peer, id, state, frame.message, { mayAddChanges: !doc.weWrite }));
    } catch (err) {
      // The state saw a message the replica refused or could not keep: never persist it.
      this.states.delete(id);
      if (err instanceof WriteViolation) throw new ProtocolError('write_violation', err.message, id);
      throw new ProtocolError(
        'bad_frame',
        `cannot apply sync message for ${id}: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}`,
      );
    }
    // Only a frame that brought changes leaves us an answer a later frame could take away (our
    // new heads); after acknowledgements alone the flush at the end of the burst says it all.
    if (!opts.deferFlush) this.flush(id);
    else if (changed) this.unanswered.add(id);
    return id;
  }

  /** What this session knew of the peer's copy of `id` saw a message that was not kept (a batch that failed): forget it. */
  forget(id: DocId): void {
    if (!this.docs.has(id)) return;
    this.states.delete(id);
    this.unanswered.delete(id);
    // Answers to frames that were not kept.
    this.held = [];
  }

  /** A local change happened: tell the peer. */
  notify(id: DocId): void {
    if (this.docs.has(id) && this.states.has(id)) this.flush(id);
  }

  /** True when, as far as this session knows, the peer has exactly our heads for these documents (default all). */
  inSync(ids: Iterable<DocId> = this.docs.keys()): boolean {
    for (const id of ids) {
      const st = this.states.get(id);
      const doc = this.store.handle(id);
      if (!st || !doc) return false;
      const heads = A.getHeads(doc);
      const theirs = wasmSync.theirHeads(st);
      if (!theirs || !wasmSync.sameHeads(heads, theirs)) return false;
    }
    return true;
  }

  /** Persists what we know the peer has, so the next connection starts from there. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const [id, st] of this.states) {
      try {
        if (this.store.has(id)) this.store.saveSyncState(this.peer, id, st);
      } catch (err) {
        this.log.warn({ err, doc: id }, 'could not persist sync state');
      }
    }
  }

  /** Sends the peer what it lacks of `id`, if anything (after every receive and local change). */
  flush(id: DocId): void {
    if (this.closed) return;
    if (this.held.length) {
      const held = this.held;
      this.held = [];
      for (const frame of held) this.sendFrame(frame);
    }
    const frame = this.answer(id);
    if (frame) this.sendFrame(frame);
  }

  /** The next sync frame of `id` for the peer, if it lacks anything (updates the sync state). */
  private answer(id: DocId): Buffer | undefined {
    this.unanswered.delete(id);
    const doc = this.store.handle(id);
    const state = this.states.get(id);
    if (!doc || !state) return undefined;
    // The document moved to a new epoch that the peer has not been told about yet.
    if (this.epochs.get(id) !== this.store.epoch(id)) return undefined;
    const msg = wasmSync.generate(doc, state);
    return msg ? encodeSyncFrame(id, this.store.epoch(id)!, msg) : undefined;
  }

  private sendFrame(frame: Buffer): void {
    this.stats.bytesOut += frame.length;
    this.stats.messagesOut++;
    this.send(frame);
  }
}
