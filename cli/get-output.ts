/**
 * @module The output formats of `outpost get` beyond the tables: `-o name`, `-o jsonpath=TEMPLATE`
 * and `-o custom-columns=HEADER:PATH,...`, in kubectl's syntax. JSONPath expressions are
 * evaluated by jsonpath-plus; the template language around them (`{.a.b}`, `{"\n"}`,
 * `{range .items[*]}...{end}`) is kubectl's, and so are its errors (k8s.io/client-go
 * util/jsonpath, as kubectl 1.33 prints them): an index past the end of a list is an error, and a
 * field no object has is one only with `--allow-missing-template-keys=false` (by default it
 * prints nothing, as kubectl's does).
 */
import { InvalidArgumentError } from 'commander';
import { JSONPath } from 'jsonpath-plus';
import { CliError } from './errors.js';
import { formatTable } from './output.js';
import { OUTPUT_FORMATS, type OutputFormat } from './tables.js';

export type GetOutput =
  | { kind: OutputFormat | 'name' }
  | { kind: 'jsonpath'; template: Token[]; raw: string }
  | { kind: 'custom-columns'; columns: { header: string; path: string }[] };

export const GET_FORMATS = [...OUTPUT_FORMATS, 'name', 'jsonpath=TEMPLATE', 'custom-columns=HEADER:PATH,...'];

type Token =
  { t: 'text'; v: string } | { t: 'expr'; v: string } | { t: 'range'; v: string; body: Token[] } | { t: 'end' };

/** `.items[*].metadata.name` (kubectl) -> `$.items[*].metadata.name` (JSONPath). */
function toJsonPath(expr: string): string {
  const e = expr.trim();
  if (e.startsWith('$')) return e;
  if (e.startsWith('@')) return `$${e.slice(1)}`;
  if (e === '.' || e === '') return '$';
  return `$${e.startsWith('.') || e.startsWith('[') ? '' : '.'}${e}`;
}

function checkPath(path: string, where: string): void {
  try {
    JSONPath({ path: toJsonPath(path), json: {}, wrap: true });
  } catch (err) {
    throw new InvalidArgumentError(`${where}: invalid JSONPath "${path}": ${(err as Error).message}`);
  }
}

/** Splits a kubectl template into text and `{...}` parts; `{range X}` ... `{end}` nest. */
function parseTemplate(template: string): Token[] {
  const flat: Token[] = [];
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    if (open < 0) {
      flat.push({ t: 'text', v: template.slice(i) });
      break;
    }
    if (open > i) flat.push({ t: 'text', v: template.slice(i, open) });
    const close = template.indexOf('}', open);
    if (close < 0) throw new InvalidArgumentError(`jsonpath template: "{" at ${open + 1} is never closed with "}"`);
    const inner = template.slice(open + 1, close).trim();
    const quoted = /^"((?:[^"\\]|\\.)*)"$/.exec(inner);
    if (quoted) flat.push({ t: 'text', v: JSON.parse(`"${quoted[1]}"`) as string });
    else if (/^range\s/.test(inner)) {
      checkPath(inner.slice(6), 'jsonpath template');
      flat.push({ t: 'range', v: inner.slice(6).trim(), body: [] });
    } else if (inner === 'end') flat.push({ t: 'end' });
    else {
      checkPath(inner, 'jsonpath template');
      flat.push({ t: 'expr', v: inner });
    }
    i = close + 1;
  }
  // Nest range bodies.
  const root: Token[] = [];
  const stack: Token[][] = [root];
  for (const tok of flat) {
    if (tok.t === 'end') {
      if (stack.length === 1) throw new InvalidArgumentError('jsonpath template: {end} without {range ...}');
      stack.pop();
      continue;
    }
    stack[stack.length - 1].push(tok);
    if (tok.t === 'range') stack.push(tok.body);
  }
  if (stack.length > 1) throw new InvalidArgumentError('jsonpath template: {range ...} without {end}');
  return root;
}

/** A template that cannot be executed on the object: kubectl's wording after `Error executing template: `. */
export class JsonPathError extends CliError {}

/** How a template treats a field no object has: kubectl's `--allow-missing-template-keys`. */
export interface JsonPathOptions {
  allowMissingKeys: boolean;
}

const query = (path: string | string[], json: unknown): unknown[] =>
  JSONPath({ path, json: json as object, wrap: true }) as unknown[];

/**
 * Why a path found nothing, in kubectl's words, or undefined when nothing is no error there: a
 * field (`nope is not found`, unless missing keys are allowed) or an index past the end (`array
 * index out of bounds: index 5, length 1`, always, as kubectl). A wildcard, slice or filter that
 * selects nothing is no error, and neither is anything after it (kubectl: no input, no output).
 */
