/**
 * @module What a change sets going on the hub. A document change (an edge's report arriving, a
 * spec the hub wrote) is projected into the hub's tables inside its transaction, what it says of
 * each kind of order by the order engine (hub/orders/engine.ts); after the commit it is announced
 * to the edge's connection and the change stream, and the kinds it said something to are woken.
 * An object change (apply, delete) goes to every module of the hub (the order engine's kinds mark
 * what they plan from it; the replication module tells the other hub replicas).
 *
 * The hooks are made before the parts they reach (those need the store the hooks go into): each
 * part is read through a getter, undefined until it is wired.
 */
import { compactSpec } from '../sync/compaction.js';
import type { SyncServer } from '../sync/server.js';
import type { ReplicaStore, ReplicaStoreOptions } from '../sync/store.js';
import type { ChangeFeed } from './changes/feed.js';
import { projectReport } from './controllers/status.js';
import type { HubModules } from './module.js';
import type { ObjectStore } from './objects.js';
import type { OrderEngine } from './orders/engine.js';
import type { Scheduler } from './scheduler/index.js';
import type { HubState } from './state/index.js';

/** What a document change reaches, each undefined until wired. */
export interface DocumentHookTargets {
  store(): ReplicaStore;
  state(): HubState | undefined;
  sync(): SyncServer | undefined;
  scheduler(): Scheduler | undefined;
  /** The orders to edges (hub/orders/engine.ts): what a report says of each kind. */
  orders(): OrderEngine | undefined;
  changes(): ChangeFeed | undefined;
}

/** The replica store's `onChange` and `afterChange` hooks (hub/store.ts). */
export function documentHooks(t: DocumentHookTargets): Pick<ReplicaStoreOptions, 'onChange' | 'afterChange'> {
  const inventoryChanged = new Set<string>();
  return {
    // `c.doc` only for remote changes: reading it builds the JS view of a document written through
    // its backend (every spec write), and destructuring it in the parameter list read it for every
    // change: a third of a fan-out's spec writes (docs/benchmarks.md, issue #17).
    onChange: (c) => {
      if (c.origin === 'remote') {
        const state = t.state();
        const r = state && projectReport(state, c.id, c.doc);
        // What it says of the orders of each kind (the workloads' status among them): the kinds it
        // concerns are woken below.
        if (r) t.orders()?.project(r.edge, r.report);
        if (r?.inventoryChanged) inventoryChanged.add(r.edge);
      }
    },
    afterChange: (id, origin) => {
      // The hub writes spec documents; one that grew past the threshold restarts as a new epoch.
      if (origin === 'local' && id.endsWith('/spec') && compactSpec(t.store(), id)) {
        t.sync()?.announceEpoch(id);
        return;
      }
      t.sync()?.notify(id);
      t.changes()?.notifyDoc(id);
      // The kinds whose orders the reports said something of plan again (their periodic passes
      // catch the rest): a fan-out's thousands of workload reports wake only the scheduler's
      // status marks (paced, hub/scheduler/status-marks.ts).
      t.orders()?.wake();
      // New inventory labels may make placements select the edge, or stop selecting it.
      for (const e of inventoryChanged) t.scheduler()?.markEdge(e);
      inventoryChanged.clear();
    },
  };
}

/**
 * Hooks `objects.onChange`: each change goes to every module of the hub, in list order (the change
 * feed, the order engine whose kinds mark what they plan from it, the catalog, the GitRepos, the
 * other replicas: hub/hub.ts lists them). `modules` is read at each change: the list is made after
 * the objects.
 */
export function routeObjectChanges(objects: ObjectStore, modules: () => HubModules): void {
  objects.onChange((c) => modules().objectChanged(c));
}
