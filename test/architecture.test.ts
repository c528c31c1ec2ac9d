/**
 * The house rules that a reader of one file cannot see, checked over the whole tree:
 *
 * - imports point down: `main -> cli | hub | edge -> sync -> core`; hub/ and edge/ never import
 *   each other; cli/ imports nothing of hub/ or edge/;
 * - no import circles in the product tree (type-only imports count: a circle of types is a circle
 *   of concepts, and its files cannot be read or moved one at a time);
 * - hub/api is the top of the hub (HTTP only): nothing in hub/ imports it but the composition
 *   root, hub/hub.ts;
 * - product code never imports test code: test/ and `*.test.ts`. Test support (helpers, doubles,
 *   shared acceptance suites) lives under test/ (test/fixtures/, test/fakes/), never beside the
 *   product code: a file named like test support (`testing.ts`, `test-db.ts`, `*.fixture.ts`,
 *   `*.case.ts`, `testdata/`) outside test/ fails;
 * - each table is written (INSERT, UPDATE, DELETE) by exactly one module (hub/state/index.ts lists
 *   the owners);
 * - one door into the hub's state: no product file outside hub/state/ imports hub/state/sql.ts or
 *   names `SqlDb`; the rest of the hub gets `HubState` (hub/state/index.ts) or one of its members;
 * - one unit of work: a state module writes through hub/state/sql.ts `write` (a write nobody reads,
 *   queued in the open unit) or `run` (one whose result is read), never choosing per statement how
 *   a write travels on PostgreSQL (the client's `defer`, or the helpers `write` replaced).
 *
 * Source text is read as it is on disk: no build, no process, so this runs in the fast tier.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers.js';

const PRODUCT_DIRS = ['core', 'sync', 'hub', 'edge', 'cli'];

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(rel));
    else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** Test code: test/ and the test files vitest collects. */
export function isTestCode(file: string): boolean {
  return file.startsWith('test/') || /\.test\.tsx?$/.test(file);
}

/** Named like test support; such a file belongs under test/, not in the product tree. */
export function looksLikeTestSupport(file: string): boolean {
  return (
    /(^|\/)(testing|test-db)\.tsx?$/.test(file) || /\.(fixture|case)\.tsx?$/.test(file) || /(^|\/)testdata\//.test(file)
  );
}

/** The product tree: the folders above, main.ts (the entry) and main/ (the role verbs it adds). */
const productFiles = [...PRODUCT_DIRS.flatMap((d) => walk(d)), 'main.ts', ...walk('main')].filter(
  (f) => !isTestCode(f),
);

/** Relative imports of a file (static, dynamic and re-exports), resolved to repository paths. */
function importsOf(file: string, src = fs.readFileSync(path.join(ROOT, file), 'utf8')): string[] {
  const out: string[] = [];
  for (const m of src.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'(\.{1,2}\/[^']+)'/g))
    out.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1])).replace(/\.js$/, '.ts'));
  return out;
}

/** The product import graph: each file and the product files it imports. */
function importGraph(): Map<string, string[]> {
  const known = new Set(productFiles);
  return new Map(productFiles.map((f) => [f, importsOf(f).filter((i) => known.has(i))]));
}

/**
 * The import circles of a graph: its strongly connected components of more than one file, or of a
 * file importing itself (Tarjan's algorithm), each sorted, so a failure names every file in it.
 */
export function importCycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || graph.get(v)?.includes(v)) out.push(scc.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** hub/api is the hub's HTTP layer, the top: only the composition root (hub/hub.ts) imports it from outside. */
export function importsIntoApi(file: string, imported: string): boolean {
  return (
    file.startsWith('hub/') && !file.startsWith('hub/api/') && file !== 'hub/hub.ts' && imported.startsWith('hub/api/')
  );
}

const top = (file: string) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : file);

/** Top folders each folder may import (besides itself). */
const ALLOWED: Record<string, string[]> = {
  core: [],
  sync: ['core'],
  hub: ['sync', 'core'],
  edge: ['sync', 'core'],
  cli: ['sync', 'core'],
};

