/**
 * @module The object store: Edge, Workload and Placement objects in SQLite with optimistic
 * concurrency (a global resourceVersion; an update carrying a stale one gets 409) and immutable
 * workload revisions (every change of manifests is a new revision; rollback copies an old one
 * forward, as `kubectl rollout undo` does).
 */
import type { ApplyAction } from '../core/api/types.js';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { OutpostError } from '../core/errors.js';
import {
  API_VERSION,
  formatIssues,
  GLOBAL_SCOPE,
  KIND_SCHEMAS,
  KINDS,
  type Kind,
  type Placement,
  type Resource,
  type Workload,
} from '../core/resources.js';
import { MAX_OBJECT_BYTES, tooBigMessage } from '../core/limits.js';
import { checkWorkloadManifests } from '../core/kube-schema.js';
import { egressOf } from '../core/data.js';
import type { HubState } from './state/index.js';
import type { ObjectState, StoredObject } from './state/objects.js';
import { HUB_SEALED_PREFIX } from '../core/secrets.js';
import type { HubSecrets } from './secrets.js';
import { sealRegistrySpec } from './images/registries.js';
import { sealGitRepoSpec } from './gitops/credentials.js';

/** How many revisions of a workload are kept; older ones are pruned. */
export const KEPT_REVISIONS = 20;

const SCHEMAS = KIND_SCHEMAS;

export type { ApplyAction } from '../core/api/types.js';

export interface ObjectChange {
  kind: Kind;
  project: string;
  name: string;
  before?: Resource;
  after?: Resource;
}

/**
 * A kind whose objects go in two steps, as a Kubernetes finalizer (hub/clusters/deletion.ts for
 * Clusters): a delete records the deletion and the object stays, its status saying so, until its
 * owner removes it (`delete` with `finalize`) once the work the deletion needs is done.
 */
export interface Finalizer {
  /** Why a write to `o` is refused: it is being deleted (undefined: it is not). */
  deleting(o: Resource): string | undefined;
  /**
   * A delete of `o` was asked for (inside its transaction): `hold` records it now (the object stays
   * and its change goes to the listeners), `held` when it was recorded already (nothing changes),
   * `remove` when it goes at once.
   */
  requested(o: Resource, opts: { actor?: string; force: boolean }): 'hold' | 'held' | 'remove';
}

export interface Revision {
  revision: number;
  createdAt: string;
  manifests: unknown[];
  /** Why it was made: the change-cause annotation, else who applied it or the rollback. */
  changeCause?: string;
}

const ROLLED_BACK_TO = 'rolled back to revision ';

/** The revision a rollback copied, read from the change cause it recorded (undefined for other changes). */
export function rolledBackFrom(changeCause: string | undefined): number | undefined {
  if (!changeCause?.startsWith(ROLLED_BACK_TO)) return undefined;
  const n = parseInt(changeCause.slice(ROLLED_BACK_TO.length), 10);
  return Number.isInteger(n) ? n : undefined;
}

/** Annotations that say why a workload changed (ours, and kubectl's for manifests written for it). */
export const CHANGE_CAUSE_ANNOTATIONS = ['outpost.dev/change-cause', 'kubernetes.io/change-cause'];

function changeCause(obj: Resource, opts: { actor?: string; cause?: string }): string | undefined {
  if (opts.cause) return opts.cause;
  for (const a of CHANGE_CAUSE_ANNOTATIONS) if (obj.metadata.annotations[a]) return obj.metadata.annotations[a];
  return opts.actor ? `applied by ${opts.actor}` : undefined;
}

