/**
 * @module Spec writing: the `spec` document of an edge from its assignments and labels, written
 * only when a digest of those differs from what the document was last written with
 * (`spec_written`), in slices that leave the event loop to sockets and the API.
 */
import { createHash } from 'node:crypto';
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { writeSpecTo } from '../../core/mailbox.js';
import type { Manifest } from '../../core/resources.js';
import { ensureMailbox } from '../../sync/mailbox.js';
import type { ReplicaStore } from '../../sync/store.js';
import type { AssignmentKey, AssignmentStore, EdgeReads, SpecAssignments } from '../state/assignments.js';

const log = createLogger('hub:scheduler');

/** Longest stretch of spec writes before the writer yields to sockets and the API. */
export const SPEC_SLICE_MS = 20;

/** Bounds of how many edges' inputs one read fetches (sized from how many the last slice wrote). */
const READ_MIN = 16;
const READ_MAX = 1_000;

/**
 * Digest of everything a spec document is written from: the edge's labels (their stored JSON) and
 * its assignments, where the content key stands for the manifests. Stored in `spec_written`: keep
 * its form, or a hub restarted on an older file rewrites every spec once.
 */
export function specDigest(labels: string | undefined, keys: readonly AssignmentKey[]): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        labels ?? '{}',
        keys.map((k) => [k.workload, k.revision, k.contentKey, k.generation, k.error ?? null]),
      ]),
    )
    .digest('base64url');
}

/** The edges a hub replica serves now (hub/replicas/). */
export interface ServedEdges {
  /** Whether this process serves the edge now (only its spec documents are written here). */
  holds(edge: string): boolean;
  /** The edges this process serves now. */
  served(): Iterable<string>;
}

/** Seals an edge's Secret values to that edge's own key (hub/secrets.ts). */
export type SealForEdge = (edge: string, manifests: Manifest[]) => Manifest[];

export class SpecWriter {
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
    private readonly assignments: AssignmentStore,
    private readonly edges: EdgeReads,
    private readonly store: ReplicaStore,
    private readonly seal: SealForEdge,
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

  /**
   * The edges whose spec document does not hold what their assignments and labels say (at start:
   * a crash may have come between the two). Compared in four scans instead of edge by edge: at
   * 10,000 edges that was 4.6 s of a reconnect storm.
   */
  stale(): string[] {
    // A hub replica: only the edges it serves, read in two statements (at its start it serves
    // none, and another replica taking over the planning does not cost every replica four scans).
    if (this.serving) {
      const edges = [...this.serving.served()];
      if (!edges.length) return [];
      const inputs = this.inputs(edges);
      return edges.filter((e) => {
        const a = inputs.get(e);
        return a !== undefined && !this.holdsAlready(e, a, specDigest(a.labels, a.keys));
      });
    }
    const labels = this.edges.allLabels();
    const keys = this.assignments.keysByEdge();
    const written = this.assignments.allSpecWritten();
    const epochs = new Map(this.store.list('edge/').map((d) => [d.id as string, d.epoch]));
    const out: string[] = [];
    for (const name of this.edges.names()) {
      const w = written.get(name);
      if (
        !w ||
        w.epoch !== epochs.get(mailboxDocId(edgeName(name), 'spec')) ||
        w.digest !== specDigest(labels.get(name), keys.get(name) ?? [])
      )
        out.push(name);
    }
    return out;
  }

  /**
   * Writes queued spec documents in slices of SPEC_SLICE_MS, yielding to the event loop between
   * them: one placement change to 10,000 edges is ~30 s of writes, and a hub that blocked for all
   * of it answered no handshake, heartbeat or API call meanwhile (edges gave up waiting for their
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
        // inputs of many edges come in two reads (on PostgreSQL a read per edge was two round
        // trips per spec), as many as the last slice had time for.
        this.store.batch(() => {
          while (this.queue.size && !outOfTime) {
            const chunk = [
              ...take(this.queue, Math.min(READ_MAX, Math.max(READ_MIN, Math.ceil(this.perSlice * 1.25)))),
            ];
            const inputs = this.inputs(chunk);
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
            log.error({ err, edge: e }, 'writing the spec document failed; it is written again on the next change');
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
   * Writes an edge's spec document from its assignments (no-op when nothing differs, and for an
   * edge another replica serves unless `force`: the edge's handshake with this one is answered).
   */
  write(edge: string, opts: { force?: boolean } = {}): void {
    if (!opts.force && this.serving && !this.serving.holds(edge)) return;
    this.writeFrom(edge, this.inputs([edge]).get(edge));
  }

  /** What the specs of `edges` are written from, for the enrolled ones: their labels and assignments, in two reads. */
  private inputs(edges: string[]): Map<string, SpecAssignments & { labels: string | undefined }> {
    const labels = this.edges.enrolled(edges);
    const assigned = this.assignments.specInputs([...labels.keys()]);
    const out = new Map<string, SpecAssignments & { labels: string | undefined }>();
    for (const [e, a] of assigned) out.set(e, { ...a, labels: labels.get(e) });
    return out;
  }

  /** Whether the edge's spec document was last written with this digest, in its current epoch. */
  private holdsAlready(edge: string, assigned: SpecAssignments, digest: string): boolean {
    const { written } = assigned;
    return (
      !!written && written.digest === digest && written.epoch === this.store.epoch(mailboxDocId(edgeName(edge), 'spec'))
    );
  }

  /** Writes from inputs read beforehand (undefined: the edge is not enrolled). */
  private writeFrom(edge: string, assigned: (SpecAssignments & { labels: string | undefined }) | undefined): void {
    if (!assigned) return;
    const e = edgeName(edge);
    const id = mailboxDocId(e, 'spec');
    const { labels } = assigned;
    // Labels plus these rows are everything this writes, so an equal digest means the document
    // already says it all (the common case after a hub restart, which re-plans every edge) and it
    // is not even loaded, nor are the manifests parsed.
    const digest = specDigest(labels, assigned.keys);
    if (this.holdsAlready(edge, assigned, digest)) return;
    const rows = assigned.withManifests();
    ensureMailbox(this.store, e, 'hub');
    // Secret values leave the hub's key here and are sealed to this edge's: the document and its
    // history hold only what this edge can open (hub/secrets.ts).
    const workloads = rows.map((a) => {
      const w = {
        name: a.workload,
        generation: a.generation,
        revision: a.revision,
        manifests: a.manifests,
        error: a.error,
      };
      if (a.error !== undefined) return w;
      try {
        return { ...w, manifests: this.seal(edge, a.manifests) };
      } catch (err) {
        log.error({ err, edge, workload: a.workload }, 'cannot seal Secrets for an edge');
        return { ...w, manifests: [], error: `the hub cannot seal this workload's Secrets: ${(err as Error).message}` };
      }
    });
    // Through the document's backend (core/mailbox.ts writeSpecTo): the hub never reads its spec
    // documents back, so no JS view is built for them on every write.
    // Its labels and workloads only: what other writers noted of their parts stays (sync/store.ts `note`).
    this.store.changeBackend(
      id,
      (b) => writeSpecTo(b, JSON.parse(labels ?? '{}') as Record<string, string>, workloads),
      undefined,
      'workloads',
    );
    // Recorded after the change (in the same transaction when a slice batches): a crash in between
    // only costs one more no-op pass, never a digest that claims content the document lacks.
    this.assignments.recordSpecWritten(edge, { epoch: this.store.epoch(id)!, digest });
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