describe('import rules', () => {
  it('finds the product tree (the checks below are not vacuous)', () => {
    expect(productFiles.length).toBeGreaterThan(100);
    expect(productFiles).toContain('hub/hub.ts');
    expect(importsOf('hub/hub.ts')).toContain('sync/server.ts');
  });

  it('product code never imports test code', () => {
    const bad = productFiles.flatMap((f) =>
      importsOf(f)
        .filter(isTestCode)
        .map((i) => `${f} imports ${i}`),
    );
    expect(bad).toEqual([]);
  });

  it('imports point down: main -> cli | hub | edge -> sync -> core, hub and edge apart', () => {
    const bad: string[] = [];
    for (const f of productFiles) {
      const from = top(f);
      const allowed = ALLOWED[from];
      if (!allowed) continue; // main.ts and main/ wire everything
      for (const i of importsOf(f)) {
        const to = top(i);
        // main.ts and main/ are the top: nothing below imports them.
        const upward = to === 'main.ts' || to === 'main';
        if (to !== from && (upward || PRODUCT_DIRS.includes(to)) && !allowed.includes(to))
          bad.push(`${f} imports ${i}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('has no import circles', () => {
    expect(importCycles(importGraph()).map((c) => c.join(' -> '))).toEqual([]);
  });

  it('nothing in hub/ imports hub/api but the composition root (hub/hub.ts)', () => {
    const bad = productFiles.flatMap((f) =>
      importsOf(f)
        .filter((i) => importsIntoApi(f, i))
        .map(
          (i) =>
            `${f} imports ${i}: hub/api is HTTP only; move what both need below it (hub/auth/, the feature's folder)`,
        ),
    );
    expect(bad).toEqual([]);
    expect(importsOf('hub/hub.ts').some((i) => i.startsWith('hub/api/'))).toBe(true);
  });

  it('test support lives under test/, not beside the product code', () => {
    const bad = productFiles
      .filter(looksLikeTestSupport)
      .map((f) => `${f} is test support in the product tree: move it under test/fixtures/ or test/fakes/`);
    expect(bad).toEqual([]);
  });

  it('the rule would catch a violation', () => {
    expect(isTestCode('test/fixtures/sync-server.ts')).toBe(true);
    expect(isTestCode('sync/server.test.ts')).toBe(true);
    expect(isTestCode('sync/testing.ts')).toBe(false);
    expect(looksLikeTestSupport('sync/testing.ts')).toBe(true);
    expect(looksLikeTestSupport('hub/auth/test-db.ts')).toBe(true);
    expect(looksLikeTestSupport('hub/auth/join-race.fixture.ts')).toBe(true);
    expect(looksLikeTestSupport('edge/drivers/driver.case.ts')).toBe(true);
    expect(looksLikeTestSupport('edge/drivers/process/testdata/agent.ts')).toBe(true);
    expect(looksLikeTestSupport('hub/state/edges.ts')).toBe(false);
    expect(isTestCode('hub/state/edges.ts')).toBe(false);
    expect(ALLOWED.hub).not.toContain('edge');
    expect(ALLOWED.edge).not.toContain('hub');
  });

  it('the circle and hub/api rules would catch a violation', () => {
    // hub/api context <-> stream, as it was: a circle of two; a file beside it that only imports is not in it.
    const graph = new Map([
      ['hub/api/context.ts', ['hub/api/stream.ts', 'hub/objects.ts']],
      ['hub/api/stream.ts', ['hub/api/context.ts']],
      ['hub/hub.ts', ['hub/api/context.ts']],
      ['hub/objects.ts', []],
    ]);
    expect(importCycles(graph)).toEqual([['hub/api/context.ts', 'hub/api/stream.ts']]);
    // Longer circles (hub/tunnel gateway -> ops -> routes -> gateway) and a file importing itself.
    expect(
      importCycles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['c.ts']],
          ['c.ts', ['a.ts']],
          ['d.ts', ['d.ts']],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts', 'c.ts'], ['d.ts']]);
    expect(
      importCycles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', []],
        ]),
      ),
    ).toEqual([]);
    expect(importsIntoApi('hub/tunnel/gateway.ts', 'hub/api/context.ts')).toBe(true);
    expect(importsIntoApi('hub/change-hooks.ts', 'hub/api/stream.ts')).toBe(true);
    expect(importsIntoApi('hub/hub.ts', 'hub/api/app.ts')).toBe(false);
    expect(importsIntoApi('hub/api/objects.ts', 'hub/api/context.ts')).toBe(false);
    expect(importsIntoApi('hub/tunnel/gateway.ts', 'hub/auth/contract.ts')).toBe(false);
  });
});