/** Validates an object against its kind's schema; errors name the field path and the fix. */
export function validateResource(input: unknown): Resource {
  const bytes = Buffer.byteLength(JSON.stringify(input) ?? '');
  if (bytes > MAX_OBJECT_BYTES) {
    const o = input as { kind?: unknown; metadata?: { name?: unknown } };
    const what = `${typeof o.kind === 'string' ? o.kind : 'the object'}${typeof o.metadata?.name === 'string' ? ` ${o.metadata.name}` : ''}`;
    throw new OutpostError('too_large', tooBigMessage(what, bytes), {
      details: [{ path: '', message: tooBigMessage(what, bytes) }],
    });
  }
  const kind = (input as { kind?: unknown } | null)?.kind;
  if (typeof kind !== 'string' || !(kind in SCHEMAS)) {
    throw new OutpostError('invalid', `kind: must be one of ${KINDS.join(', ')} (got ${JSON.stringify(kind)})`, {
      details: [{ path: 'kind', message: `must be one of ${KINDS.join(', ')}` }],
    });
  }
  const api = (input as { apiVersion?: unknown }).apiVersion;
  if (api !== undefined && api !== API_VERSION) {
    throw new OutpostError('invalid', `apiVersion: must be ${API_VERSION} (got ${JSON.stringify(api)})`, {
      details: [{ path: 'apiVersion', message: `must be ${API_VERSION}` }],
    });
  }
  const r = (SCHEMAS[kind as Kind] as z.ZodType<Resource>).safeParse(input);
  if (!r.success) {
    const issues = formatIssues(r.error);
    throw new OutpostError('invalid', issues.map((i) => `${i.path}: ${i.message}`).join('; '), { details: issues });
  }
  if (r.data.kind === 'Workload') {
    const issues = checkWorkloadManifests(r.data.spec.manifests);
    const egress = egressOf(r.data.spec.manifests);
    if ('error' in egress) issues.push({ path: 'spec', message: egress.error });
    if (issues.length > 0)
      throw new OutpostError('invalid', issues.map((i) => `${i.path}: ${i.message}`).join('; '), { details: issues });
  }
  return r.data;
}

function specOf(o: Resource): unknown {
  return o.spec;
}

/**
 * The key id of a Secret value (or Registry password) sealed in the stored objects, if any: a hub must not start with
 * another key (or make a new one) over a database whose Secrets it then could not open.
 */
export function sealedKeyId(objects: Pick<ObjectState, 'sealedKeyId'>): string | undefined {
  return objects.sealedKeyId(HUB_SEALED_PREFIX);
}

export class ObjectStore {
  private readonly listeners: ((c: ObjectChange) => void)[] = [];

  constructor(
    /** The object tables (hub/state/objects.ts) and the event log, in one transaction per write. */
    private readonly state: Pick<HubState, 'objects' | 'events' | 'transaction'>,
    /** Seals Secret values before they are stored (hub/secrets.ts): the tables never hold them in clear. */
    private readonly secrets: HubSecrets,
  ) {}

  /**
   * Seals the Secret values that a hub older than sealed Secrets stored in clear, in the objects
   * and the kept revisions, in one transaction; returns how many rows changed. The scheduler then
   * replans every assignment from the sealed workloads. What older spec documents already carried
   * stays in their history: docs/security.md says how to start them afresh.
   */
  sealStoredSecrets(): number {
    const rows = this.state.objects;
    return this.state.transaction(() => {
      let n = 0;
      for (const r of rows.workloadSpecsContaining('"Secret"')) {
        const spec = JSON.parse(r.spec) as Workload['spec'];
        const next = JSON.stringify({ ...spec, manifests: this.secrets.sealForStorage(spec.manifests, undefined) });
        if (next === r.spec) continue;
        rows.setWorkloadSpecText(r.project, r.name, next);
        n++;
      }
      for (const r of rows.revisionsContaining('"Secret"')) {
        const next = JSON.stringify(
          this.secrets.sealForStorage(JSON.parse(r.manifests) as Workload['spec']['manifests'], undefined),
        );
        if (next === r.manifests) continue;
        rows.setRevisionManifestsText(r.project, r.workload, r.revision, next);
        n++;
      }
      return n;
    });
  }

  private readonly finalizers = new Map<Kind, Finalizer>();

