/**
 * @module Data to the sites, the hub's side (docs/data.md, "Data to the sites"): for each
 * DataObject it selects edges, and the order engine (hub/orders/engine.ts, kind `data-orders` of
 * core/orders/kinds.ts) writes each edge's orders into its spec document. The edges download the blob over
 * their own connection and report (edge/data/delivery.ts); the status (`delivered x/y`, per edge)
 * is read from the projection of their reports (hub/state/data-progress.ts), which every hub
 * replica shares.
 *
 * Hub replicas (docs/architecture.md, "Hub replicas"): every replica plans the same orders from
 * the shared tables; the engine writes the documents of the edges this one serves, and an edge
 * that connects gets its orders before its handshake is answered (`ordersOf`): an edge moving to
 * another replica never sees a spec without them, which it would take for withdrawn orders (it
 * would remove the files, then download them again).
 *
 * An edge offline when the object is published gets its order like any other and receives the
 * file when it returns. A new version replaces the order whole; the edge keeps the previous file
 * until the new one is complete. An edge the object no longer selects (a label changed, the
 * object deleted) loses the order, and the edge removes the file. Two objects never deliver one
 * path (or a path and a directory of it) to one edge: refused at apply, and when an edge's labels
 * make two meet later, one keeps the path and the other is `Blocked` there (hub/data/paths.ts).
 *
 * At apply (inside the object's write transaction) the blob is checked against the project's
 * store and gets the reference `DataObject/NAME`, so garbage collection keeps it.
 */
import type { BlobDigest } from '../../core/blobs.js';
import type { DataObjectEdgeView, DataObjectStatusView } from '../../core/api/views.js';
import { deliveryOrder, heldVersion, type DeliveryOrder, type DeliveryProgress } from '../../core/delivery.js';
import { OutpostError } from '../../core/errors.js';
import { inventoryLabels } from '../../core/inventory.js';
import { createLogger } from '../../core/logger.js';
import { DATA_ORDERS } from '../../core/orders/kinds.js';
import type { DataObject, Edge } from '../../core/resources.js';
import type { HubBlobs } from '../blobs/index.js';
import { edgesReached, isOnline, schedulableEdges } from '../edges/phase.js';
import type { ObjectChange, ObjectStore } from '../objects.js';
import type { DataProgressState } from '../state/data-progress.js';
import { blockedPaths, blockedReason } from './paths.js';
import type { HubState } from '../state/index.js';
import type { OrderEngine } from '../orders/engine.js';

const log = createLogger('hub:data');

/** How often orders are written again without an object change: edges join and change labels. */
export const DELIVERY_TICK_MS = 5_000;

/** `2026-12-01T02:00:00Z`: ISO 8601 without the milliseconds when there are none. */
function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

export class DataDeliveries {
  private timer: NodeJS.Timeout | undefined;
  private pending = false;
  /** Per `project/name`, the edges (and holders) the last event said it was blocked on. */
  private readonly lastBlocked = new Map<string, string>();
  /** Every edge's orders as the last pass planned them (the engine copies them, hub/orders/engine.ts). */
  private parts = new Map<string, Map<string, DeliveryOrder>>();

  constructor(
    private readonly state: HubState,
    private readonly objects: ObjectStore,
    private readonly engine: OrderEngine,
    private readonly blobs: HubBlobs,
    /** What the edges reported, projected at report time (hub/controllers/status.ts). */
    private readonly reports: DataProgressState,
    private readonly tickMs = DELIVERY_TICK_MS,
  ) {
    engine.register<Map<string, DeliveryOrder>>({
      kind: DATA_ORDERS,
      all: () => this.parts,
      of: (edge) => this.ordersOf(edge),
      forgetEdge: (edge) => this.reports.forgetEdge(edge),
      // Every replica shows the deliveries (status); a report of some wakes the passes.
      project: (edge, report) => {
        this.reports.project(edge, report.data ?? {});
        return Object.keys(report.data ?? {}).length > 0;
      },
      wake: () => this.mark(),
      // Checked inside the object's write transaction (throwing refuses it).
      onObjectChange: (c) => this.onObjectChange(c),
      onPeerObjectChange: (kind) => {
        if (kind === 'DataObject') this.mark();
      },
      // `ordersOf`: the edge's runtime row, and its project's DataObjects.
      handshakeReads: {
        edge: (edge) => [state.readsAhead.edgeRuntime(edge)],
        project: (project) => [state.readsAhead.objects('DataObject', project)],
      },
    });
  }