/** Tables created in the product tree, by name. */
function tables(): Set<string> {
  const out = new Set<string>();
  for (const f of productFiles)
    for (const m of fs.readFileSync(path.join(ROOT, f), 'utf8').matchAll(/CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)/g))
      out.add(m[1]);
  return out;
}

/** table -> files that write it. */
function writers(): Map<string, Set<string>> {
  const known = tables();
  const out = new Map<string, Set<string>>();
  for (const f of productFiles) {
    const src = fs.readFileSync(path.join(ROOT, f), 'utf8');
    for (const m of src.matchAll(/\b(?:INSERT(?:\s+OR\s+[A-Z]+)?\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_]+)\b/g)) {
      if (!known.has(m[1])) continue;
      // A row a migration seeds next to the CREATE TABLE is schema, not a write (hub/state/schema/hub.ts: counters).
      const sql = src.slice(src.lastIndexOf('`', m.index), src.indexOf('`', m.index));
      if (sql.includes('CREATE TABLE')) continue;
      if (!out.has(m[1])) out.set(m[1], new Set());
      out.get(m[1])!.add(f);
    }
  }
  return out;
}

/**
 * Writers that are known and on their way out, each with the reason. An entry that no longer
 * holds fails the test too, so the list only shrinks.
 */
const MOVING: { table: string; file: string; why: string }[] = [];

describe('one writer per table', () => {
  it('each table is written by exactly one module', () => {
    const w = writers();
    expect(w.get('edge_runtime')).toEqual(new Set(['hub/state/edges.ts']));
    for (const table of ['assignments', 'spec_written', 'rollouts'])
      expect(w.get(table)).toEqual(new Set(['hub/state/assignments.ts']));
    const bad: string[] = [];
    for (const [table, files] of w) {
      const rest = [...files].filter((f) => !MOVING.some((m) => m.table === table && m.file === f));
      if (rest.length > 1) bad.push(`${table} is written by ${rest.join(', ')}: give it one owner (hub/state/)`);
    }
    expect(bad).toEqual([]);
  });

  it('edge_runtime is read through hub/state/edges.ts (EdgeState), not by the scheduler or others', () => {
    // hub/state/status.ts joins an edge's liveness into the status rows it owns, in one query.
    const readers = productFiles.filter((f) =>
      /\b(?:FROM|JOIN)\s+edge_runtime\b/.test(fs.readFileSync(path.join(ROOT, f), 'utf8')),
    );
    expect(readers.sort()).toEqual(['hub/state/edges.ts', 'hub/state/status.ts']);
  });

  it('lists no exception that no longer holds', () => {
    const w = writers();
    const stale = MOVING.filter((m) => !w.get(m.table)?.has(m.file)).map(
      (m) => `${m.file} no longer writes ${m.table}`,
    );
    expect(stale).toEqual([]);
  });
});

/**
 * Why `file` (with source `src`) goes around `HubState` into the database: it imports
 * hub/state/sql.ts or names `SqlDb` outside hub/state/. Empty when it does not.
 */
export function stateDoorViolations(file: string, src: string): string[] {
  if (file.startsWith('hub/state/')) return [];
  const out: string[] = [];
  if (importsOf(file, src).includes('hub/state/sql.ts'))
    out.push(`${file} imports hub/state/sql.ts: take HubState (hub/state/index.ts) or one of its members`);
  if (/\bSqlDb\b/.test(src))
    out.push(`${file} names SqlDb: the database stays inside hub/state/; take HubState or one of its members`);
  return out;
}

