import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { captureLogs } from '../core/logger.js';
import { tempDir } from '../test/helpers.js';
import { MARKER_FILE, readDatabaseMarker, recordTablesAtStart, writeDatabaseMarker } from './database-marker.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
const dataDir = () => {
  const d = tempDir('outpost-marker-');
  dirs.push(d);
  return d;
};

describe('hub-database.json', () => {
  it('records PostgreSQL without the password, 0600, and keeps its date while nothing changes', () => {
    const d = dataDir();
    expect(readDatabaseMarker(d)).toBeUndefined();
    expect(writeDatabaseMarker(d, 'postgres://outpost:s3cret@db:5432/hub', 1_000)).toBeUndefined();
    const text = fs.readFileSync(path.join(d, MARKER_FILE), 'utf8');
    expect(text).not.toContain('s3cret');
    expect(fs.statSync(path.join(d, MARKER_FILE)).mode & 0o777).toBe(0o600);
    expect(readDatabaseMarker(d)).toEqual({
      tables: 'postgres',
      database: 'postgres://outpost:***@db:5432/hub',
      since: new Date(1_000).toISOString(),
    });
    writeDatabaseMarker(d, 'postgres://outpost:other@db:5432/hub', 2_000);
    expect(readDatabaseMarker(d)?.since).toBe(new Date(1_000).toISOString());
    expect(writeDatabaseMarker(d, undefined, 3_000)?.tables).toBe('postgres');
    expect(readDatabaseMarker(d)).toEqual({ tables: 'sqlite', since: new Date(3_000).toISOString() });
  });

  it('a start without --database after PostgreSQL says so at warn', () => {
    const d = dataDir();
    writeDatabaseMarker(d, 'postgres://outpost@db/hub');
    const logs = captureLogs();
    try {
      recordTablesAtStart(d, undefined);
    } finally {
      logs.stop();
    }
    expect(
      logs
        .parsed()
        .some((l) => l.level === 40 /* pino's warn */ && /kept its tables in PostgreSQL/.test(String(l.msg))),
    ).toBe(true);
    expect(readDatabaseMarker(d)?.tables).toBe('sqlite');
  });

  it('a file that is not a marker is named with the fix', () => {
    const d = dataDir();
    fs.writeFileSync(path.join(d, MARKER_FILE), '{"tables":"mysql"}');
    expect(() => readDatabaseMarker(d)).toThrow(/is not what outpost writes there.*delete it and start the hub once/);
  });
});
