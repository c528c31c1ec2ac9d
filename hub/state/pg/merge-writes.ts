/**
 * @module Deferred writes of one table made one statement (issue #22): a reconnect storm's batch of
 * handshakes on PostgreSQL deferred four writes per edge (its runtime row, a connections row, an
 * event, its lease), and the heartbeat flush one per edge; each statement costs the pg client
 * ~30 µs of the hub's CPU and the server a parse, a plan and a sync, where a row of a multi-row
 * statement costs a few (docs/benchmarks.md, issue #22). `mergeWrites` turns the writes of one
 * request that share their text into one statement taking all their rows, as JSON in one
 * parameter; PostgreSQL types each value as the table's own column (`json_populate_record`), so a
 * merged write converts its values exactly as the single writes did.
 *
 * Which writes merge, and when (each rule keeps the result the writes in their order give):
 * - The shapes below, and nothing else: no subquery, no RETURNING, every placeholder the value of
 *   one column (`col = $n`, or a VALUES item). `INSERT INTO t (cols) VALUES (...)` with or without
 *   ON CONFLICT; `UPDATE t SET ... WHERE` a conjunction; `DELETE FROM t WHERE` a conjunction.
 * - A later write joins an earlier one of the same text only when no statement between them
 *   mentions its table, and it mentions none they write: moving it up changes nothing another
 *   statement reads or writes. BEGIN, COMMIT, savepoints and any statement of another shape than a
 *   write or `SELECT pg_notify` end every group.
 * - Two rows of a merged UPDATE, or of an INSERT ... ON CONFLICT DO UPDATE, never name the same
 *   row (the same values of the WHERE's, or the conflict target's, parameters): PostgreSQL would
 *   apply only one of an UPDATE's, and refuse the INSERT. Such a write starts a group of its own.
 * - A write of the text that cannot join (marked `single`, or a value without a JSON form PostgreSQL
 *   reads as it reads the parameter: NaN, a string with a lone surrogate) stays in its place and
 *   ends the group: later writes of its text stay after it.
 * - The hub's PostgreSQL schema has no foreign key and no trigger (test/pg-merge-writes.test.ts
 *   checks): a write does nothing but to its own table, so moving it past writes of other tables
 *   changes nothing. A table linked to another would need its writes left in place here.
 */
import type { Param } from './statements.js';

/** At most this many rows in one merged statement. */
export const MAX_MERGED_ROWS = 1_000;

export interface Write {
  sql: string;
  params: Param[];
  /** Not to be merged (it was, and the merged statement was refused: each goes alone again). */
  single?: boolean;
}

/** A statement to send: `from` are the places of the writes it stands for, in their order. */
export interface MergedWrite {
  sql: string;
  params: Param[];
  from: number[];
}

interface Shape {
  table: string;
  /** The column each parameter (`$1` is index 0) gives a value to. */
  columns: string[];
  /** Parameters (indexes) whose values name the row written: no two rows of a group share them. */
  keys: number[];
  /** The statement for rows given as JSON in `$1`. */
  merged: string;
}

/** What a statement is, for merging: a write of `table` that merges (`shape`), or not. */
interface Kind {
  /** The table it writes, if it is a write. */
  writes?: string;
  /** Not a write nor a notification: every group ends before it. */
  barrier: boolean;
  shape?: Shape;
}

const kinds = new Map<string, Kind>();
const MAX_KINDS = 2_000;

const IDENT = /^[a-z_][a-z0-9_]*$/i;
const LITERAL = /^(?:'[^']*'|-?\d+(?:\.\d+)?|null|true|false)$/i;
const ASSIGN = /(?<![.\w$])([a-z_][a-z0-9_]*)\s*=\s*\$(\d+)(?!\d)/gi;

/** The rows, one JSON object each, as the table's own row type: `_m._p1` is the first parameter's value. */
function rowsFrom(table: string, columns: string[]): string {
  const fields = columns.map((c, i) => `_r.${c} AS _p${i + 1}`).join(', ');
  return (
    `json_array_elements($1::json) WITH ORDINALITY AS _e(v, i), ` +
    `LATERAL (SELECT ${fields} FROM json_populate_record(null::${table}, _e.v) _r) _m`
  );
}

const toMergedParams = (sql: string) => sql.replace(/\$(\d+)(?!\d)/g, '_m._p$1');

/** Each parameter once, numbered 1..n, all given a column. */
function wellNumbered(columns: (string | undefined)[], count: number): columns is string[] {
  return columns.length === count && columns.every((c) => c !== undefined && IDENT.test(c));
}

