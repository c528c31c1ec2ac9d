/**
 * @module Applying one commit of a GitRepo: its objects created or changed, the objects its
 * previous commit owned and this one no longer holds pruned, the rules across objects checked
 * (placements, data paths), and the sync state recorded, all in one transaction, or nothing: a
 * bad commit never half-applies and the commit applied before stays (docs/gitops.md).
 *
 * Ownership: each object carries the annotation `outpost.dev/git-repo: NAME` (its project is the
 * GitRepo's), and the sync state lists what the applied commit owns. An object of the same kind and
 * name applied by hand, or owned by another GitRepo, is never taken over (the commit is refused,
 * naming the file and line); pruning touches only this GitRepo's objects.
 */
import crypto from 'node:crypto';
import type { GitRepoObjectView, GitRepoSyncError } from '../../core/api/views.js';
import { OutpostError } from '../../core/errors.js';
import {
  GIT_REPO_ANNOTATION,
  GIT_SOURCE_ANNOTATION,
  type DataObject,
  type GitRepo,
  type Kind,
  type Placement,
  type Resource,
} from '../../core/resources.js';
import { checkPlacements } from '../controllers/placements.js';
import { checkDataPaths } from '../data/paths.js';
import type { ObjectStore } from '../objects.js';
import type { HubState } from '../state/index.js';
import type { GitRepoStates, OwnedObject } from '../state/git-repos.js';
import { GIT_KINDS, type SourcedResource } from './parse.js';

export interface SyncDeps {
  state: Pick<HubState, 'transaction' | 'events' | 'edges' | 'clusters'>;
  objects: ObjectStore;
  states: GitRepoStates;
}

export type ApplyOutcome =
  | { applied: true; created: number; configured: number; deleted: number; unchanged: number }
  | { applied: false; errors: GitRepoSyncError[] };

const key = (kind: string, name: string) => `${kind}/${name}`;

/** The hash of an object as stored (labels, annotations, spec): what drift compares. */
export function storedHash(o: Resource): string {
  const text = JSON.stringify({ labels: o.metadata.labels, annotations: o.metadata.annotations, spec: o.spec });
  return crypto.createHash('sha256').update(text).digest('hex').slice(0, 32);
}

/** The owned objects changed or deleted by hand since their commit was applied. */
export function driftOf(
  objects: ObjectStore,
  project: string,
  owned: readonly OwnedObject[],
): { kind: string; name: string; change: 'changed' | 'deleted' }[] {
  const out: { kind: string; name: string; change: 'changed' | 'deleted' }[] = [];
  for (const o of owned) {
    const cur = objects.get(o.kind as Kind, project, o.name);
    if (!cur) out.push({ kind: o.kind, name: o.name, change: 'deleted' });
    else if (storedHash(cur) !== o.hash) out.push({ kind: o.kind, name: o.name, change: 'changed' });
  }
  return out;
}

/** The object as the GitRepo applies it: annotated with its owner and file, Git's version whatever the hub holds. */
function owned(s: SourcedResource, repo: string): Resource {
  const { resourceVersion: _rv, uid: _uid, generation: _g, creationTimestamp: _c, ...meta } = s.object.metadata;
  return {
    ...s.object,
    metadata: {
      ...meta,
      annotations: { ...meta.annotations, [GIT_REPO_ANNOTATION]: repo, [GIT_SOURCE_ANNOTATION]: s.file },
    },
  } as Resource;
}

/** Thrown inside the transaction to roll it back with errors by file and line. */
class Refused extends Error {
  constructor(readonly errors: GitRepoSyncError[]) {
    super('refused');
  }
}

/** Maps an error raised while writing (details naming objects by kind and name) to the files they came from. */
function located(err: unknown, sourced: SourcedResource[], kindHint?: string): GitRepoSyncError[] {
  if (err instanceof Refused) return err.errors;
  if (!(err instanceof OutpostError)) return [{ message: (err as Error).message }];
  const details = Array.isArray(err.details) ? (err.details as Record<string, unknown>[]) : [];
  if (details.length === 0) return [{ message: err.message }];
  return details.map((d) => {
    const name = (d.placement ?? d.name) as string | undefined;
    const kind = (d.kind as string | undefined) ?? kindHint;
    const s = sourced.find((x) => x.object.metadata.name === name && (!kind || x.object.kind === kind));
    return {
      ...(s
        ? { file: s.file, line: s.line, document: s.document, kind: s.object.kind, name: s.object.metadata.name }
        : {}),
      ...(typeof d.path === 'string' && d.path ? { path: d.path } : {}),
      message: String(d.message ?? err.message),
    };
  });
}

/**
 * Applies `sourced` (the commit's objects, already validated) as GitRepo `repo`'s commit `commit`,
 * in one transaction with its sync state; or nothing, returning why by file and line.
 */
