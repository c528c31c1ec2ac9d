/**
 * @module Data to the sites, the hub's side (docs/data.md, "Data to the sites"): for each
 * DataObject it selects edges and writes the object's order into each selected edge's spec
 * document (core/mailbox.ts `setSpecData`, the one writer). The edges download the blob over
 * their own connection and report (edge/data/delivery.ts); the status (`delivered x/y`, per edge)
 * is read from the projection of their reports (hub/state/data-progress.ts), which every hub
 * replica shares.
 *
 * Hub replicas (docs/architecture.md, "Hub replicas"): each writes the documents of the edges it
 * serves only (`holds`), and an edge that connects gets its orders before its handshake is
 * answered (`writeEdge`): an edge moving to another replica never sees a spec without them, which
 * it would take for withdrawn orders (it would remove the files, then download them again).
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
import { deliveryOrder, type DeliveryOrder, type DeliveryProgress } from '../../core/delivery.js';
import { OutpostError } from '../../core/errors.js';
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { inventoryLabels } from '../../core/inventory.js';
import { createLogger } from '../../core/logger.js';
import { putSpecData, specDataNames } from '../../core/mailbox.js';
import type { DataObject, Edge } from '../../core/resources.js';
import type { ReplicaStore } from '../../sync/store.js';
import type { HubBlobs } from '../blobs/index.js';
import { edgesReached, isOnline, schedulableEdges } from '../edges/phase.js';
import type { ObjectChange, ObjectStore } from '../objects.js';
import type { DataProgressState } from '../state/data-progress.js';
import { blockedPaths, blockedReason } from './paths.js';
import { edgeLiveness, sqlEdgeState } from '../state/edges.js';
import { recordEvent } from '../state/events.js';
import type { SqlDb } from '../state/sql.js';

const log = createLogger('hub:data');

/** The key under which the spec documents note the orders `writeEdge` wrote (sync/store.ts `note`). */
const NOTE = 'data-orders';

/** How often orders are written again without an object change: edges join and change labels. */
export const DELIVERY_TICK_MS = 5_000;

/** `2026-12-01T02:00:00Z`: ISO 8601 without the milliseconds when there are none. */
function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

export class DataDeliveries {
  private timer: NodeJS.Timeout | undefined;
  private pending = false;
  /** Per `project/name`, the edges the last pass selected: one that drops out loses the order. */
  private readonly lastSelected = new Map<string, Set<string>>();
  /** Per `project/name`, the edges (and holders) the last event said it was blocked on. */
  private readonly lastBlocked = new Map<string, string>();
  /**
   * Per `edge NUL name`, the order this process last wrote, with the spec's epoch: a pass skips the
   * edges that hold it already without loading their documents (a fleet of 10,000 edges is
   * passed every DELIVERY_TICK_MS). Empty after a restart: the first pass loads each spec once.
   */
  private readonly written = new Map<string, string>();
  /**
   * Hub replicas on PostgreSQL: whether this process serves the edge. Only the documents of those
   * are written here; the replica that serves an edge writes its own (as the scheduler's SpecWriter).
   */
  holds: ((edge: string) => boolean) | undefined;