function insertShape(sql: string): Shape | undefined {
  const m = /^\s*insert\s+into\s+([a-z_][a-z0-9_]*)\s*\(([^()]*)\)\s*values\s*\(([^()]*)\)\s*([\s\S]*)$/i.exec(sql);
  if (!m) return undefined;
  const [, table, colList, valueList, tail] = m as unknown as [string, string, string, string, string];
  const cols = colList.split(',').map((c) => c.trim());
  const values = valueList.split(',').map((v) => v.trim());
  if (cols.length !== values.length || !cols.every((c) => IDENT.test(c))) return undefined;
  if (tail.includes('$') || /;|\breturning\b|\bselect\b/i.test(tail)) return undefined;
  if (tail && !/^on\s+conflict\b/i.test(tail)) return undefined;
  const columns: (string | undefined)[] = [];
  let count = 0;
  for (const [i, v] of values.entries()) {
    const p = /^\$(\d+)$/.exec(v);
    if (p) {
      const n = Number(p[1]) - 1;
      if (columns[n] !== undefined) return undefined;
      columns[n] = cols[i];
      count++;
    } else if (!LITERAL.test(v)) return undefined;
  }
  if (!wellNumbered(columns, count)) return undefined;
  let keys: number[] = [];
  if (/\bdo\s+update\b/i.test(tail)) {
    const target = /^on\s+conflict\s*\(([^()]*)\)/i.exec(tail)?.[1];
    if (!target) return undefined;
    keys = target.split(',').map((c) => columns.indexOf(c.trim()));
    if (keys.some((k) => k < 0)) return undefined;
  }
  const select = values.map((v) => toMergedParams(v)).join(', ');
  return {
    table,
    columns,
    keys,
    merged: `INSERT INTO ${table} (${cols.join(', ')}) SELECT ${select} FROM ${rowsFrom(table, columns)} ORDER BY _e.i${tail ? ` ${tail}` : ''}`,
  };
}

/** `col = $n` for every placeholder of `parts`, each once; the columns by parameter. */
function assignedColumns(parts: string[]): (string | undefined)[] | undefined {
  const columns: (string | undefined)[] = [];
  for (const part of parts) {
    const placeholders = part.match(/\$\d+/g)?.length ?? 0;
    let found = 0;
    for (const a of part.matchAll(ASSIGN)) {
      const n = Number(a[2]) - 1;
      if (columns[n] !== undefined) return undefined;
      columns[n] = a[1];
      found++;
    }
    if (found !== placeholders) return undefined;
  }
  return columns;
}

/** A WHERE that is a conjunction (no OR, no subquery): rows with different keys are different rows. */
const conjunction = (where: string) => !/\bor\b|\bselect\b|\bnot\b/i.test(where.replace(/\bis\s+not\b/gi, 'is'));

function keysOf(where: string): number[] {
  return [...where.matchAll(ASSIGN)].map((a) => Number(a[2]) - 1);
}

function updateShape(sql: string): Shape | undefined {
  const m = /^\s*update\s+([a-z_][a-z0-9_]*)\s+set\s+([\s\S]+?)\s+where\s+([\s\S]+)$/i.exec(sql);
  if (!m) return undefined;
  const [, table, set, where] = m as unknown as [string, string, string, string];
  if (/;|\breturning\b|\bselect\b|\bfrom\b/i.test(sql) || !conjunction(where)) return undefined;
  const columns = assignedColumns([set, where]);
  if (!columns || !wellNumbered(columns, columns.length)) return undefined;
  const keys = keysOf(where);
  // Without a key every row would update the same rows; a row that sets what another's WHERE
  // compares would see what the statement read, not what the write before it wrote.
  const setColumns = new Set([...set.matchAll(/(?<![.\w])([a-z_][a-z0-9_]*)\s*=/gi)].map((a) => a[1]!.toLowerCase()));
  if (!keys.length || keys.some((k) => setColumns.has(columns[k]!.toLowerCase()))) return undefined;
  return {
    table,
    columns,
    keys,
    merged: `UPDATE ${table} SET ${toMergedParams(set)} FROM ${rowsFrom(table, columns)} WHERE ${toMergedParams(where)}`,
  };
}

function deleteShape(sql: string): Shape | undefined {
  const m = /^\s*delete\s+from\s+([a-z_][a-z0-9_]*)\s+where\s+([\s\S]+)$/i.exec(sql);
  if (!m) return undefined;
  const [, table, where] = m as unknown as [string, string, string];
  if (/;|\breturning\b|\bselect\b|\busing\b/i.test(sql) || !conjunction(where)) return undefined;
  const columns = assignedColumns([where]);
  if (!columns || !wellNumbered(columns, columns.length)) return undefined;
  // Deleting a row twice deletes it once: no keys to keep apart.
  return {
    table,
    columns,
    keys: [],
    merged: `DELETE FROM ${table} USING ${rowsFrom(table, columns)} WHERE ${toMergedParams(where)}`,
  };
}

