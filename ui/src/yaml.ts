/**
 * YAML for the manifest views and the editor. The syntax check is core/manifest.ts
 * `parseManifests`, what the hub runs on `POST /api/v1/apply`, so an error shows here before any
 * request, as the hub would word it.
 */
import { stringify } from 'yaml';
import { parseManifests } from '../../core/manifest.js';

export function toYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** Several objects as one multi-document YAML text. */
export function toYamlDocs(values: unknown[]): string {
  return values.map((v) => toYaml(v)).join('---\n');
}

export type SyntaxCheck = { ok: true; objects: unknown[] } | { ok: false; message: string };

export function checkYaml(text: string): SyntaxCheck {
  try {
    const objects = parseManifests(text);
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
