/**
 * @module The objects a GitRepo's commit holds: each file's YAML documents, each object labelled
 * with its file, document and line (as `outpost apply -f` names them, cli/sources.ts), validated
 * with the kinds' own schemas (hub/objects.ts validateResource). Every problem is collected, not
 * just the first, so one sync says all that is wrong with a commit.
 */
import { parseAllDocuments } from 'yaml';
import type { GitRepoSyncError } from '../../core/api/views.js';
import { OutpostError } from '../../core/errors.js';
import { MAX_OBJECT_BYTES, rawDocuments, tooBigMessage } from '../../core/limits.js';
import { parseManifests } from '../../core/manifest.js';
import type { Resource } from '../../core/resources.js';
import { validateResource } from '../objects.js';

/** The kinds a GitRepo applies: what `outpost apply` takes, but edges (they join) and GitRepos. */
export const GIT_KINDS = ['Workload', 'Placement', 'Registry', 'DataObject', 'AgentUpgrade'] as const;

export interface SourcedResource {
  object: Resource;
  file: string;
  line: number;
  document: number;
}

function lineOf(text: string, offset: number): number {
  let n = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

function refusal(kind: string): string | undefined {
  if (kind === 'Package')
    return 'not yet: packages and Helm charts from Git are not supported yet (issue #45, part 2); publish it with `outpost package push`';
  if (kind === 'Edge') return 'edges are not applied from Git: they join with a join token (outpost token join)';
  if (kind === 'GitRepo') return 'a GitRepo is not applied from Git: apply it with outpost apply -f';
  if (!(GIT_KINDS as readonly string[]).includes(kind))
    return `kind must be one of ${GIT_KINDS.join(', ')}: wrap Kubernetes manifests in a Workload (spec.manifests) and place it with a Placement`;
  return undefined;
}

/**
 * Parses and validates one file's objects for GitRepo `project`: objects name no other project
 * (they land in the GitRepo's).
 */
export function objectsOfFile(
  file: string,
  text: string,
  project: string,
): { objects: SourcedResource[]; errors: GitRepoSyncError[] } {
  const errors: GitRepoSyncError[] = [];
  const objects: SourcedResource[] = [];
  const big = rawDocuments(text).filter((d) => d.bytes > MAX_OBJECT_BYTES);
  if (big.length > 0) {
    for (const d of big)
      errors.push({ file, line: d.line, document: d.index, message: tooBigMessage(`document ${d.index}`, d.bytes) });
    return { objects, errors };
  }
  try {
    parseManifests(text);
  } catch (err) {
    const m = /line (\d+)/.exec((err as Error).message);
    errors.push({ file, ...(m ? { line: Number(m[1]) } : {}), message: (err as Error).message });
    return { objects, errors };
  }
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  if (!Array.isArray(docs)) return { objects, errors };
  docs.forEach((doc, i) => {
    if (doc.contents === null) return;
    const value = doc.toJS({ maxAliasCount: 100 }) as unknown;
    if (value === null || value === undefined) return;
    const line = lineOf(text, doc.contents.range?.[0] ?? doc.range[0]);
    const list = value as { kind?: unknown; items?: unknown };
    const items = Array.isArray(value)
      ? value
      : list.kind === 'List' && Array.isArray(list.items)
        ? (list.items as unknown[])
        : [value];
    for (const item of items) {
      const at = { file, line, document: i + 1 };
      const o = item as { kind?: unknown; metadata?: { name?: unknown; project?: unknown } } | null;
      if (typeof o !== 'object' || o === null || Array.isArray(o)) {
        errors.push({ ...at, message: 'expected an object with kind, metadata and spec' });
        continue;
      }
      const kind = typeof o.kind === 'string' ? o.kind : undefined;
      const name = typeof o.metadata?.name === 'string' ? o.metadata.name : undefined;
      const named = { ...at, ...(kind ? { kind } : {}), ...(name ? { name } : {}) };
      const refused = kind === undefined ? undefined : refusal(kind);
      if (refused) {
        errors.push({ ...named, path: 'kind', message: refused });
        continue;
      }
      if (o.metadata?.project !== undefined && o.metadata.project !== project) {
        errors.push({
          ...named,
          path: 'metadata.project',
          message: `is ${JSON.stringify(o.metadata.project)}, but this GitRepo applies to project ${project} only: remove metadata.project or make it ${project}`,
        });
        continue;
      }
      try {
        const object = validateResource({ ...o, metadata: { ...(o.metadata ?? {}), project } });
        objects.push({ object, ...at });
      } catch (err) {
        if (err instanceof OutpostError && Array.isArray(err.details))
          for (const d of err.details as { path: string; message: string }[])
            errors.push({ ...named, ...(d.path ? { path: d.path } : {}), message: d.message });
        else errors.push({ ...named, message: (err as Error).message });
      }
    }
  });
  return { objects, errors };
}