  start(): void {
    this.timer = setInterval(() => this.mark(), this.tickMs);
    this.timer.unref();
    this.mark();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Writes orders again soon (after the current write transaction commits). */
  mark(): void {
    if (this.pending) return;
    this.pending = true;
    setImmediate(() => {
      this.pending = false;
      try {
        this.tick();
      } catch (err) {
        log.warn({ err }, 'data delivery pass failed; it runs again on the next tick');
      }
    });
  }

  /**
   * Called inside the object write transaction: checks a new or changed DataObject (throwing
   * refuses the write) and keeps its blob reference; on delete, drops the reference and the orders.
   */
  onObjectChange(c: ObjectChange): void {
    if (c.kind !== 'DataObject') return;
    const after = c.after as DataObject | undefined;
    if (after) this.check(after);
    this.blobs.setReferences(c.project, 'DataObject', c.name, after ? [after.spec.digest as BlobDigest] : []);
    // A deleted object's orders go with the next pass, which no longer plans them.
    if (c.before && !after) this.lastBlocked.delete(`${c.project}/${c.name}`);
    this.mark();
  }

  private check(o: DataObject): void {
    const blob = this.blobs.get(o.metadata.project, o.spec.digest as BlobDigest);
    if (!blob)
      throw new OutpostError(
        'invalid',
        `spec.digest: blob ${o.spec.digest} is not in project ${o.metadata.project}'s blob store: upload the file with \`outpost data publish -f FILE\` (or \`outpost blob push FILE\`) in this project`,
        { details: [{ path: 'spec.digest', message: 'not in the blob store' }] },
      );
    if (blob.size !== o.spec.size)
      throw new OutpostError(
        'invalid',
        `spec.size: blob ${o.spec.digest} holds ${blob.size} bytes, not ${o.spec.size}: give the blob's size`,
        { details: [{ path: 'spec.size', message: `must be ${blob.size}` }] },
      );
  }

  private selected(o: DataObject, fleets = new Map<string, ReturnType<typeof schedulableEdges>>()): string[] {
    const project = o.metadata.project;
    let edges = fleets.get(project);
    if (!edges) {
      edges = schedulableEdges(this.objects.list<Edge>('Edge', project), this.state.edges.liveness(project));
      fleets.set(project, edges);
    }
    return edgesReached(edges, o.spec);
  }

  /**
   * The status the API shows: from the projection of the edges' reports (every replica's), writing
   * nothing. An edge where another object holds the path (hub/data/paths.ts) is `Blocked`, naming it.
   */
  status(o: DataObject, now = Date.now()): DataObjectStatusView {
    const order = deliveryOrder(o);
    const project = o.metadata.project;
    const live = this.state.edges.liveness(project);
    const reported: Map<string, DeliveryProgress> = this.reports.byObject(o.metadata.name);
    const fleets = new Map<string, ReturnType<typeof schedulableEdges>>();
    const blocked =
      blockedPaths(
        this.objects.list<DataObject>('DataObject', project),
        (x) => this.selected(x, fleets),
        (n) => (n === o.metadata.name ? reported : this.reports.byObject(n)),
        o.metadata.name,
      ).get(o.metadata.name) ?? new Map<string, DataObject>();
    const edges: DataObjectEdgeView[] = this.selected(o, fleets).map((e) => {
      const p = reported.get(e);
      const current = p && p.version === order.version && p.digest === order.digest ? p : undefined;
      const holds = heldVersion(p);
      const holder = blocked.get(e);
      if (holder)
        return {
          edge: e,
          state: 'Blocked',
          ...(holds ? { version: holds } : {}),
          reason: blockedReason(o, holder),
          online: isOnline(live.get(e), now),
        };
      return {
        edge: e,
        state: current?.state ?? 'Pending',
        ...(holds ? { version: holds } : {}),
        ...(current?.percent !== undefined ? { percent: current.percent } : {}),
        ...(current?.reason ? { reason: current.reason } : {}),
        ...(current ? { since: new Date(current.at).toISOString() } : {}),
        online: isOnline(live.get(e), now),
      };
    });
    const delivered = edges.filter((e) => e.state === 'Delivered').length;
    // Before activateAt an edge that has the bytes reports Waiting: nothing is delivered yet, and
    // `delivered 0/3` would read as stuck; say how many are ready to switch, and when they will.
    const downloaded = delivered + edges.filter((e) => e.state === 'Waiting').length;
    const expired = order.expiresAt !== undefined && order.expiresAt <= now;
    const activates = !expired && order.activateAt !== undefined && order.activateAt > now;
    const activatesAt = activates ? isoSeconds(order.activateAt!) : undefined;
    return {
      summary:
        (expired
          ? `expired (${edges.filter((e) => e.state === 'Expired').length}/${edges.length} removed)`
          : activates
            ? `downloaded ${downloaded}/${edges.length}, activates at ${activatesAt}`
            : `delivered ${delivered}/${edges.length}`) + (blocked.size ? `, ${blocked.size} blocked` : ''),
      delivered,
      downloaded,
      selected: edges.length,
      ...(activatesAt ? { activatesAt } : {}),
      ...(expired ? { expired: true } : {}),
      edges,
    };
  }

  /**
   * One pass: what every edge must hold (each DataObject's order on the edges it reaches, but where
   * another object holds its path, hub/data/paths.ts), copied into the spec documents by the order
   * engine (hub/orders/engine.ts): an edge whose path passes from one object to another gets both
   * changes in one write.
   */
  tick(): void {
    const { parts, ordered } = this.plan(this.parts);
    this.parts = parts;
    this.engine.copy(DATA_ORDERS.name);
    for (const { o, order, edges } of ordered) {
      const { project, name } = o.metadata;
      log.info({ project, object: name, version: order.version, edges }, 'data object ordered');
      this.state.events.record({
        project,
        kind: 'DataObject',
        name,
        reason: 'Ordered',
        message: `${order.version} ordered to ${edges} edge(s)`,
      });
    }
  }

  /**
   * Every edge's orders now, by edge and object name; and each object whose order reaches edges
   * this process serves that did not hold it in `before` (the last pass's), for its `Ordered` event.
   */
  private plan(before: Map<string, Map<string, DeliveryOrder>>): {
    parts: Map<string, Map<string, DeliveryOrder>>;
    ordered: { o: DataObject; order: DeliveryOrder; edges: number }[];
  } {
    // Each project's edges read once per pass, whatever the number of its DataObjects.
    const fleets = new Map<string, ReturnType<typeof schedulableEdges>>();
    const byProject = new Map<string, DataObject[]>();
    for (const o of this.objects.list<DataObject>('DataObject', '*'))
      (byProject.get(o.metadata.project) ?? byProject.set(o.metadata.project, []).get(o.metadata.project)!).push(o);
    const parts = new Map<string, Map<string, DeliveryOrder>>();
    const ordered: { o: DataObject; order: DeliveryOrder; edges: number }[] = [];
    const seen = new Set<string>();
    for (const [project, list] of byProject) {
      const selected = new Map(list.map((o) => [o.metadata.name, this.selected(o, fleets)]));
      const blocked = blockedPaths(
        list,
        (o) => selected.get(o.metadata.name)!,
        (n) => this.reports.byObject(n),
      );
      for (const o of list) {
        const name = o.metadata.name;
        seen.add(`${project}/${name}`);
        const b = blocked.get(name);
        this.noteBlocked(o, b);
        const order = deliveryOrder(o);
        const text = JSON.stringify(order);
        let edges = 0;
        for (const e of selected.get(name)!) {
          if (b?.has(e)) continue;
          (parts.get(e) ?? parts.set(e, new Map()).get(e)!).set(name, order);
          const was = before.get(e)?.get(name);
          if ((!this.engine.holds || this.engine.holds(e)) && (!was || JSON.stringify(was) !== text)) edges++;
        }
        if (edges) ordered.push({ o, order, edges });
      }
    }
    for (const key of [...this.lastBlocked.keys()]) if (!seen.has(key)) this.lastBlocked.delete(key);
    return { parts, ordered };
  }

  /** An event when an object becomes blocked on edges this process serves (once per change of them). */
  private noteBlocked(o: DataObject, blocked: Map<string, DataObject> | undefined): void {
    const { project, name } = o.metadata;
    const key = `${project}/${name}`;
    const here = [...(blocked ?? [])]
      .filter(([e]) => !this.engine.holds || this.engine.holds(e))
      .sort(([a], [b]) => (a < b ? -1 : 1));
    const text = here.map(([e, h]) => `${e}:${h.metadata.name}`).join(',');
    if ((this.lastBlocked.get(key) ?? '') === text) return;
    if (text) this.lastBlocked.set(key, text);
    else this.lastBlocked.delete(key);
    if (!here.length) return;
    const holders = [...new Set(here.map(([, h]) => h.metadata.name))];
    const edges = here.map(([e]) => e);
    log.warn({ project, object: name, edges, holders }, 'data object blocked: another object holds its path');
    this.state.events.record({
      project,
      kind: 'DataObject',
      name,
      reason: 'Blocked',
      message: `not delivered to ${edges.length <= 5 ? edges.join(', ') : `${edges.slice(0, 5).join(', ')} and ${edges.length - 5} more`}: ${blockedReason(o, here[0]![1])}`,
    });
  }

  /**
   * One edge's orders: those of every DataObject that selects it, and no other (its handshake:
   * hub/orders/engine.ts `writeEdge`, whether or not this process served it before: its spec must
   * hold its orders from the first message). Undefined: none.
   */
  ordersOf(edge: string): Map<string, DeliveryOrder> | undefined {
    const want = new Map<string, DeliveryOrder>();
    const rt = this.state.edges.get(edge);
    // The Edge object is read only when its project has DataObjects (on PostgreSQL each read is a
    // round trip of the edge's handshake).
    const objects = rt?.approved ? this.objects.list<DataObject>('DataObject', rt.project) : [];
    const obj = rt && objects.length ? this.objects.get<Edge>('Edge', rt.project, edge) : undefined;
    if (rt && obj) {
      // This edge alone, as `selected` sees each edge (its inventory labels included).
      const one = schedulableEdges(
        [obj],
        new Map([
          [
            edge,
            {
              approved: true,
              enrolledAt: rt.enrolledAt,
              ...(rt.inventory ? { inventoryLabels: inventoryLabels(rt.inventory) } : {}),
            },
          ],
        ]),
      );
      const here = objects.filter((o) => edgesReached(one, o.spec).length);
      // Where two of them overlap, the one the hub's passes order here (hub/data/paths.ts).
      const blocked = blockedPaths(
        here,
        () => [edge],
        (n) => this.reports.byObject(n),
      );
      for (const o of here) if (!blocked.has(o.metadata.name)) want.set(o.metadata.name, deliveryOrder(o));
    }
    return want.size ? want : undefined;
  }
}
