/**
 * @module The hub's order engine (docs/architecture.md, "Orders"): for each kind of order
 * (core/orders/), what every edge must hold comes from the kind's source (the orders a planner
 * recorded, or what the objects select now), and the engine copies each edge's part into the
 * edge's spec document, on the replica that serves the edge. One algorithm for every kind:
 *
 * - `copy(kind)`: after a plan, the parts that changed are written into the documents of the edges
 *   this process serves, and the edges that lost their part get it withdrawn. What this process
 *   last wrote is remembered per edge, so a pass over 10,000 edges loads only the documents whose
 *   part changed (and `ReplicaStore.changePart` skips a document whose note already says it).
 * - `writeEdge(edge)`: before an edge's handshake is answered, every kind's part is written into its
 *   spec: an edge that moves to this replica never sees a spec without its orders, which it would
 *   take for withdrawn orders.
 * - `project(edge, report)`: what an edge reports of each kind goes into the hub's tables (every
 *   replica shares them), and the kinds it says something to are woken after the commit.
 * - `forgetEdge(edge)`: at decommission, every kind forgets the edge.
 *
 * Not yet through the engine (issue #43): the workloads (the scheduler's spec writer writes them
 * with the edge's labels), and the reads a handshake makes ahead on PostgreSQL
 * (hub/state/index.ts `prefetchHandshakes` lists each kind's read).
 *
 * Hub replicas: `holds` says whether this process serves an edge; a SQLite hub serves every edge.
 */
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { partText, type OrderKind } from '../../core/orders/kind.js';
import type { EdgeReportState } from '../../core/mailbox.js';
import type { ReplicaStore } from '../../sync/store.js';

const log = createLogger('hub:orders');

/** Where a kind's parts come from on the hub. */
export interface OrderSource<Part> {
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
  /** The edge is decommissioned: forget what the source keeps of it. */
  forgetEdge?(edge: string): void;
  /**
   * Projects what an edge's report says of this kind into the hub's tables (inside the report's
   * transaction, every replica); true when it said something the kind acts on (`wake` follows).
   */
  project?(edge: string, report: EdgeReportState): boolean;
  /** After the commit of reports that said something of this kind: plan again soon. */
  wake?(): void;
  /** Called with the edges whose part this process just wrote (logs, events). */
  written?(edges: string[]): void;
}

export class OrderEngine {
  private readonly sources = new Map<string, OrderSource<unknown>>();
  /** Per kind, per edge: the part's text this process last wrote into the edge's document. */
  private readonly last = new Map<string, Map<string, string>>();
  /** Kinds a report projected since the last `wake` said something to. */
  private readonly woken = new Set<string>();
  /** Hub replicas on PostgreSQL: whether this process serves the edge (only those documents are written here). */
  holds: ((edge: string) => boolean) | undefined;

  constructor(private readonly store: ReplicaStore) {}

  register<Part>(source: OrderSource<Part>): void {
    if (this.sources.has(source.kind.name)) throw new Error(`order kind ${source.kind.name} registered twice`);
    this.sources.set(source.kind.name, source as OrderSource<unknown>);
    this.last.set(source.kind.name, new Map());
  }

  /** The kinds registered, in order. */
  kinds(): string[] {
    return [...this.sources.keys()];
  }

  private serves(edge: string): boolean {
    return !this.holds || this.holds(edge);
  }

  /**
   * Copies a kind's parts into the documents of the edges this process serves: those whose part
   * changed since this process wrote it, and the withdrawal for edges that no longer have one.
   * Returns the edges written.
   */
  copy(name: string): string[] {
    const source = this.sourceOf(name);
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

  /** Every kind's part into one edge's spec document (before its handshake is answered). */
  writeEdge(edge: string): void {
    for (const source of this.sources.values()) {
      const part = source.of(edge);
      if (part === undefined && source.withdrawAtHandshake?.() === false) continue;
      this.write(source, edge, part);
    }
  }

  /** Withdraws a kind's part from some edges at once (an object deleted on this replica). */
  withdraw(name: string, edges: Iterable<string>): void {
    const source = this.sourceOf(name);
    for (const edge of edges) if (this.serves(edge)) this.write(source, edge, undefined);
  }

  /**
   * What an edge's report says of every kind, projected (hub/change-hooks.ts, inside the report's
   * transaction); the kinds it said something to act on are woken by `wake` after the commit.
   */
  project(edge: string, report: EdgeReportState): void {
    for (const [name, source] of this.sources) if (source.project?.(edge, report)) this.woken.add(name);
  }

  /** Wakes the kinds the reports projected since the last call said something to (after their commit). */
  wake(): void {
    const names = [...this.woken];
    this.woken.clear();
    for (const name of names) this.sources.get(name)?.wake?.();
  }

  /** An edge decommissioned: every kind forgets it. */
  forgetEdge(edge: string): void {
    for (const [name, source] of this.sources) {
      this.last.get(name)!.delete(edge);
      source.forgetEdge?.(edge);
    }
  }

  private sourceOf(name: string): OrderSource<unknown> {
    const source = this.sources.get(name);
    if (!source) throw new Error(`no order kind ${name} is registered`);
    return source;
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