describe("one door into the hub's state", () => {
  const violations = () =>
    productFiles.flatMap((f) => stateDoorViolations(f, fs.readFileSync(path.join(ROOT, f), 'utf8')));

  it('no product file outside hub/state imports hub/state/sql.ts or names SqlDb', () => {
    expect(violations()).toEqual([]);
  });

  it('the rule would catch a violation', () => {
    expect(stateDoorViolations('hub/catalog/index.ts', "import { transaction } from '../state/sql.js';")).toEqual([
      'hub/catalog/index.ts imports hub/state/sql.ts: take HubState (hub/state/index.ts) or one of its members',
    ]);
    expect(stateDoorViolations('hub/hub.ts', "const { db } = await import('./state/sql.js');")).toHaveLength(1);
    expect(
      stateDoorViolations('hub/auth/tokens.ts', "import type { SqlDb } from '../state/index.js';\nlet db: SqlDb;"),
    ).toEqual([
      'hub/auth/tokens.ts names SqlDb: the database stays inside hub/state/; take HubState or one of its members',
    ]);
    expect(stateDoorViolations('main/hub-command.ts', "export * from '../hub/state/sql.js';")).toHaveLength(1);
    // Inside hub/state the database is the point; a name that merely contains it is not it.
    expect(stateDoorViolations('hub/state/blobs.ts', "import { run, type SqlDb } from './sql.js';")).toEqual([]);
    expect(stateDoorViolations('hub/api/apply.ts', "import type { HubState } from '../state/index.js';")).toEqual([]);
    expect(stateDoorViolations('hub/api/apply.ts', 'const mySqlDbName = 1;')).toEqual([]);
  });
});

/**
 * Why the state module `file` (with source `src`) chooses per statement how a write travels on
 * PostgreSQL instead of making it part of the unit of work (hub/state/sql.ts `write`). Empty when
 * it does not, and for sql.ts and the client (hub/state/pg/), which implement the unit.
 */
export function unitOfWorkViolations(file: string, src: string): string[] {
  if (!file.startsWith('hub/state/') || file === 'hub/state/sql.ts' || file.startsWith('hub/state/pg/')) return [];
  const out: string[] = [];
  for (const m of src.matchAll(/\b(runLater|runBeforeCommit)\b|\.(defer)\s*\(/g))
    out.push(
      `${file} uses ${m[1] ?? '.defer()'}: write through sql.ts write (nobody reads the result) or run (the result is read)`,
    );
  return out;
}

describe('one unit of work in the state modules', () => {
  it("no state module outside sql.ts and pg/ calls runLater, runBeforeCommit or the client's defer", () => {
    expect(productFiles.flatMap((f) => unitOfWorkViolations(f, fs.readFileSync(path.join(ROOT, f), 'utf8')))).toEqual(
      [],
    );
  });

  it('the rule would catch a violation', () => {
    expect(unitOfWorkViolations('hub/state/status.ts', "runLater(db, 'DELETE FROM t WHERE edge = ?', edge);")).toEqual([
      'hub/state/status.ts uses runLater: write through sql.ts write (nobody reads the result) or run (the result is read)',
    ]);
    expect(unitOfWorkViolations('hub/state/events.ts', "import { runBeforeCommit } from './sql.js';")).toHaveLength(1);
    expect(unitOfWorkViolations('hub/state/leases.ts', "if (isPostgres(db)) db.defer('DELETE FROM t');")).toHaveLength(
      1,
    );
    expect(unitOfWorkViolations('hub/state/leases.ts', "write(db, 'DELETE FROM t WHERE edge = ?', edge);")).toEqual([]);
    // The unit itself, and files outside hub/state (which cannot reach the database: the rule above).
    expect(unitOfWorkViolations('hub/state/sql.ts', 'db.defer(sql, ...params);')).toEqual([]);
    expect(unitOfWorkViolations('hub/state/pg/sync-client.ts', 'this.defer(sql);')).toEqual([]);
  });
});