export function applyCommit(
  d: SyncDeps,
  repo: GitRepo,
  commit: string,
  sourced: SourcedResource[],
  paths: string,
  /** What reading the commit found wrong: reported with the ownership problems, and nothing applied. */
  readErrors: GitRepoSyncError[] = [],
): ApplyOutcome {
  const { project, name } = repo.metadata;
  const prev = d.states.get(project, name);
  const prevOwned = new Set((prev?.owned ?? []).map((o) => key(o.kind, o.name)));
  const errors: GitRepoSyncError[] = [...readErrors];
  const seen = new Map<string, SourcedResource>();
  for (const s of sourced) {
    const k = key(s.object.kind, s.object.metadata.name);
    const first = seen.get(k);
    if (first) {
      errors.push(errorAt(s, `is also defined in ${first.file}:${first.line}: give each object one definition`));
      continue;
    }
    seen.set(k, s);
    const cur = d.objects.get(s.object.kind, project, s.object.metadata.name);
    if (!cur) continue;
    const owner = cur.metadata.annotations[GIT_REPO_ANNOTATION];
    if (owner === name || (owner === undefined && prevOwned.has(k))) continue;
    errors.push(
      errorAt(
        s,
        owner === undefined
          ? `${s.object.kind} ${s.object.metadata.name} already exists in project ${project} and was applied by hand: a GitRepo never takes over an object; delete it (outpost delete ${s.object.kind.toLowerCase()} ${s.object.metadata.name}) to let GitRepo ${name} own it, or rename it in Git`
          : `${s.object.kind} ${s.object.metadata.name} is owned by GitRepo ${owner}: an object has one owner; remove it from one of the repositories`,
      ),
    );
  }
  if (errors.length) return { applied: false, errors: sortedByFile(errors) };

  const actor = `GitRepo ${name} at ${commit.slice(0, 12)}`;
  let index = -1;
  try {
    return d.state.transaction(() => {
      const counts = { created: 0, configured: 0, deleted: 0, unchanged: 0 };
      const keep = new Set<string>();
      for (index = 0; index < sourced.length; index++) {
        const s = sourced[index];
        const r = d.objects.apply(owned(s, name), { actor });
        counts[r.action]++;
        keep.add(key(s.object.kind, s.object.metadata.name));
      }
      index = -1;
      // Pruned: what this GitRepo owns (its annotation, or its last commit's list) and this commit no longer holds.
      const mine = new Map<string, { kind: Kind; name: string }>();
      for (const o of prev?.owned ?? []) mine.set(key(o.kind, o.name), { kind: o.kind as Kind, name: o.name });
      for (const kind of GIT_KINDS)
        for (const o of d.objects.list(kind, project))
          if (o.metadata.annotations[GIT_REPO_ANNOTATION] === name)
            mine.set(key(kind, o.metadata.name), { kind, name: o.metadata.name });
      for (const [k, o] of mine) {
        if (keep.has(k)) continue;
        const cur = d.objects.get(o.kind, project, o.name);
        if (!cur) continue;
        const owner = cur.metadata.annotations[GIT_REPO_ANNOTATION];
        if (owner !== undefined && owner !== name) continue;
        d.objects.delete(o.kind, project, o.name, actor);
        counts.deleted++;
      }
      // The rules across objects, on the commit as written (a placement may come before its workload).
      const written = <T extends Resource>(kind: T['kind']): T[] =>
        sourced
          .filter((s) => s.object.kind === kind)
          .map((s) => d.objects.get<T>(kind, project, s.object.metadata.name)!);
      try {
        checkPlacements(d.state.edges, d.objects, written<Placement>('Placement'), d.state.clusters);
      } catch (err) {
        throw new Refused(located(err, sourced, 'Placement'));
      }
      try {
        checkDataPaths(d.state.edges, d.objects, written<DataObject>('DataObject'));
      } catch (err) {
        throw new Refused(located(err, sourced, 'DataObject'));
      }
      const ownedNow: OwnedObject[] = sourced.map((s) => ({
        kind: s.object.kind,
        name: s.object.metadata.name,
        file: s.file,
        line: s.line,
        hash: storedHash(d.objects.get(s.object.kind, project, s.object.metadata.name)!),
      }));
      d.states.applied(project, name, Date.now(), commit, paths, ownedNow);
      const changed = counts.created + counts.configured + counts.deleted;
      d.state.events.record({
        project,
        kind: 'GitRepo',
        name,
        reason: 'Synced',
        message: `commit ${commit.slice(0, 12)} applied: ${sourced.length} objects${changed ? ` (${counts.created} created, ${counts.configured} changed, ${counts.deleted} pruned)` : ', nothing changed'}`,
      });
      return { applied: true as const, ...counts };
    });
  } catch (err) {
    if (index >= 0 && !(err instanceof Refused)) {
      // The object being written raised it: name its file and line.
      const s = sourced[index];
      const at = {
        file: s.file,
        line: s.line,
        document: s.document,
        kind: s.object.kind,
        name: s.object.metadata.name,
      };
      const details =
        err instanceof OutpostError && Array.isArray(err.details)
          ? (err.details as { path?: string; message?: string }[])
          : [{ message: (err as Error).message }];
      return {
        applied: false,
        errors: details.map((x) => ({ ...at, ...(x.path ? { path: x.path } : {}), message: x.message ?? String(err) })),
      };
    }
    return { applied: false, errors: located(err, sourced) };
  }
}

/** Errors in file and line order, those of the whole commit first. */
function sortedByFile(errors: GitRepoSyncError[]): GitRepoSyncError[] {
  return [...errors].sort((a, b) => (a.file ?? '').localeCompare(b.file ?? '') || (a.line ?? 0) - (b.line ?? 0));
}

/** The owned objects as the status shows them. */
export function ownedView(owned: readonly OwnedObject[]): GitRepoObjectView[] {
  return owned.map(({ kind, name, file, line }) => ({ kind, name, file, line }));
}

/** An error of the object `s` defines, at its place in the repository. */
function errorAt(s: SourcedResource, message: string): GitRepoSyncError {
  return {
    file: s.file,
    line: s.line,
    document: s.document,
    kind: s.object.kind,
    name: s.object.metadata.name,
    message,
  };
}
