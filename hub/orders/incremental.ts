/**
 * @module The engine's writer for a kind whose source is incremental (hub/orders/engine.ts
 * `registerIncremental`): the workloads, whose planner (the scheduler) names the edges whose parts
 * changed, and whose parts are too many and too large to be held in memory as a whole-fleet map.
 * Edges are queued and written in slices that leave the event loop to sockets and the API; a
 * slice reads its edges' inputs in one read; a part is written only when the digest of its inputs
 * differs from the one recorded with the document's epoch at its last write (kept in the hub's
 * tables: a restarted hub does not rewrite 10,000 documents).
 */
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import type { OrderKind } from '../../core/orders/kind.js';
import { ensureMailbox } from '../../sync/mailbox.js';
import type { ReplicaStore } from '../../sync/store.js';

const log = createLogger('hub:orders');

/** Longest stretch of writes before the writer yields to sockets and the API. */
export const SPEC_SLICE_MS = 20;

/** Bounds of how many edges' inputs one read fetches (sized from how many the last slice wrote). */
const READ_MIN = 16;
const READ_MAX = 1_000;

/** What a document was last written with: its epoch, and the digest of the inputs. */
export interface WrittenMark {
  epoch: string;
  digest: string;
}

/** The edges a hub replica serves now (hub/replicas/). */
export interface ServedEdges {
  /** Whether this process serves the edge now (only its spec documents are written here). */
  holds(edge: string): boolean;
  /** The edges this process serves now. */
  served(): Iterable<string>;
}

/** What an incremental kind's source gives the writer: its inputs per edge, and how a part comes of them. */
export interface IncrementalInputs<Input, Part> {
  readonly kind: OrderKind<Part>;
  /** The inputs of many edges in one read; an edge missing from the answer gets nothing written (not enrolled). */
  inputs(edges: string[]): Map<string, Input>;
  /** The digest of everything the part is written from (compared with the recorded mark). */
  digest(input: Input): string;
  /** The mark recorded at the edge's last write, read with its inputs. */
  written(input: Input): WrittenMark | undefined;
  /** The part from the inputs (only when it must be written: parsing, sealing). */
  part(edge: string, input: Input): Part;
  /** Records the mark of a write (in the same transaction as the write when a slice batches). */
  record(edge: string, mark: WrittenMark): void;
  /**
   * On a hub that serves every edge: the edges whose document may not hold what their inputs say,
   * in a few scans of whole tables (at 10,000 edges, comparing edge by edge was 4.6 s).
   */
  staleAll(epochOf: (edge: string) => string | undefined): string[];
}

export class IncrementalWriter<Input, Part> {
  private readonly queue = new Set<string>();
  private draining = false;
  /** How many edges the last slice that ran out of time wrote: the next read fetches about that many. */
  private perSlice = 64;
  /**
   * Hub replicas on PostgreSQL (hub/replicas/): the edges this process serves. Only the documents
   * of those are written here (and looked at by `stale`); the replica that serves an edge writes
   * its own. Undefined on a single hub.
   */
  serving: ServedEdges | undefined;

  constructor(
    private readonly source: IncrementalInputs<Input, Part>,
    private readonly store: ReplicaStore,
    /** Called when the queue has been written out. */
    private readonly drained: () => void = () => {},
  ) {}

  get busy(): boolean {
    return this.draining;
  }

  /** Queues edges and starts writing (the first slice at once). */
  enqueue(edges: Iterable<string>): void {
    for (const e of edges) if (!this.serving || this.serving.holds(e)) this.queue.add(e);
    this.drain();
  }

  /** The edges whose document does not hold what their inputs say (at start: a crash may have come between the two). */
  stale(): string[] {
    // A hub replica: only the edges it serves, read in one batch (at its start it serves none, and
    // another replica taking over the planning does not cost every replica the whole-table scans).
    if (this.serving) {
      const edges = [...this.serving.served()];
      if (!edges.length) return [];
      const inputs = this.source.inputs(edges);
      return edges.filter((e) => {
        const input = inputs.get(e);
        return input !== undefined && !this.holdsAlready(e, input, this.source.digest(input));
      });
    }
    const epochs = new Map(this.store.list('edge/').map((d) => [d.id as string, d.epoch]));
    return this.source.staleAll((edge) => epochs.get(mailboxDocId(edgeName(edge), 'spec')));
  }