  /** Makes deleting objects of `kind` a two-step deletion that `f` finishes (see Finalizer). */
  setFinalizer(kind: Kind, f: Finalizer): void {
    this.finalizers.set(kind, f);
  }

  private admitPlacement: ((p: Placement, cur: Placement | undefined, actor?: string) => Placement) | undefined;
  private admitToProject: ((o: Resource, cur: Resource | undefined) => Resource) | undefined;

  /**
   * The projects' hook (hub/projects/store.ts): every write passes it in its transaction before it
   * is stored: the project's quotas, its default rollout, refusal while the project is deleted.
   */
  setProjectAdmission(fn: (o: Resource, cur: Resource | undefined) => Resource): void {
    this.admitToProject = fn;
  }

  /**
   * The catalog's hook (hub/catalog/render.ts): a placement deploying a package is turned into
   * generated workloads, in the placement's write transaction, before it is stored.
   */
  setPlacementAdmission(fn: (p: Placement, cur: Placement | undefined, actor?: string) => Placement): void {
    this.admitPlacement = fn;
  }

  /** Called inside the write transaction; schedulers react after commit through their own queue. */
  onChange(fn: (c: ObjectChange) => void): void {
    this.listeners.push(fn);
  }

  get<T extends Resource = Resource>(kind: Kind, project: string, name: string): T | undefined {
    const row = this.state.objects.get(kind, project, name);
    return row ? (this.toResource(row) as T) : undefined;
  }

  /** Lists objects of a kind in a project (`*` = all projects), ordered by project and name. */
  list<T extends Resource = Resource>(kind: Kind, project: string, opts: { limit?: number; after?: string } = {}): T[] {
    return this.state.objects.list(kind, project, opts).map((r) => this.toResource(r) as T);
  }

  count(kind: Kind, project: string): number {
    return this.state.objects.count(kind, project);
  }

