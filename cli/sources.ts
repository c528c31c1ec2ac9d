/**
 * @module Reading what `outpost apply -f` is given: files, directories (their *.yaml, *.yml and
 * *.json files, sorted, not recursive) and stdin (`-`). Everything is parsed and checked locally
 * before anything is sent, so an error names the file, the document and its line.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { parseManifests } from '../core/manifest.js';
import { formatIssues, KINDS, Project, Resource } from '../core/resources.js';
import { CliError } from './errors.js';
import {
  formatBytes,
  MAX_OBJECT_BYTES,
  MAX_REQUEST_BYTES,
  rawDocuments,
  TOO_BIG_HINT,
  tooBigMessage,
} from '../core/limits.js';

export interface SourcedObject {
  object: Record<string, unknown>;
  /** `web.yaml, document 2 (line 14)`: where the object came from, for messages. */
  where: string;
}

const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
/** More errors than this are cut: the first ones are what the user fixes first anyway. */
const MAX_ERRORS = 20;

export async function readStream(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** The files a `-f` argument stands for: itself, or a directory's manifest files in name order. */
export function expandPath(p: string): string[] {
  let st: fs.Stats;
  try {
    st = fs.statSync(p);
  } catch (err) {
    throw new CliError(
      `cannot read ${p}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (err as Error).message}`,
      { cause: err },
    );
  }
  if (!st.isDirectory()) return [p];
  const files = fs
    .readdirSync(p, { withFileTypes: true })
    .filter((d) => d.isFile() && EXTENSIONS.has(path.extname(d.name).toLowerCase()))
    .map((d) => d.name)
    .sort();
  if (files.length === 0) throw new CliError(`the directory ${p} holds no .yaml, .yml or .json file`);
  return files.map((f) => path.join(p, f));
}

function lineOf(text: string, offset: number): number {
  let n = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

/**
 * Splits one text into objects, each labelled with its document and line. The expansion of lists
 * matches parseManifests (a top-level list or a `kind: List` yields its items), which has already
 * reported any syntax error by the time this runs.
 */
export function objectsOfText(text: string, name: string): SourcedObject[] {
  checkSizes(text, name);
  try {
    parseManifests(text);
  } catch (err) {
    throw new CliError(`${name}: ${(err as Error).message}`, { cause: err });
  }
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  if (!Array.isArray(docs)) return [];
  const out: SourcedObject[] = [];
  docs.forEach((doc, i) => {
    if (doc.contents === null) return;
    const value = doc.toJS({ maxAliasCount: 100 }) as unknown;
    if (value === null || value === undefined) return;
    const where = `${name}, document ${i + 1} (line ${lineOf(text, doc.contents.range?.[0] ?? doc.range[0])})`;
    const list = value as { kind?: unknown; items?: unknown };
    const items = Array.isArray(value)
      ? value
      : list.kind === 'List' && Array.isArray(list.items)
        ? list.items
        : undefined;
    if (items)
      items.forEach((item, j) =>
        out.push({ object: item as Record<string, unknown>, where: `${where}, item ${j + 1}` }),
      );
    else out.push({ object: value as Record<string, unknown>, where });
  });
  return out;
}

/** Files past this are refused unread: one apply carries at most MAX_REQUEST_BYTES anyway. */
const MAX_FILE_BYTES = 16 * MAX_REQUEST_BYTES;

/**
 * Refuses a text holding an object over MAX_OBJECT_BYTES before parsing it, naming the file, the
 * document, its line and (read without parsing) its kind and name.
 */
export function checkSizes(text: string, name: string): void {
  const big = rawDocuments(text).filter((d) => d.bytes > MAX_OBJECT_BYTES);
  if (big.length === 0) return;
  throw new CliError(
    `nothing was applied:\n  ${big
      .map((d) =>
        tooBigMessage(`${name}, document ${d.index} (line ${d.line})${d.label ? ` (${d.label})` : ''}`, d.bytes),
      )
      .join('\n  ')}`,
  );
}

/** Refuses objects that together are more than the hub takes in one request, before sending them. */
export function checkRequestSize(objects: SourcedObject[]): void {
  const sizes = objects.map((o) => ({ o, bytes: Buffer.byteLength(JSON.stringify(o.object)) }));
  const total = sizes.reduce((n, x) => n + x.bytes, 0);
  if (total <= MAX_REQUEST_BYTES) return;
  const biggest = sizes.sort((a, b) => b.bytes - a.bytes).slice(0, 3);
  throw new CliError(
    `nothing was applied: the ${objects.length} objects are ${formatBytes(total)} together, over the hub's ${formatBytes(MAX_REQUEST_BYTES)} limit for one apply: apply the files in several runs (the biggest: ${biggest.map((x) => `${x.o.where} (${describeObject(x.o.object)}) ${formatBytes(x.bytes)}`).join(', ')})`,
  );
}

function describeObject(o: Record<string, unknown>): string {
  const meta = o.metadata as { name?: unknown } | undefined;
  const kind = typeof o.kind === 'string' ? o.kind : 'object';
  return typeof meta?.name === 'string' ? `${kind} ${meta.name}` : kind;
}

/** Local check with the same schemas as the hub, for errors that name the file; the hub checks again. */
export async function checkObjects(objects: SourcedObject[], defaultProject: string): Promise<void> {
  const errors: string[] = [];
  // Loaded only when a workload is applied: the Kubernetes schemas take a while to load.
  const kube = objects.some((o) => o.object?.kind === 'Workload') ? await import('../core/kube-schema.js') : undefined;
  const seen = new Map<string, string>();
  for (const { object, where } of objects) {
    if (typeof object !== 'object' || object === null || Array.isArray(object)) {
      errors.push(`${where}: expected an object with kind, metadata and spec`);
      continue;
    }
    const kind = object.kind;
    if (kind === 'Project') {
      // Checked by the hub (an admin of every project applies one: docs/projects.md).
      const r = Project.safeParse(object);
      if (!r.success)
        for (const i of formatIssues(r.error))
          errors.push(`${where} (${describeObject(object)}): ${i.path ? `${i.path}: ` : ''}${i.message}`);
      continue;
    }
    if (typeof kind !== 'string' || !(KINDS as readonly string[]).includes(kind)) {
      const hint =
        typeof kind === 'string'
          ? ': wrap Kubernetes manifests in a Workload (spec.manifests) and place it with a Placement'
          : '';
      errors.push(`${where}: kind: must be one of ${KINDS.join(', ')} (got ${JSON.stringify(kind ?? null)})${hint}`);
      continue;
    }
    const r = Resource.safeParse(object);
    if (!r.success) {
      for (const i of formatIssues(r.error))
        errors.push(`${where} (${describeObject(object)}): ${i.path ? `${i.path}: ` : ''}${i.message}`);
      continue;
    }
    if (r.data.kind === 'Workload' && kube) {
      const issues = kube.checkWorkloadManifests(r.data.spec.manifests);
      for (const i of issues) errors.push(`${where} (${describeObject(object)}): ${i.path}: ${i.message}`);
      if (issues.length > 0) continue;
    }
    const project = (object.metadata as { project?: string }).project ?? defaultProject;
    const key = `${r.data.kind}/${project}/${r.data.metadata.name}`;
    const first = seen.get(key);
    if (first)
      errors.push(
        `${where}: ${r.data.kind.toLowerCase()}/${r.data.metadata.name} is also defined in ${first}: keep one`,
      );
    else seen.set(key, where);
  }
  if (errors.length > 0) {
    const shown = errors.slice(0, MAX_ERRORS);
    const more = errors.length > MAX_ERRORS ? `\n  ... and ${errors.length - MAX_ERRORS} more` : '';
    throw new CliError(`nothing was applied; fix these first:\n  ${shown.join('\n  ')}${more}`);
  }
}

/** Reads every `-f` argument (`-` is stdin, read once) into labelled objects. */
export async function readSources(args: string[], stdin: NodeJS.ReadableStream): Promise<SourcedObject[]> {
  const out: SourcedObject[] = [];
  let stdinRead = false;
  for (const a of args) {
    if (a === '-') {
      if (stdinRead) throw new CliError('-f - is given twice: stdin can be read only once');
      stdinRead = true;
      out.push(...objectsOfText(await readStream(stdin), '<stdin>'));
      continue;
    }
    for (const file of expandPath(a)) {
      let text: string;
      try {
        const size = fs.statSync(file).size;
        if (size > MAX_FILE_BYTES)
          throw new CliError(
            `${file} is ${formatBytes(size)}; one apply carries at most ${formatBytes(MAX_REQUEST_BYTES)} and one object at most ${formatBytes(MAX_OBJECT_BYTES)}: ${TOO_BIG_HINT}`,
          );
        text = fs.readFileSync(file, 'utf8');
      } catch (err) {
        if (err instanceof CliError) throw err;
        throw new CliError(`cannot read ${file}: ${(err as Error).message}`, { cause: err });
      }
      out.push(...objectsOfText(text, file));
    }
  }
  return out;
}
