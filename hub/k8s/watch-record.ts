/**
 * @module The record of object changes the Kubernetes API's watches read (table
 * `kube_watch_events`, hub/state/kube-api.ts): each change is recorded in its own transaction (a
 * module hook of the hub, hub/module.ts `onObjectChange`), so a watch resumes from a
 * resourceVersion through a hub restart. A deletion gets a resourceVersion of its own (Kubernetes
 * clients resume from the last event's) and takes its managed fields along.
 */
import type { ObjectChange } from '../objects.js';
import type { HubState } from '../state/index.js';

/**
 * How many object changes watches can be resumed over (kube_watch_events keeps these, newest
 * first): a watch resuming from older is told 410 Gone and lists again. Kubernetes keeps about
 * five minutes of changes; at 10,000 this covers a busy hub's hours.
 */
export const KEPT_WATCH_EVENTS = 10_000;
/** Pruned every this many changes, in the change's transaction (a bounded delete, not one per write). */
const PRUNE_EVERY = 500;

export class KubeWatchRecord {
  private readonly commits: (() => void)[] = [];
  private changes = 0;

  constructor(private readonly state: Pick<HubState, 'objects' | 'kubeApi'>) {}

  /** Calls `fn` inside each object change's transaction, after it is recorded (the watches are told). */
  onCommit(fn: () => void): void {
    this.commits.push(fn);
  }

  /** An object change, inside its transaction. */
  record(c: ObjectChange): void {
    const kube = this.state.kubeApi;
    const rv = c.after ? Number(c.after.metadata.resourceVersion) : this.state.objects.nextResourceVersion();
    const object = c.after ?? { ...c.before!, metadata: { ...c.before!.metadata, resourceVersion: String(rv) } };
    kube.record({
      rv,
      type: !c.before ? 'ADDED' : c.after ? 'MODIFIED' : 'DELETED',
      kind: c.kind,
      project: c.project,
      name: c.name,
      object: JSON.stringify(object),
    });
    if (!c.after) kube.setManagedFields(c.kind, c.project, c.name, undefined);
    if (++this.changes % PRUNE_EVERY === 0) kube.prune(KEPT_WATCH_EVENTS);
    for (const fn of this.commits) fn();
  }
}