  /**
   * Creates or updates (the verb behind `outpost apply` and PUT). An input carrying
   * metadata.resourceVersion must match the stored one, or 409.
   */
  apply(
    input: Resource,
    opts: { create?: boolean; update?: boolean; actor?: string; cause?: string } = {},
  ): { object: Resource; action: ApplyAction } {
    const checked = validateResource(input);
    const { kind } = checked;
    const { project, name } = checked.metadata;
    // Immediate: a quota's count and the insert it admits are one unit against another process.
    return this.state.transaction(
      () => {
        const cur = this.get(kind, project, name);
        const deleting = cur && this.finalizers.get(kind)?.deleting(cur);
        if (deleting) throw new OutpostError('conflict', deleting);
        // The hub-wide scope (global ClusterTemplates) is no project: no quota, no Project row.
        const validated = this.admitToProject && project !== GLOBAL_SCOPE ? this.admitToProject(checked, cur) : checked;
        const obj: Resource =
          validated.kind === 'Workload'
            ? {
                ...validated,
                spec: {
                  ...validated.spec,
                  manifests: this.secrets.sealForStorage(
                    validated.spec.manifests,
                    cur?.kind === 'Workload' ? cur.spec.manifests : undefined,
                  ),
                },
              }
            : validated.kind === 'Registry'
              ? {
                  ...validated,
                  spec: sealRegistrySpec(
                    this.secrets.box,
                    validated.spec,
                    cur?.kind === 'Registry' ? cur.spec : undefined,
                  ),
                }
              : validated.kind === 'GitRepo'
                ? {
                    ...validated,
                    spec: sealGitRepoSpec(
                      this.secrets.box,
                      validated.spec,
                      cur?.kind === 'GitRepo' ? cur.spec : undefined,
                    ),
                  }
                : validated.kind === 'Placement' && this.admitPlacement
                  ? this.admitPlacement(validated, cur as Placement | undefined, opts.actor)
                  : validated;
        if (!cur) {
          if (opts.create === false)
            throw new OutpostError(
              'not_found',
              `${kind} ${project}/${name} does not exist: create it first (outpost apply -f FILE)`,
            );
          if (obj.metadata.resourceVersion)
            throw new OutpostError(
              'conflict',
              `${kind} ${project}/${name} does not exist but the request carries resourceVersion ${obj.metadata.resourceVersion}: it was deleted; drop resourceVersion to create it again`,
            );
          this.state.objects.insert({
            kind,
            project,
            name,
            uid: randomUUID(),
            labels: obj.metadata.labels,
            annotations: obj.metadata.annotations,
            spec: specOf(obj),
            at: new Date().toISOString(),
          });
          if (obj.kind === 'Workload') this.addRevision(project, name, obj.spec.manifests, changeCause(obj, opts));
          const after = this.get(kind, project, name)!;
          this.state.events.record({
            project,
            kind,
            name,
            reason: 'Created',
            message: `${kind} ${name} created${opts.actor ? ` by ${opts.actor}` : ''}`,
          });
          for (const l of this.listeners) l({ kind, project, name, after });
          return { object: after, action: 'created' as const };
        }
        if (opts.update === false)
          throw new OutpostError(
            'conflict',
            `${kind} ${project}/${name} already exists: use outpost apply to change it`,
          );
        if (obj.metadata.resourceVersion && obj.metadata.resourceVersion !== cur.metadata.resourceVersion) {
          throw new OutpostError(
            'conflict',
            `${kind} ${project}/${name} was changed by someone else (resourceVersion ${obj.metadata.resourceVersion} is stale, current is ${cur.metadata.resourceVersion}): get it again, reapply your change, and retry`,
          );
        }
        const specChanged = JSON.stringify(specOf(obj)) !== JSON.stringify(specOf(cur));
        const metaChanged =
          JSON.stringify(obj.metadata.labels) !== JSON.stringify(cur.metadata.labels) ||
          JSON.stringify(obj.metadata.annotations) !== JSON.stringify(cur.metadata.annotations);
        if (!specChanged && !metaChanged) return { object: cur, action: 'unchanged' as const };
        this.state.objects.update({
          kind,
          project,
          name,
          labels: obj.metadata.labels,
          annotations: obj.metadata.annotations,
          spec: specOf(obj),
          specChanged,
          at: new Date().toISOString(),
        });
        if (
          obj.kind === 'Workload' &&
          cur.kind === 'Workload' &&
          JSON.stringify(obj.spec.manifests) !== JSON.stringify(cur.spec.manifests)
        )
          this.addRevision(project, name, obj.spec.manifests, changeCause(obj, opts));
        const after = this.get(kind, project, name)!;
        this.state.events.record({
          project,
          kind,
          name,
          reason: 'Updated',
          message: `${kind} ${name} updated${opts.actor ? ` by ${opts.actor}` : ''}`,
        });
        for (const l of this.listeners) l({ kind, project, name, before: cur, after });
        return { object: after, action: 'configured' as const };
      },
      { immediate: true },
    );
  }

  /**
   * Deletes an object; one of a kind with a finalizer is held (recorded as being deleted) unless
   * `finalize` (its owner removing it) or the finalizer lets it go at once. Answers the object as
   * it was, or as it stays while held (`get` finds it then).
   */
  delete(
    kind: Kind,
    project: string,
    name: string,
    actor?: string,
    opts: { force?: boolean; finalize?: boolean } = {},
  ): Resource {
    return this.state.transaction(() => {
      const cur = this.get(kind, project, name);
      if (!cur) throw new OutpostError('not_found', `${kind} ${project}/${name} not found`);
      const f = opts.finalize ? undefined : this.finalizers.get(kind);
      const step = f?.requested(cur, { ...(actor ? { actor } : {}), force: !!opts.force });
      if (step === 'held') return cur;
      if (step === 'hold') {
        // The object's new state (its status: being deleted) reaches watchers and peers as a change.
        this.state.objects.update({
          kind,
          project,
          name,
          labels: cur.metadata.labels,
          annotations: cur.metadata.annotations,
          spec: specOf(cur),
          specChanged: false,
          at: new Date().toISOString(),
        });
        const after = this.get(kind, project, name)!;
        for (const l of this.listeners) l({ kind, project, name, before: cur, after });
        return after;
      }
      this.state.objects.delete(kind, project, name);
      this.state.events.record({
        project,
        kind,
        name,
        reason: 'Deleted',
        message: `${kind} ${name} deleted${actor ? ` by ${actor}` : ''}`,
      });
      for (const l of this.listeners) l({ kind, project, name, before: cur });
      return cur;
    });
  }

