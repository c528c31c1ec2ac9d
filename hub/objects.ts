/**
 * @module The object store: Edge, Workload and Placement objects in SQLite with optimistic
 * concurrency (a global resourceVersion; an update carrying a stale one gets 409) and immutable
 * workload revisions (every change of manifests is a new revision; rollback copies an old one
 * forward, as `kubectl rollout undo` does).
 */
import { cachedStatement, inTransaction } from '../sync/sqlite.js';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { OutpostError } from '../core/errors.js';
import {
  AgentUpgrade,
  API_VERSION,
  Edge,
  formatIssues,
  KINDS,
  Placement,
  Registry,
  Workload,
  type Kind,
  type Resource,
} from '../core/resources.js';
import type { SqliteDatabase } from '../sync/sqlite.js';
import { MAX_OBJECT_BYTES, tooBigMessage } from '../core/limits.js';
import { checkWorkloadManifests } from '../core/kube-schema.js';
import { egressOf } from '../core/data.js';
import { nextResourceVersion } from './db.js';
import { recordEvent } from './state/events.js';
import { HUB_SEALED_PREFIX } from '../core/secrets.js';
import type { HubSecrets } from './secrets.js';
import { sealRegistrySpec } from './images/registries.js';

/** How many revisions of a workload are kept; older ones are pruned. */
export const KEPT_REVISIONS = 20;

const SCHEMAS = { Edge, Workload, Placement, Registry, AgentUpgrade } as const;

interface Row {
  kind: Kind;
  project: string;
  name: string;
  uid: string;
  resource_version: number;
  generation: number;
  labels: string;
  annotations: string;
  spec: string;
  created_at: string;
  updated_at: string;
}

export type ApplyAction = 'created' | 'configured' | 'unchanged';

export interface ObjectChange {
  kind: Kind;
  project: string;
  name: string;
  before?: Resource;
  after?: Resource;
}

export interface Revision {
  revision: number;
  createdAt: string;
  manifests: unknown[];
  /** Why it was made: the change-cause annotation, else who applied it or the rollback. */
  changeCause?: string;
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
export function sealedKeyId(db: SqliteDatabase): string | undefined {
  const row = db
    .prepare("SELECT spec FROM objects WHERE kind IN ('Workload', 'Registry') AND instr(spec, ?) > 0 LIMIT 1")
    .get(`"${HUB_SEALED_PREFIX}`) as { spec: string } | undefined;
  return row ? /"ohs1\.([0-9a-f]{8})\./.exec(row.spec)?.[1] : undefined;
}

export class ObjectStore {
  private readonly listeners: ((c: ObjectChange) => void)[] = [];

  constructor(
    private readonly db: SqliteDatabase,
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
    return inTransaction(this.db, () => {
      let n = 0;
      const objs = this.db
        .prepare("SELECT project, name, spec FROM objects WHERE kind = 'Workload' AND instr(spec, ?) > 0")
        .all('"Secret"') as { project: string; name: string; spec: string }[];
      for (const r of objs) {
        const spec = JSON.parse(r.spec) as Workload['spec'];
        const next = JSON.stringify({ ...spec, manifests: this.secrets.sealForStorage(spec.manifests, undefined) });
        if (next === r.spec) continue;
        this.db
          .prepare("UPDATE objects SET spec = ? WHERE kind = 'Workload' AND project = ? AND name = ?")
          .run(next, r.project, r.name);
        n++;
      }
      const revs = this.db
        .prepare('SELECT project, workload, revision, manifests FROM workload_revisions WHERE instr(manifests, ?) > 0')
        .all('"Secret"') as { project: string; workload: string; revision: number; manifests: string }[];
      for (const r of revs) {
        const next = JSON.stringify(
          this.secrets.sealForStorage(JSON.parse(r.manifests) as Workload['spec']['manifests'], undefined),
        );
        if (next === r.manifests) continue;
        this.db
          .prepare('UPDATE workload_revisions SET manifests = ? WHERE project = ? AND workload = ? AND revision = ?')
          .run(next, r.project, r.workload, r.revision);
        n++;
      }
      return n;
    });
  }

  private admitPlacement: ((p: Placement, cur: Placement | undefined, actor?: string) => Placement) | undefined;

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
    const row = cachedStatement(this.db, 'SELECT * FROM objects WHERE kind = ? AND project = ? AND name = ?').get(
      kind,
      project,
      name,
    ) as Row | undefined;
    return row ? (this.toResource(row) as T) : undefined;
  }

  /** Lists objects of a kind in a project (`*` = all projects), ordered by project and name. */
  list<T extends Resource = Resource>(kind: Kind, project: string, opts: { limit?: number; after?: string } = {}): T[] {
    const rows = (
      project === '*'
        ? cachedStatement(
            this.db,
            "SELECT * FROM objects WHERE kind = ? AND (project || '/' || name) > ? ORDER BY project, name LIMIT ?",
          ).all(kind, opts.after ?? '', opts.limit ?? -1)
        : cachedStatement(
            this.db,
            'SELECT * FROM objects WHERE kind = ? AND project = ? AND name > ? ORDER BY name LIMIT ?',
          ).all(kind, project, opts.after ?? '', opts.limit ?? -1)
    ) as Row[];
    return rows.map((r) => this.toResource(r) as T);
  }

  count(kind: Kind, project: string): number {
    const r = (
      project === '*'
        ? cachedStatement(this.db, 'SELECT COUNT(*) c FROM objects WHERE kind = ?').get(kind)
        : cachedStatement(this.db, 'SELECT COUNT(*) c FROM objects WHERE kind = ? AND project = ?').get(kind, project)
    ) as { c: number };
    return r.c;
  }

