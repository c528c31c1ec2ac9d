/**
 * @module The hub's order engine (docs/architecture.md, "Orders"): for each kind of order
 * (core/orders/), what every edge must hold comes from the kind's source (the orders a planner
 * recorded, or what the objects select now), and the engine copies each edge's part into the
 * edge's spec document, on the replica that serves the edge. One algorithm for every kind, and
 * every list of kinds the hub keeps is this registry:
 *
 * - `copy(kind)`: after a plan, the parts that changed are written into the documents of the edges
 *   this process serves, and the edges that lost their part get it withdrawn. What this process
 *   last wrote is remembered per edge, so a pass over 10,000 edges loads only the documents whose
 *   part changed (and `ReplicaStore.changePart` skips a document whose note already says it).
 * - An incremental source (`registerIncremental`: the workloads) names the edges whose parts
 *   changed instead of giving all of them: `enqueue` writes those in slices, each part only when
 *   the digest of its inputs differs from the one recorded (hub/orders/incremental.ts).
 * - `writeEdge(edge)`: before an edge's handshake is answered, every kind's part is written into its
 *   spec: an edge that moves to this replica never sees a spec without its orders, which it would
 *   take for withdrawn orders. On PostgreSQL what those writes read is given ahead for the
 *   handshakes of one turn in one round trip (`handshakeReads`, hub/state/index.ts `prefetchHandshakes`).
 * - `project(edge, report)`: what an edge reports of each kind goes into the hub's tables (every
 *   replica shares them), and the kinds it says something to are woken after the commit (`wake`).
 * - `objectChanged(change)`: an object change (apply, delete) marks what each kind plans from it.
 * - `forgetEdge(edge)`: at decommission, every kind forgets the edge.
 *
 * Hub replicas: `holds` says whether this process serves an edge; a SQLite hub serves every edge.
 */
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { partText, type OrderKind } from '../../core/orders/kind.js';
import type { EdgeReportState } from '../../core/mailbox.js';
import type { ReplicaStore } from '../../sync/store.js';
import type { ObjectChange } from '../objects.js';
import type { HandshakeRead } from '../state/index.js';
import type { IncrementalWriter } from './incremental.js';

const log = createLogger('hub:orders');

/** What every kind's source may do besides giving parts: the lists the hub keeps of kinds. */
export interface SourceHooks {
  /** The edge is decommissioned: forget what the source keeps of it. */
  forgetEdge?(edge: string): void;
  /**
   * Projects what an edge's report says of this kind into the hub's tables (inside the report's
   * transaction, every replica); true when it said something the kind acts on (`wake` follows).
   */
  project?(edge: string, report: EdgeReportState): boolean;
  /** After the commit of reports that said something of this kind (by these edges): plan again soon. */
  wake?(edges: string[]): void;
  /** An object changed (inside its write transaction: throwing refuses the write): mark what it concerns. */
  onObjectChange?(change: ObjectChange): void;
  /** Another hub replica changed an object of this kind (hub/replicas/): plan again soon. */
  onPeerObjectChange?(kind: string): void;
  /**
   * What writing an edge's part at its handshake reads (`edge`), and what it reads of the edge's
   * project (`project`): on PostgreSQL given ahead for a turn's handshakes in one round trip.
   */
  handshakeReads?: {
    edge?(edge: string): HandshakeRead[];
    project?(project: string, edge: string): HandshakeRead[];
  };
}

/** Where a kind's parts come from on the hub: all of them at once, from what a planner recorded. */
export interface OrderSource<Part> extends SourceHooks {
  readonly kind: OrderKind<Part>;
  /** Every edge that must hold a part of this kind now, with it. */
  all(): Map<string, Part>;
  /** One edge's part now (its handshake); undefined: none. */
  of(edge: string): Part | undefined;
  /**
   * Whether `writeEdge` writes this kind's withdrawal into an edge that has no part: false for a
   * SQLite hub whose documents may hold a part from before its source's table (kept as it is).
   */
  withdrawAtHandshake?(): boolean;
  /** Called with the edges whose part this process just wrote (logs, events). */
  written?(edges: string[]): void;
}

/** A kind whose planner names the edges whose parts changed; the writer writes them in slices. */
export interface IncrementalSource<Part> extends SourceHooks {
  readonly kind: OrderKind<Part>;
  readonly writer: IncrementalWriter<unknown, Part>;
}

type Entry =
  | { whole: OrderSource<unknown>; hooks: SourceHooks }
  | { incremental: IncrementalWriter<unknown, unknown>; hooks: SourceHooks };

export class OrderEngine {
  private readonly entries = new Map<string, Entry>();
  /** Per kind, per edge: the part's text this process last wrote into the edge's document. */
  private readonly last = new Map<string, Map<string, string>>();
  /** Kinds a report projected since the last `wake` said something to, with the edges that did. */
  private readonly woken = new Map<string, Set<string>>();
  /** Hub replicas on PostgreSQL: whether this process serves the edge (only those documents are written here). */
  holds: ((edge: string) => boolean) | undefined;

  constructor(private readonly store: ReplicaStore) {}

  /** A kind whose source gives all its parts at once (`copy`). */
  register<Part>(source: OrderSource<Part>): void {
    this.add(source.kind.name, { whole: source as OrderSource<unknown>, hooks: source });
  }

  /** A kind whose source names the edges whose parts changed (`enqueue`, hub/orders/incremental.ts). */
  registerIncremental<Part>(source: IncrementalSource<Part>): void {
    this.add(source.kind.name, { incremental: source.writer as IncrementalWriter<unknown, unknown>, hooks: source });
  }