  /**
   * Removes an object without an event or a change hook: for a decommissioned edge, whose own
   * Decommissioned event says it all and whose scheduler work is announced by its caller.
   */
  forget(kind: Kind, project: string, name: string): void {
    this.state.objects.delete(kind, project, name);
  }

  revisions(project: string, workload: string): Revision[] {
    return this.state.objects.revisions(project, workload);
  }

  currentRevision(project: string, workload: string): number {
    return this.state.objects.currentRevision(project, workload);
  }

  /** Rolls a workload back to a kept revision (default: the previous one) by making it the newest. */
  rollback(
    project: string,
    workload: string,
    toRevision?: number,
    actor?: string,
  ): { object: Resource; revision: number } {
    return this.state.transaction(() => {
      const cur = this.get<Workload>('Workload', project, workload);
      if (!cur) throw new OutpostError('not_found', `Workload ${project}/${workload} not found`);
      const revs = this.revisions(project, workload);
      const current = revs[revs.length - 1];
      let target: Revision | undefined;
      if (toRevision === undefined) {
        target = revs.length >= 2 ? revs[revs.length - 2] : undefined;
        if (!target)
          throw new OutpostError('bad_request', `Workload ${workload} has only one revision: nothing to roll back to`);
      } else {
        target = revs.find((r) => r.revision === toRevision);
        if (!target)
          throw new OutpostError(
            'not_found',
            `Workload ${workload} has no revision ${toRevision}; kept revisions: ${revs.map((r) => r.revision).join(', ')}`,
          );
        if (current && target.revision === current.revision)
          throw new OutpostError(
            'bad_request',
            `revision ${toRevision} is already the current revision of ${workload}`,
          );
      }
      const next = {
        ...cur,
        metadata: { ...cur.metadata, resourceVersion: undefined },
        spec: { ...cur.spec, manifests: target.manifests as Workload['spec']['manifests'] },
      };
      const { object } = this.apply(next, {
        create: false,
        actor,
        cause: `${ROLLED_BACK_TO}${target.revision}${actor ? ` by ${actor}` : ''}`,
      });
      this.state.events.record({
        project,
        kind: 'Workload',
        name: workload,
        reason: 'RolledBack',
        message: `rolled back to the manifests of revision ${target.revision}${actor ? ` by ${actor}` : ''}`,
      });
      return { object, revision: this.currentRevision(project, workload) };
    });
  }

  private addRevision(project: string, workload: string, manifests: unknown[], cause: string | undefined): void {
    this.state.objects.addRevision(
      project,
      workload,
      { manifests, ...(cause !== undefined ? { changeCause: cause } : {}), at: new Date().toISOString() },
      KEPT_REVISIONS,
    );
  }

  private toResource(r: StoredObject): Resource {
    const metadata = {
      name: r.name,
      project: r.project,
      labels: r.labels,
      annotations: r.annotations,
      resourceVersion: String(r.resourceVersion),
      generation: r.generation,
      uid: r.uid,
      creationTimestamp: r.createdAt,
    };
    const base = { apiVersion: API_VERSION, kind: r.kind, metadata, spec: r.spec };
    if (r.kind === 'Workload')
      return { ...base, status: { revision: this.currentRevision(r.project, r.name) } } as Resource;
    return base as Resource;
  }
}