/** Whether a `$` stands inside a quoted string (not a parameter). */
function dollarQuoted(sql: string): boolean {
  let quote: string | undefined;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = undefined;
      else if (ch === '$') return true;
    } else if (ch === "'" || ch === '"') quote = ch;
  }
  return false;
}

function kindOf(sql: string): Kind {
  let k = kinds.get(sql);
  if (k) return k;
  const writes = /^\s*(?:insert\s+into|update|delete\s+from)\s+([a-z_][a-z0-9_]*)[\s(]/i.exec(sql)?.[1]?.toLowerCase();
  const notify = /^\s*select\s+pg_notify\s*\(\s*\$1\s*,\s*\$2\s*\)\s*$/i.test(sql);
  let shape: Shape | undefined;
  // A `$` inside a quoted string is not a parameter: such a statement is left as it is.
  if (writes && !dollarQuoted(sql))
    shape = /^\s*insert/i.test(sql) ? insertShape(sql) : /^\s*update/i.test(sql) ? updateShape(sql) : deleteShape(sql);
  k = { writes, barrier: !writes && !notify, shape };
  if (kinds.size >= MAX_KINDS) kinds.clear();
  kinds.set(sql, k);
  return k;
}

const words = new Map<string, RegExp>();
function mentions(sql: string, table: string): boolean {
  let w = words.get(table);
  if (!w) words.set(table, (w = new RegExp(`\\b${table}\\b`, 'i')));
  return w.test(sql);
}

/** A JSON value PostgreSQL converts to the column's type as it converts the parameter; undefined: none. */
function jsonValue(v: Param): unknown {
  // A lone surrogate (an edge's hello may carry one) goes as U+FFFD in a parameter, but PostgreSQL
  // refuses its JSON escape: such a write is left alone.
  if (typeof v === 'string') return /\p{Surrogate}/u.test(v) ? undefined : v;
  if (v === null || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'bigint') return v.toString();
  if (Buffer.isBuffer(v)) return `\\x${Buffer.from(v).toString('hex')}`;
  return undefined;
}

interface Group {
  sql: string;
  shape: Shape;
  rows: Record<string, unknown>[];
  from: number[];
  keys: Set<string>;
}

/** The row of a write as its shape's JSON object, or undefined when a value has no JSON form. */
function rowOf(shape: Shape, params: Param[]): Record<string, unknown> | undefined {
  const row: Record<string, unknown> = {};
  for (const [i, column] of shape.columns.entries()) {
    const v = jsonValue(params[i] ?? null);
    if (v === undefined) return undefined;
    row[column] = v;
  }
  return row;
}

/**
 * The writes as statements to send, in an order that gives the same result: writes of one text
 * that may move up to the first of them are one statement (rules in the module comment).
 */
export function mergeWrites(writes: readonly Write[]): MergedWrite[] {
  // Each output item: a write on its own (an index) or a group.
  const out: (number | Group)[] = [];
  const open = new Map<string, Group>();
  const close = (g: Group) => {
    open.delete(g.sql);
  };
  for (const [index, w] of writes.entries()) {
    const kind = kindOf(w.sql);
    if (kind.barrier) for (const g of [...open.values()]) close(g);
    else
      for (const g of [...open.values()])
        if (g.sql !== w.sql && (mentions(w.sql, g.shape.table) || (kind.writes && mentions(g.sql, kind.writes))))
          close(g);
    const shape = w.single ? undefined : kind.shape;
    const row = shape && rowOf(shape, w.params);
    if (!shape || !row || w.params.length !== shape.columns.length) {
      // Left in its place: a later write of the same text may not move past it either.
      const g = open.get(w.sql);
      if (g) close(g);
      out.push(index);
      continue;
    }
    const key = shape.keys.length ? JSON.stringify(shape.keys.map((k) => w.params[k] ?? null)) : undefined;
    let g = open.get(w.sql);
    if (g && ((key !== undefined && g.keys.has(key)) || g.rows.length >= MAX_MERGED_ROWS)) {
      close(g);
      g = undefined;
    }
    if (!g) {
      g = { sql: w.sql, shape, rows: [], from: [], keys: new Set() };
      open.set(w.sql, g);
      out.push(g);
    }
    g.rows.push(row);
    g.from.push(index);
    if (key !== undefined) g.keys.add(key);
  }
  return out.map((item) => {
    if (typeof item === 'number') return { sql: writes[item]!.sql, params: writes[item]!.params, from: [item] };
    if (item.rows.length === 1) {
      const i = item.from[0]!;
      return { sql: writes[i]!.sql, params: writes[i]!.params, from: [i] };
    }
    return { sql: item.shape.merged, params: [JSON.stringify(item.rows)], from: item.from };
  });
}
