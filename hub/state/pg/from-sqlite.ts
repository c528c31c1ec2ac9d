/**
 * @module `outpost hub migrate` (docs/operations.md, "HA and scale-out"): moves a stopped SQLite
 * hub's tables into an empty PostgreSQL database, so the same data directory runs on with
 * `--database`. Every table of the hub's schema (hub/state/schema/index.ts `hubSchemas`) is copied as it is:
 * objects and revisions, edges, tokens and edge credentials (edges reconnect without enrolling
 * again), assignments, status, events, the blob and data-file index, the catalog, images.
 *
 * What stays in the data directory: the edges' documents (hub.db's replica tables), the blob
 * files, tls/, secrets.key, the release key, admin.token. The SQLite copies of the tables are left
 * as they were: a hub started without `--database` still finds them (a way back, not a second
 * live copy: it no longer sees what changed in PostgreSQL).
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildInfo } from '../../../core/version.js';
import { migrate, openDatabase } from '../../../sync/sqlite.js';
import { hubSchemas } from '../schema/index.js';
import type { SyncPostgres } from './sync-client.js';

/** Tables that hold rows once a hub has run: a database with any of them filled is not migrated into. */
const HUB_DATA = ['objects', 'api_tokens', 'edge_runtime', 'edge_credentials', 'events', 'hub_identity'];

/** Rows per INSERT: PostgreSQL takes at most 65,535 parameters in one statement. */
const MAX_PARAMS = 30_000;

export interface MigrationReport {
  tables: { table: string; rows: number }[];
  rows: number;
}

/** The SQLite file of the hub in `dataDir`; throws naming the fix when there is none. */
export function sqliteHubFile(dataDir: string): string {
  const file = path.join(dataDir, 'hub.db');
  if (!fs.existsSync(file))
    throw new Error(`${file} does not exist: give --data the data directory of the SQLite hub to migrate`);
  return file;
}

/** The tables PostgreSQL holds for the hub (after migratePostgres), but its bookkeeping. */
function hubTables(pg: SyncPostgres): string[] {
  return pg
    .all<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables
       WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_versions'
       ORDER BY table_name`,
    )
    .map((r) => r.table_name);
}

/**
 * Copies the hub tables of `dataDir/hub.db` into `pg` (already migrated, see schema.ts) in one
 * PostgreSQL transaction. Refuses a database that already holds a hub, so nothing is ever mixed or
 * overwritten; a failure leaves PostgreSQL as it was.
 */
export function migrateSqliteHub(dataDir: string, pg: SyncPostgres): MigrationReport {
  const file = sqliteHubFile(dataDir);
  const tables = hubTables(pg);
  // What a hub writes at its first start or first enrollment; the migrations alone seed other
  // tables (counters), which the copy replaces.
  const taken = HUB_DATA.filter((t) => tables.includes(t) && pg.one(`SELECT 1 AS x FROM ${t} LIMIT 1`) !== undefined);
  if (taken.length)
    throw new Error(
      `the database already holds hub data (tables ${taken.slice(0, 5).join(', ')}${taken.length > 5 ? ', ...' : ''}): migrate into an empty database (createdb a new one)`,
    );
  const db = openDatabase(file);
  try {
    // A hub.db written by an older binary gets the current schema first, as a hub start would.
    for (const { component, migrations } of hubSchemas()) migrate(db, component, migrations, buildInfo().version);
    const identity = new Map(
      pg
        .all<{ table_name: string; column_name: string }>(
          `SELECT table_name, column_name FROM information_schema.columns
           WHERE table_schema = current_schema() AND is_identity = 'YES'`,
        )
        .map((r) => [r.table_name, r.column_name] as const),
    );
    const report: MigrationReport = { tables: [], rows: 0 };
    pg.transaction(() => {
      for (const table of tables) {
        const pgColumns = new Set(
          pg
            .all<{ column_name: string }>(
              `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?`,
              table,
            )
            .map((r) => r.column_name),
        );
        const sqliteColumns = (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map(
          (c) => c.name,
        );
        if (sqliteColumns.length === 0) {
          report.tables.push({ table, rows: 0 }); // a table this hub never had (a newer component)
          continue;
        }
        const columns = sqliteColumns.filter((c) => pgColumns.has(c));
        pg.run(`DELETE FROM ${table}`); // only what the migrations seeded: the database held no hub (above)
        const per = Math.max(1, Math.floor(MAX_PARAMS / columns.length));
        const insert = (n: number) =>
          `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${Array.from({ length: n }, () => `(${columns.map(() => '?').join(', ')})`).join(', ')}`;
        let rows = 0;
        let batch: unknown[][] = [];
        const flush = () => {
          if (batch.length === 0) return;
          pg.run(insert(batch.length), ...(batch.flat() as Parameters<SyncPostgres['run']>[1][]));
          rows += batch.length;
          batch = [];
        };
        for (const row of db
          .prepare(`SELECT ${columns.join(', ')} FROM ${table}`)
          .raw()
          .iterate() as Iterable<unknown[]>) {
          batch.push(row);
          if (batch.length >= per) flush();
        }
        flush();
        // Identity columns were given their values: the next generated one must follow them.
        const id = identity.get(table);
        if (id && rows > 0)
          pg.exec(`SELECT setval(pg_get_serial_sequence('${table}', '${id}'), (SELECT MAX(${id}) FROM ${table}))`);
        report.tables.push({ table, rows });
        report.rows += rows;
      }
    });
    return report;
  } finally {
    db.close();
  }
}