  /**
   * Creates or updates (the verb behind `outpost apply` and PUT). An input carrying
   * metadata.resourceVersion must match the stored one, or 409.
   */
  apply(
    input: Resource,
    opts: { create?: boolean; update?: boolean; actor?: string; cause?: string } = {},
  ): { object: Resource; action: ApplyAction } {
    const validated = validateResource(input);
    const { kind } = validated;
    const { project, name } = validated.metadata;
    return inTransaction(this.db, () => {
      const cur = this.get(kind, project, name);
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
        const rv = nextResourceVersion(this.db);
        const now = new Date().toISOString();
        this.db
          .prepare(
            'INSERT INTO objects (kind, project, name, uid, resource_version, generation, labels, annotations, spec, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)',
          )
          .run(
            kind,
            project,
            name,
            randomUUID(),
            rv,
            JSON.stringify(obj.metadata.labels),
            JSON.stringify(obj.metadata.annotations),
            JSON.stringify(specOf(obj)),
            now,
            now,
          );
        if (obj.kind === 'Workload') this.addRevision(project, name, obj.spec.manifests, changeCause(obj, opts));
        const after = this.get(kind, project, name)!;
        recordEvent(this.db, {
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
        throw new OutpostError('conflict', `${kind} ${project}/${name} already exists: use outpost apply to change it`);
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
      const rv = nextResourceVersion(this.db);
      this.db
        .prepare(
          'UPDATE objects SET resource_version = ?, generation = generation + ?, labels = ?, annotations = ?, spec = ?, updated_at = ? WHERE kind = ? AND project = ? AND name = ?',
        )
        .run(
          rv,
          specChanged ? 1 : 0,
          JSON.stringify(obj.metadata.labels),
          JSON.stringify(obj.metadata.annotations),
          JSON.stringify(specOf(obj)),
          new Date().toISOString(),
          kind,
          project,
          name,
        );
      if (
        obj.kind === 'Workload' &&
        cur.kind === 'Workload' &&
        JSON.stringify(obj.spec.manifests) !== JSON.stringify(cur.spec.manifests)
      )
        this.addRevision(project, name, obj.spec.manifests, changeCause(obj, opts));
      const after = this.get(kind, project, name)!;
      recordEvent(this.db, {
        project,
        kind,
        name,
        reason: 'Updated',
        message: `${kind} ${name} updated${opts.actor ? ` by ${opts.actor}` : ''}`,
      });
      for (const l of this.listeners) l({ kind, project, name, before: cur, after });
      return { object: after, action: 'configured' as const };
    });
  }

  delete(kind: Kind, project: string, name: string, actor?: string): Resource {
    return inTransaction(this.db, () => {
      const cur = this.get(kind, project, name);
      if (!cur) throw new OutpostError('not_found', `${kind} ${project}/${name} not found`);
      cachedStatement(this.db, 'DELETE FROM objects WHERE kind = ? AND project = ? AND name = ?').run(
        kind,
        project,
        name,
      );
      if (kind === 'Workload')
        cachedStatement(this.db, 'DELETE FROM workload_revisions WHERE project = ? AND workload = ?').run(
          project,
          name,
        );
      recordEvent(this.db, {
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
    cachedStatement(this.db, 'DELETE FROM objects WHERE kind = ? AND project = ? AND name = ?').run(
      kind,
      project,
      name,
    );
  }

  revisions(project: string, workload: string): Revision[] {
    return (
      cachedStatement(
        this.db,
        'SELECT revision, created_at, manifests, change_cause FROM workload_revisions WHERE project = ? AND workload = ? ORDER BY revision',
      ).all(project, workload) as {
        revision: number;
        created_at: string;
        manifests: string;
        change_cause: string | null;
      }[]
    ).map((r) => ({
      revision: r.revision,
      createdAt: r.created_at,
      manifests: JSON.parse(r.manifests) as unknown[],
      ...(r.change_cause ? { changeCause: r.change_cause } : {}),
    }));
  }

  currentRevision(project: string, workload: string): number {
    const r = cachedStatement(
      this.db,
      'SELECT MAX(revision) r FROM workload_revisions WHERE project = ? AND workload = ?',
    ).get(project, workload) as { r: number | null };
    return r.r ?? 0;
  }

  /** Rolls a workload back to a kept revision (default: the previous one) by making it the newest. */
  rollback(
    project: string,
    workload: string,
    toRevision?: number,
    actor?: string,
  ): { object: Resource; revision: number } {
    return inTransaction(this.db, () => {
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
        cause: `rolled back to revision ${target.revision}${actor ? ` by ${actor}` : ''}`,
      });
      recordEvent(this.db, {
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
    const next = this.currentRevision(project, workload) + 1;
    cachedStatement(
      this.db,
      'INSERT INTO workload_revisions (project, workload, revision, manifests, created_at, change_cause) VALUES (?, ?, ?, ?, ?, ?)',
    ).run(project, workload, next, JSON.stringify(manifests), new Date().toISOString(), cause ?? null);
    cachedStatement(this.db, 'DELETE FROM workload_revisions WHERE project = ? AND workload = ? AND revision <= ?').run(
      project,
      workload,
      next - KEPT_REVISIONS,
    );
  }

  private toResource(r: Row): Resource {
    const metadata = {
      name: r.name,
      project: r.project,
      labels: JSON.parse(r.labels) as Record<string, string>,
      annotations: JSON.parse(r.annotations) as Record<string, string>,
      resourceVersion: String(r.resource_version),
      generation: r.generation,
      uid: r.uid,
      creationTimestamp: r.created_at,
    };
    const base = { apiVersion: API_VERSION, kind: r.kind, metadata, spec: JSON.parse(r.spec) };
    if (r.kind === 'Workload')
      return { ...base, status: { revision: this.currentRevision(r.project, r.name) } } as Resource;
    return base as Resource;
  }
}