  /** Writes the stale documents now, in one transaction; returns the edges written. */
  writeStale(): string[] {
    const edges = this.stale();
    const wrote: string[] = [];
    this.store.batch(() => {
      const inputs = this.source.inputs(edges);
      for (const e of edges) if (this.writeFrom(e, inputs.get(e))) wrote.push(e);
    });
    return wrote;
  }

  /**
   * Writes queued documents in slices of SPEC_SLICE_MS, yielding to the event loop between them:
   * one placement change to 10,000 edges is ~30 s of writes, and a hub that blocked for all of it
   * answered no handshake, heartbeat or API call meanwhile (edges gave up waiting for their
   * welcome and redialled, which fed a storm).
   */
  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    const step = () => {
      const t0 = performance.now();
      const slice: string[] = [];
      let outOfTime = false;
      try {
        // One transaction per slice: a commit per spec was a tenth of a fleet-wide change. The
        // inputs of many edges come in one read (on PostgreSQL a read per edge was two round
        // trips per spec), as many as the last slice had time for.
        this.store.batch(() => {
          while (this.queue.size && !outOfTime) {
            const chunk = [
              ...take(this.queue, Math.min(READ_MAX, Math.max(READ_MIN, Math.ceil(this.perSlice * 1.25)))),
            ];
            const inputs = this.source.inputs(chunk);
            for (const e of chunk) {
              this.queue.delete(e);
              slice.push(e);
              this.writeFrom(e, inputs.get(e));
              if (performance.now() - t0 > SPEC_SLICE_MS) {
                outOfTime = true;
                break;
              }
            }
          }
        });
        if (outOfTime) this.perSlice = slice.length;
      } catch {
        // One write failed and its slice rolled back: write those edges one at a time, so a bad
        // edge costs only itself (and is logged).
        for (const e of slice) {
          try {
            this.write(e);
          } catch (err) {
            log.error(
              { err, edge: e, kind: this.source.kind.name },
              'writing the spec document failed; it is written again on the next change',
            );
          }
        }
      }
      if (this.queue.size) setImmediate(step);
      else {
        this.draining = false;
        this.drained();
      }
    };
    step();
  }

  /**
   * Writes an edge's part from its inputs (no-op when nothing differs, and for an edge another
   * replica serves unless `force`: the edge's handshake with this one is answered).
   */
  write(edge: string, opts: { force?: boolean } = {}): void {
    if (!opts.force && this.serving && !this.serving.holds(edge)) return;
    this.writeFrom(edge, this.source.inputs([edge]).get(edge));
  }

  /** Whether the edge's document was last written with this digest, in its current epoch. */
  private holdsAlready(edge: string, input: Input, digest: string): boolean {
    const written = this.source.written(input);
    return (
      !!written && written.digest === digest && written.epoch === this.store.epoch(mailboxDocId(edgeName(edge), 'spec'))
    );
  }

  /** Writes from inputs read beforehand (undefined: nothing to write); true when it wrote. */
  private writeFrom(edge: string, input: Input | undefined): boolean {
    if (input === undefined) return false;
    const e = edgeName(edge);
    const id = mailboxDocId(e, 'spec');
    // An equal digest means the document already says it all (the common case after a hub
    // restart, which re-plans every edge): it is not even loaded, nor is the part built.
    const digest = this.source.digest(input);
    if (this.holdsAlready(edge, input, digest)) return false;
    const part = this.source.part(edge, input);
    ensureMailbox(this.store, e, 'hub');
    const { kind } = this.source;
    // Through the document's backend: the hub never reads its spec documents back, so no JS view
    // is built for them on every write. Only this kind's part: what other kinds noted stays.
    this.store.changeBackend(id, (b) => kind.put(b, part), undefined, kind.name);
    // Recorded after the change (in the same transaction when a slice batches): a crash in between
    // only costs one more no-op pass, never a digest that claims content the document lacks.
    this.source.record(edge, { epoch: this.store.epoch(id)!, digest });
    return true;
  }
}

/** Up to `n` items of a set, in its order. */
function* take<T>(items: Iterable<T>, n: number): Generator<T> {
  if (n <= 0) return;
  for (const x of items) {
    yield x;
    if (--n <= 0) return;
  }
}
