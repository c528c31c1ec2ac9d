/**
 * @module `Table` responses (meta.k8s.io/v1), which `kubectl get` asks for so that the server
 * chooses the columns: the same columns `outpost get` prints (core/api/columns.ts), `-o wide`'s
 * extra ones at priority 1. Cells are computed when answered (an AGE is a string, as the
 * Kubernetes API server's are).
 */
import type { Context } from 'hono';
import { KIND_COLUMNS, type ApiObject } from '../../core/api/columns.js';
import type { KubeObject } from './convert.js';
import type { KubeResource } from './kinds.js';

/** Whether the Accept header asks for a Table (kubectl get sends `application/json;as=Table;v=v1;g=meta.k8s.io`). */
export function wantsTable(c: Context): boolean {
  const accept = c.req.header('accept') ?? '';
  return accept.split(',').some((a) => {
    const p = a.replace(/\s/g, '');
    return p.includes('as=Table') && p.includes('g=meta.k8s.io') && /;v=v1(;|$)/.test(p);
  });
}

const asApiObject = (o: KubeObject): ApiObject => ({
  kind: o.kind,
  metadata: { ...o.metadata, project: o.metadata.namespace },
  spec: o.spec as Record<string, unknown> | undefined,
  status: o.status as Record<string, unknown> | undefined,
});

/** The Table (meta.k8s.io/v1) of `items`. */
export function tableObject(
  c: Context,
  r: KubeResource,
  items: KubeObject[],
  metadata: { resourceVersion?: string; continue?: string },
): { kind: 'Table'; columnDefinitions: unknown[]; rows: unknown[] } & Record<string, unknown> {
  const include = c.req.query('includeObject') ?? 'Metadata';
  const cols = KIND_COLUMNS[r.kind];
  const columnDefinitions = [
    ...cols.base.map((name) => ({ name, priority: 0 })),
    ...cols.wide.map((name) => ({ name, priority: 1 })),
  ].map((d) => ({
    ...d,
    type: 'string',
    format: d.name === 'NAME' ? 'name' : '',
    description: `the ${d.name} column of outpost get ${r.plural}`,
  }));
  const now = Date.now();
  const rows = items.map((o) => ({
    cells: cols.row(asApiObject(o), { now, wide: true }),
    ...(include === 'None'
      ? {}
      : {
          object:
            include === 'Object'
              ? o
              : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
        }),
  }));
  return { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata, columnDefinitions, rows };
}

export function tableOf(
  c: Context,
  r: KubeResource,
  items: KubeObject[],
  metadata: { resourceVersion: string; continue?: string },
): Response {
  return c.body(JSON.stringify(tableObject(c, r, items, metadata)), 200, {
    'content-type': 'application/json;as=Table;v=v1;g=meta.k8s.io',
  });
}
