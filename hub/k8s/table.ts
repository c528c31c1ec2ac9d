/**
 * @module `Table` responses (meta.k8s.io/v1), which `kubectl get` asks for so that the server
 * chooses the columns.
 */
import type { Context } from 'hono';
import type { KubeObject } from './convert.js';
import type { KubeResource } from './kinds.js';

/** Whether the Accept header asks for a Table (kubectl get sends `application/json;as=Table;v=v1;g=meta.k8s.io`). */
export function wantsTable(c: Context): boolean {
  const accept = c.req.header('accept') ?? '';
  return accept.split(',').some((a) => {
    const p = a.replace(/\s/g, '');
    return p.includes('as=Table') && p.includes('g=meta.k8s.io') && p.includes('v=v1') && !p.includes('v=v1beta1');
  });
}

export function tableOf(
  c: Context,
  r: KubeResource,
  items: KubeObject[],
  metadata: { resourceVersion: string; continue?: string },
): Response {
  const include = c.req.query('includeObject') ?? 'Metadata';
  const columnDefinitions = [
    { name: 'Name', type: 'string', format: 'name', description: 'metadata.name', priority: 0 },
    { name: 'Age', type: 'string', format: '', description: 'metadata.creationTimestamp', priority: 0 },
  ];
  const rows = items.map((o) => ({
    cells: [o.metadata.name, o.metadata.creationTimestamp ?? ''],
    ...(include === 'None'
      ? {}
      : {
          object:
            include === 'Object'
              ? o
              : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
        }),
  }));
  void r;
  return c.body(
    JSON.stringify({ kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata, columnDefinitions, rows }),
    200,
    {
      'content-type': 'application/json;as=Table;v=v1;g=meta.k8s.io',
    },
  );
}
