/**
 * YAML for the manifest views and the editor. The syntax check mirrors core/manifest.ts
 * `parseManifests` (what the hub runs on `POST /api/v1/apply`): same parser, same options, same
 * wording, so an error shows here before any request, as the hub would word it.
 */
import { parseAllDocuments, stringify } from 'yaml';

export function toYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** Several objects as one multi-document YAML text. */
export function toYamlDocs(values: unknown[]): string {
  return values.map((v) => toYaml(v)).join('---\n');
}

export function parseObjects(text: string): unknown[] {
  const docs = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true });
  if (!Array.isArray(docs)) return [];
  const out: unknown[] = [];
  docs.forEach((doc, i) => {
    const err = doc.errors[0];
    if (err) {
      const pos = err.linePos?.[0];
      const at = pos ? ` (line ${pos.line}, column ${pos.col})` : '';
      throw new Error(
        `YAML document ${i + 1}${at}: ${err.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`,
      );
    }
    if (doc.contents === null) return;
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) out.push(...value);
    else if (typeof value !== 'object')
      throw new Error(
        `YAML document ${i + 1}: expected a Kubernetes object (a mapping with apiVersion, kind and metadata), got ${JSON.stringify(value).slice(0, 60)}`,
      );
    else {
      const list = value as { kind?: unknown; items?: unknown };
      if (list.kind === 'List' && Array.isArray(list.items)) out.push(...list.items);
      else out.push(value);
    }
  });
  return out;
}

export type SyntaxCheck = { ok: true; objects: unknown[] } | { ok: false; message: string };

export function checkYaml(text: string): SyntaxCheck {
  try {
    const objects = parseObjects(text);
    if (objects.length === 0)
      return {
        ok: false,
        message: 'the text holds no object: write a Workload or Placement (apiVersion, kind, metadata, spec)',
      };
    return { ok: true, objects };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

/** An object as the editor shows it: what a user may change, plus resourceVersion to catch concurrent edits. */
export function editable(o: {
  apiVersion?: string;
  kind: string;
  metadata: {
    name: string;
    project?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
  };
  spec: unknown;
}): Record<string, unknown> {
  const m = o.metadata;
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    metadata: {
      name: m.name,
      project: m.project,
      ...(m.labels && Object.keys(m.labels).length ? { labels: m.labels } : {}),
      ...(m.annotations && Object.keys(m.annotations).length ? { annotations: m.annotations } : {}),
      ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}),
    },
    spec: o.spec,
  };
}