  private add(name: string, entry: Entry): void {
    if (this.entries.has(name)) throw new Error(`order kind ${name} registered twice`);
    this.entries.set(name, entry);
    this.last.set(name, new Map());
  }

  /** The kinds registered, in order. */
  kinds(): string[] {
    return [...this.entries.keys()];
  }

  private serves(edge: string): boolean {
    return !this.holds || this.holds(edge);
  }

  /**
   * Copies a kind's parts into the documents of the edges this process serves: those whose part
   * changed since this process wrote it, and the withdrawal for edges that no longer have one (an
   * incremental kind: the documents that do not hold what their inputs say). Returns the edges written.
   */
  copy(name: string): string[] {
    const entry = this.entryOf(name);
    if ('incremental' in entry) return entry.incremental.writeStale();
    const source = entry.whole;
    const last = this.last.get(name)!;
    const parts = source.all();
    const wrote: string[] = [];
    for (const [edge, part] of parts) {
      if (!this.serves(edge)) continue;
      if (last.get(edge) === partText(source.kind, part)) continue;
      if (this.write(source, edge, part)) wrote.push(edge);
    }
    for (const edge of [...last.keys()]) {
      if (parts.has(edge)) continue;
      // The replica that serves it withdraws it; writeEdge if it comes back here.
      if (!this.serves(edge)) last.delete(edge);
      else if (this.write(source, edge, undefined)) wrote.push(edge);
    }
    if (wrote.length) source.written?.(wrote);
    return wrote;
  }

  /** An incremental kind: these edges' parts may have changed; written in slices (of those this process serves). */
  enqueue(name: string, edges: Iterable<string>): void {
    const entry = this.entryOf(name);
    if (!('incremental' in entry)) throw new Error(`order kind ${name} is not incremental: copy it`);
    entry.incremental.enqueue(edges);
  }

  /** Every kind's part into one edge's spec document (before its handshake is answered). */
  writeEdge(edge: string): void {
    for (const entry of this.entries.values()) {
      if ('incremental' in entry) {
        entry.incremental.write(edge, { force: true });
        continue;
      }
      const source = entry.whole;
      const part = source.of(edge);
      if (part === undefined && source.withdrawAtHandshake?.() === false) continue;
      this.write(source, edge, part);
    }
  }

  /** What writing these edges' parts at their handshakes reads, every kind's (hub/state/index.ts `prefetchHandshakes`). */
  handshakeReads(edge: string): HandshakeRead[] {
    return [...this.entries.values()].flatMap((e) => e.hooks.handshakeReads?.edge?.(edge) ?? []);
  }

  /** What writing an edge's parts at its handshake reads of its project, every kind's. */
  projectReads(project: string, edge: string): HandshakeRead[] {
    return [...this.entries.values()].flatMap((e) => e.hooks.handshakeReads?.project?.(project, edge) ?? []);
  }

  /** Withdraws a kind's part from some edges at once (an object deleted on this replica). */
  withdraw(name: string, edges: Iterable<string>): void {
    const entry = this.entryOf(name);
    if ('incremental' in entry) throw new Error(`order kind ${name} is incremental: enqueue the edges`);
    for (const edge of edges) if (this.serves(edge)) this.write(entry.whole, edge, undefined);
  }

  /**
   * What an edge's report says of every kind, projected (hub/change-hooks.ts, inside the report's
   * transaction); the kinds it said something to act on are woken by `wake` after the commit.
   */
  project(edge: string, report: EdgeReportState): void {
    for (const [name, entry] of this.entries)
      if (entry.hooks.project?.(edge, report)) {
        const edges = this.woken.get(name) ?? this.woken.set(name, new Set()).get(name)!;
        edges.add(edge);
      }
  }

  /** Wakes the kinds the reports projected since the last call said something to (after their commit). */
  wake(): void {
    const woken = [...this.woken];
    this.woken.clear();
    for (const [name, edges] of woken) this.entries.get(name)?.hooks.wake?.([...edges]);
  }

  /** An object changed: every kind marks what it plans from it (inside the object's write transaction). */
  objectChanged(change: ObjectChange): void {
    for (const entry of this.entries.values()) entry.hooks.onObjectChange?.(change);
  }

  /** Another hub replica changed an object of `kind`: every kind that plans from it plans again. */
  peerObjectChanged(kind: string): void {
    for (const entry of this.entries.values()) entry.hooks.onPeerObjectChange?.(kind);
  }

  /** An edge decommissioned: every kind forgets it. */
  forgetEdge(edge: string): void {
    for (const [name, entry] of this.entries) {
      this.last.get(name)!.delete(edge);
      entry.hooks.forgetEdge?.(edge);
    }
  }

  private entryOf(name: string): Entry {
    const entry = this.entries.get(name);
    if (!entry) throw new Error(`no order kind ${name} is registered`);
    return entry;
  }

  /** Writes one edge's part of one kind; false when the document already held it (or there is none). */
  private write(source: OrderSource<unknown>, edge: string, part: unknown): boolean {
    const { kind } = source;
    const id = mailboxDocId(edgeName(edge), 'spec');
    const last = this.last.get(kind.name)!;
    // Enrolled, but its mailbox is made at its first sync: nothing to write into yet.
    if (!this.store.has(id)) return false;
    const text = partText(kind, part);
    // At every handshake on a hub replica: a document whose note says this part is not loaded.
    const changed = this.store.changePart(
      id,
      kind.name,
      text,
      (b) => kind.put(b, part),
      part === undefined ? `${kind.name} withdrawn` : kind.name,
    );
    if (part === undefined) last.delete(edge);
    else last.set(edge, text);
    if (changed) log.debug({ edge, kind: kind.name, withdrawn: part === undefined }, 'order written');
    return changed;
  }
}