  constructor(
    private readonly db: SqlDb,
    private readonly objects: ObjectStore,
    private readonly store: ReplicaStore,
    private readonly blobs: HubBlobs,
    /** What the edges reported, projected at report time (hub/controllers/status.ts). */
    private readonly reports: DataProgressState,
    private readonly tickMs = DELIVERY_TICK_MS,
  ) {}

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
    const before = c.before as DataObject | undefined;
    if (before && !after) {
      const key = `${c.project}/${c.name}`;
      const edges = new Set([...this.selected(before), ...(this.lastSelected.get(key) ?? [])]);
      this.lastSelected.delete(key);
      this.lastBlocked.delete(key);
      setImmediate(() => this.clearOrders(c.name, [...edges]));
    }
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
      edges = schedulableEdges(this.objects.list<Edge>('Edge', project), edgeLiveness(this.db, project));
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
    const live = edgeLiveness(this.db, project);
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
      const holds = p?.state === 'Delivered' ? p.version : p?.previous;
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
   * One pass: every DataObject's order into the spec of every edge it reaches; edges it no longer
   * reaches, or where another object holds its path (hub/data/paths.ts), lose it.
   */
  tick(): void {
    // Each project's edges read once per pass, whatever the number of its DataObjects.
    const fleets = new Map<string, ReturnType<typeof schedulableEdges>>();
    const byProject = new Map<string, DataObject[]>();
    for (const o of this.objects.list<DataObject>('DataObject', '*'))
      (byProject.get(o.metadata.project) ?? byProject.set(o.metadata.project, []).get(o.metadata.project)!).push(o);
    const plans: { o: DataObject; key: string; reach: string[] }[] = [];
    for (const [project, list] of byProject) {
      const selected = new Map(list.map((o) => [o.metadata.name, this.selected(o, fleets)]));
      const blocked = blockedPaths(
        list,
        (o) => selected.get(o.metadata.name)!,
        (n) => this.reports.byObject(n),
      );
      for (const o of list) {
        const b = blocked.get(o.metadata.name);
        const all = selected.get(o.metadata.name)!;
        plans.push({
          o,
          key: `${project}/${o.metadata.name}`,
          reach: b ? all.filter((e) => !b.has(e)) : all,
        });
        this.noteBlocked(o, b);
      }
    }
    // Orders withdrawn before any is written: an edge whose path passes from one object to another
    // loses the first order before it gets the second.
    const seen = new Set(plans.map((p) => p.key));
    for (const { o, key, reach } of plans) {
      const before = this.lastSelected.get(key);
      const now = new Set(reach);
      this.lastSelected.set(key, now);
      const dropped = [...(before ?? [])].filter((e) => !now.has(e));
      if (dropped.length) this.clearOrders(o.metadata.name, dropped);
    }
    // Objects gone: deleted through another replica (this one's delete cleared them at once).
    for (const [key, edges] of [...this.lastSelected]) {
      if (seen.has(key)) continue;
      this.lastSelected.delete(key);
      this.lastBlocked.delete(key);
      this.clearOrders(key.slice(key.indexOf('/') + 1), [...edges]);
    }
    for (const { o, reach } of plans) {
      const { project, name } = o.metadata;
      const order = deliveryOrder(o);
      const orderJson = JSON.stringify(order);
      let ordered = 0;
      for (const e of reach) {
        if (this.holds && !this.holds(e)) continue;
        const id = mailboxDocId(edgeName(e), 'spec');
        const epoch = this.store.epoch(id);
        if (epoch === undefined) continue; // enrolled, but its mailbox is made at the first sync
        const memo = `${e}\0${name}`;
        if (this.written.get(memo) === `${epoch}\0${orderJson}`) continue;
        if (this.store.changeBackend(id, (b) => putSpecData(b, name, order), `data ${name} ${order.version}`, NOTE))
          ordered++;
        // After the change: a spec written past its size starts a new epoch (compaction).
        this.written.set(memo, `${this.store.epoch(id)}\0${orderJson}`);
      }
      if (ordered) {
        log.info({ project, object: name, version: order.version, edges: ordered }, 'data object ordered');
        recordEvent(this.db, {
          project,
          kind: 'DataObject',
          name,
          reason: 'Ordered',
          message: `${order.version} ordered to ${ordered} edge(s)`,
        });
      }
    }
  }

  /** An event when an object becomes blocked on edges this process serves (once per change of them). */
  private noteBlocked(o: DataObject, blocked: Map<string, DataObject> | undefined): void {
    const { project, name } = o.metadata;
    const key = `${project}/${name}`;
    const here = [...(blocked ?? [])]
      .filter(([e]) => !this.holds || this.holds(e))
      .sort(([a], [b]) => (a < b ? -1 : 1));
    const text = here.map(([e, h]) => `${e}:${h.metadata.name}`).join(',');
    if ((this.lastBlocked.get(key) ?? '') === text) return;
    if (text) this.lastBlocked.set(key, text);
    else this.lastBlocked.delete(key);
    if (!here.length) return;
    const holders = [...new Set(here.map(([, h]) => h.metadata.name))];
    const edges = here.map(([e]) => e);
    log.warn({ project, object: name, edges, holders }, 'data object blocked: another object holds its path');
    recordEvent(this.db, {
      project,
      kind: 'DataObject',
      name,
      reason: 'Blocked',
      message: `not delivered to ${edges.length <= 5 ? edges.join(', ') : `${edges.slice(0, 5).join(', ')} and ${edges.length - 5} more`}: ${blockedReason(o, here[0]![1])}`,
    });
  }

  /**
   * Writes one edge's data orders: those of every DataObject that selects it, and no other. Called
   * before the edge's handshake is answered (hub/sync-endpoint.ts `beforeWelcome`), whether or not this
   * process served it before: its spec must hold its orders from the first message.
   */
  writeEdge(edge: string): void {
    const id = mailboxDocId(edgeName(edge), 'spec');
    if (!this.store.has(id)) return; // not enrolled: no mailbox
    const want = new Map<string, DeliveryOrder>();
    const rt = sqlEdgeState(this.db).get(edge);
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
    // At every handshake on a hub replica: a document that holds these orders is not loaded.
    const wanted = JSON.stringify([...want].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const names: string[] = [];
    this.store.changePart(
      id,
      NOTE,
      wanted,
      (b) => {
        names.push(...new Set([...want.keys(), ...specDataNames(b)]));
        for (const n of names) putSpecData(b, n, want.get(n));
      },
      'data orders',
    );
    const epoch = this.store.epoch(id);
    for (const n of names) {
      const order = want.get(n);
      if (order) this.written.set(`${edge}\0${n}`, `${epoch}\0${JSON.stringify(order)}`);
      else this.written.delete(`${edge}\0${n}`);
    }
  }

  private clearOrders(name: string, edges: string[]): void {
    for (const e of edges) {
      this.written.delete(`${e}\0${name}`);
      if (this.holds && !this.holds(e)) continue;
      const id = mailboxDocId(edgeName(e), 'spec');
      if (this.store.has(id))
        this.store.changeBackend(id, (b) => putSpecData(b, name, undefined), `data ${name} withdrawn`, NOTE);
    }
  }
}