function whyEmpty(path: string, json: unknown, opts: JsonPathOptions): string | undefined {
  const segments = JSONPath.toPathArray(toJsonPath(path)).slice();
  let before: unknown[] = [json];
  for (let i = 1; i < segments.length; i++) {
    const found = query(segments.slice(0, i + 1), json);
    if (found.length > 0) {
      before = found;
      continue;
    }
    const seg = segments[i];
    if (/^\d+$/.test(seg)) {
      const list = before.find((v): v is unknown[] => Array.isArray(v));
      if (list && Number(seg) >= list.length) return `array index out of bounds: index ${seg}, length ${list.length}`;
    }
    if (opts.allowMissingKeys || seg === '*' || seg === '..' || /^[?(]|[:,]|^-/.test(seg)) return undefined;
    return `${seg} is not found`;
  }
  return undefined;
}

function evaluate(path: string, json: unknown, opts: JsonPathOptions = { allowMissingKeys: true }): unknown[] {
  const values = query(toJsonPath(path), json);
  if (values.length > 0) return values;
  const why = whyEmpty(path, json, opts);
  if (why) throw new JsonPathError(why);
  return values;
}

const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

function render(tokens: Token[], json: unknown, opts: JsonPathOptions): string {
  let out = '';
  for (const tok of tokens) {
    if (tok.t === 'text') out += tok.v;
    else if (tok.t === 'expr') out += evaluate(tok.v, json, opts).map(text).join(' ');
    else if (tok.t === 'range') for (const item of evaluate(tok.v, json, opts)) out += render(tok.body, item, opts);
  }
  return out;
}

export function parseGetOutput(s: string): GetOutput {
  if ((OUTPUT_FORMATS as readonly string[]).includes(s) || s === 'name') return { kind: s as OutputFormat | 'name' };
  const m = /^(jsonpath|custom-columns)=(.*)$/s.exec(s);
  if (m?.[1] === 'jsonpath') {
    if (m[2].trim() === '')
      throw new InvalidArgumentError('-o jsonpath= needs a template, e.g. -o jsonpath={.metadata.name}');
    return { kind: 'jsonpath', template: parseTemplate(m[2]), raw: m[2] };
  }
  if (m?.[1] === 'custom-columns') {
    const columns = m[2].split(',').map((spec) => {
      const colon = spec.indexOf(':');
      if (colon <= 0 || colon === spec.length - 1)
        throw new InvalidArgumentError(
          `custom-columns: "${spec}" is not HEADER:PATH, e.g. -o custom-columns=NAME:.metadata.name,STATE:.status.phase`,
        );
      const path = spec.slice(colon + 1);
      checkPath(path, `custom-columns ${spec.slice(0, colon)}`);
      return { header: spec.slice(0, colon), path };
    });
    return { kind: 'custom-columns', columns };
  }
  throw new InvalidArgumentError(`unknown output format "${s}": use one of ${GET_FORMATS.join(', ')}`);
}

/**
 * `-o jsonpath=...` applied to one object or to the List of many; a template kubectl could not
 * execute on it is an error in kubectl's words (`error executing jsonpath "{.spec.nope}": Error
 * executing template: nope is not found`), and nothing is printed.
 */
export function renderJsonPathOutput(
  out: { template: Token[]; raw: string },
  value: unknown,
  opts: JsonPathOptions = { allowMissingKeys: true },
): string {
  try {
    return render(out.template, value, opts);
  } catch (err) {
    if (!(err instanceof JsonPathError)) throw err;
    throw new JsonPathError(
      `error executing jsonpath ${JSON.stringify(out.raw)}: Error executing template: ${err.message}. \`-o yaml\` shows the fields the object has`,
    );
  }
}

/** `--allow-missing-template-keys=true|false` (kubectl's flag; a bare flag means true). */
export function parseBoolFlag(flag: string): (s: string | undefined) => boolean {
  return (s) => {
    if (s === undefined || s === 'true') return true;
    if (s === 'false') return false;
    throw new InvalidArgumentError(`${flag}=${s}: give true or false, e.g. ${flag}=false`);
  };
}

/**
 * `-o custom-columns=...`: one row per object; several matches are joined by ",", none is
 * `<none>`; an index past the end of a list is an error (kubectl's words, then the column).
 */
export function renderCustomColumns(
  columns: { header: string; path: string }[],
  objects: unknown[],
  opts: { noHeaders?: boolean } = {},
): string {
  const rows = objects.map((o) =>
    columns.map((c) => {
      // A missing field is `<none>`; an index past the end is an error, as in kubectl's custom-columns.
      let values: unknown[];
      try {
        values = evaluate(c.path, o);
      } catch (err) {
        if (!(err instanceof JsonPathError)) throw err;
        throw new JsonPathError(`${err.message} (column ${c.header}: ${c.path})`);
      }
      return values.length === 0 ? '<none>' : values.map(text).join(',');
    }),
  );
  return withoutHeaders(
    formatTable(
      columns.map((c) => c.header),
      rows,
    ),
    !!opts.noHeaders,
  );
}

/** Drops the header line of a table when `--no-headers` is given. */
export function withoutHeaders(table: string, noHeaders: boolean): string {
  return noHeaders ? table.slice(table.indexOf('\n') + 1) : table;
}
