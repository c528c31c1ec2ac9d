/**
 * @module What a change sets going on the hub. A document change (an edge's report arriving, a
 * spec the hub wrote) is projected into the status tables inside its transaction; after the commit
 * it is announced to the edge's connection and the change stream, and marks what the scheduler and
 * the kinds of orders to edges (hub/orders/engine.ts) must look at again. An object change (apply, delete) marks
 * the placements, edges and controllers it concerns and is told to the other hub replicas.
 *
 * The hooks are made before the parts they reach (those need the store the hooks go into): each
 * part is read through a getter, undefined until it is wired.
 */
import { compactSpec } from '../sync/compaction.js';
import type { SyncServer } from '../sync/server.js';
import type { ReplicaStore, ReplicaStoreOptions } from '../sync/store.js';
import type { ChangeFeed } from './changes/feed.js';
import { projectReport } from './controllers/status.js';
import type { HubStaging } from './images/staging.js';
import type { ObjectStore } from './objects.js';
import type { Replicas } from './replicas/index.js';
import type { DataDeliveries } from './data/delivery.js';
import type { OrderEngine } from './orders/engine.js';
import type { Scheduler } from './scheduler/index.js';
import type { HubState } from './state/index.js';
import type { AgentUpgradeController } from './upgrades/controller.js';

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
  const reportChanged = new Set<string>();
  const inventoryChanged = new Set<string>();
  return {
    // `c.doc` only for remote changes: reading it builds the JS view of a document written through
    // its backend (every spec write), and destructuring it in the parameter list read it for every
    // change: a third of a fan-out's spec writes (docs/benchmarks.md, issue #17).
    onChange: (c) => {
      if (c.origin === 'remote') {
        const state = t.state();
        const r = state && projectReport(state, c.id, c.doc);
        if (r) {
          reportChanged.add(r.edge);
          // What it says of the orders of each kind: the kinds it concerns are woken below.
          t.orders()?.project(r.edge, r.report);
        }
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
      // catch the rest): a fan-out's thousands of workload reports wake none.
      t.orders()?.wake();
      for (const e of reportChanged) t.scheduler()?.markStatus(e);
      reportChanged.clear();
      // New inventory labels may make placements select the edge, or stop selecting it.
      for (const e of inventoryChanged) t.scheduler()?.markEdge(e);
      inventoryChanged.clear();
    },
  };
}

/** What an object change reaches; the getters' parts are wired after the objects. */
export interface ObjectHookTargets {
  scheduler: Scheduler;
  changes: ChangeFeed;
  peers(): Replicas | undefined;
  upgrades(): AgentUpgradeController | undefined;
  deliveries(): DataDeliveries | undefined;
  imageStaging(): HubStaging | undefined;
}

/** Hooks `objects.onChange`: each change marks what it concerns. */
export function routeObjectChanges(objects: ObjectStore, t: ObjectHookTargets): void {
  const sched = t.scheduler;
  objects.onChange((c) => {
    t.changes.notify(c.project, 'objects');
    t.peers()?.send({ t: 'object', kind: c.kind, project: c.project, name: c.name });
    if (c.kind === 'Edge') sched.markEdge(c.name);
    else if (c.kind === 'Workload') sched.markWorkload(c.project, c.name);
    else if (c.kind === 'AgentUpgrade') t.upgrades()?.onObjectChange(c);
    else if (c.kind === 'DataObject') t.deliveries()?.onObjectChange(c);
    // A GitRepo plans nothing for edges; hub/gitops/ hears its changes itself.
    else if (c.kind === 'GitRepo') return;
    else if (c.kind === 'Registry')
      // Which edges get its credentials depends on every placement's images: re-plan them all.
      for (const p of objects.list('Placement', c.project)) sched.markPlacement(c.project, p.metadata.name);
    else {
      sched.markPlacement(c.project, c.name);
      // A deleted placement's staging orders go from its edges' specs (the gate no longer sees it).
      if (c.kind === 'Placement' && !c.after) t.imageStaging()?.setPlacement(`${c.project}/${c.name}`, new Map());
    }
  });
}
