/**
 * @module get and list: label selectors (kubectl's `-l` syntax, core/selector.ts), field selectors
 * on `metadata.name` and `metadata.namespace`, and paging with `limit` and `continue`.
 *
 * A continue token names where the next page starts (the last object's key); pages read the
 * objects as they are then, not as a snapshot at the first page's resourceVersion (Kubernetes
 * serves a snapshot from etcd's history; the hub keeps none): an object changed between pages
 * shows as it is when its page is read. docs/kubernetes-api.md says so.
 */
import { OutpostError } from '../../core/errors.js';
import type { Kind, LabelSelector, Resource } from '../../core/resources.js';
import { matchesSelector, parseSelectorString } from '../../core/selector.js';
import type { KubeObjects } from './deps.js';

export interface ListQuery {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: string;
  continue?: string;
}

interface FieldTerm {
  field: 'metadata.name' | 'metadata.namespace';
  equal: boolean;
  value: string;
}

/** `metadata.name=web,metadata.namespace!=lab`: `=`, `==` and `!=` on the two fields served. */
export function parseFieldSelector(s: string | undefined): FieldTerm[] {
  if (!s) return [];
  return s
    .split(',')
    .filter((t) => t.trim() !== '')
    .map((term) => {
      const m = /^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(term);
      if (!m) throw new OutpostError('bad_request', `fieldSelector: "${term}" is not FIELD=VALUE or FIELD!=VALUE`);
      const [, field, op, value] = m;
      if (field !== 'metadata.name' && field !== 'metadata.namespace')
        throw new OutpostError(
          'bad_request',
          `fieldSelector: field label not supported: ${field} (the hub selects on metadata.name and metadata.namespace)`,
        );
      return { field, equal: op !== '!=', value };
    });
}

export function parseLabelSelector(s: string | undefined): LabelSelector | undefined {
  if (!s) return undefined;
  try {
    return parseSelectorString(s);
  } catch (err) {
    throw new OutpostError('bad_request', `labelSelector: ${(err as Error).message}`);
  }
}

export function matchesFields(o: Resource, terms: FieldTerm[]): boolean {
  return terms.every((t) => {
    const v = t.field === 'metadata.name' ? o.metadata.name : o.metadata.project;
    return (v === t.value) === t.equal;
  });
}

/** Whether an object passes a list's selectors (also what a watch sends). */
export function selectorFilter(q: ListQuery): (o: Resource) => boolean {
  const labels = parseLabelSelector(q.labelSelector);
  const fields = parseFieldSelector(q.fieldSelector);
  return (o) => (!labels || matchesSelector(o.metadata.labels, labels)) && matchesFields(o, fields);
}

const keyOf = (o: Resource, allNamespaces: boolean) =>
  allNamespaces ? `${o.metadata.project}/${o.metadata.name}` : o.metadata.name;

function decodeContinue(token: string): string {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof v.after === 'string') return v.after;
  } catch {
    // answered below
  }
  throw new OutpostError('bad_request', 'continue: not a continue token this hub gave; list again without it');
}

const encodeContinue = (after: string) => Buffer.from(JSON.stringify({ after }), 'utf8').toString('base64url');

/** Reads from the store in batches this size while filtering, so a selective list over a large fleet stays bounded. */
const BATCH = 500;

/** One page of a list: the objects that match, and the token for the next page when there is one. */
export function listPage(
  objects: KubeObjects,
  kind: Kind,
  namespace: string | undefined,
  q: ListQuery,
): { items: Resource[]; continue?: string } {
  const match = selectorFilter(q);
  const limit = q.limit ? Number(q.limit) : 0;
  if (!Number.isInteger(limit) || limit < 0)
    throw new OutpostError('bad_request', `limit: must be a non-negative integer (got "${q.limit}")`);
  const all = namespace === undefined;
  let cursor = q.continue ? decodeContinue(q.continue) : '';
  const items: Resource[] = [];
  for (;;) {
    const batch = objects.list(kind, all ? '*' : namespace, { after: cursor, limit: BATCH });
    for (const o of batch) {
      cursor = keyOf(o, all);
      if (!match(o)) continue;
      if (limit > 0 && items.length === limit) return { items, continue: encodeContinue(keyOf(items[limit - 1], all)) };
      items.push(o);
    }
    if (batch.length < BATCH) return { items };
  }
}
