import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../sync/sqlite.js';
import { tempDir, waitFor } from '../../test/helpers.js';
import { EdgeBlobStore } from '../blobs/store.js';
import { EdgeTransfers } from '../blobs/transfers.js';
import { EdgeEgress } from './egress.js';

const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

describe('the export ledger after a kill', () => {
  it('drops at start the blobs of files the hub already holds (killed between done and release)', async () => {
    const dir = tempDir('outpost-egress-');
    const db = openDatabase(path.join(dir, 'edge.db'));
    const blobs = new EdgeBlobStore(path.join(dir, 'blobs'));
    const open = () => {
      throw new Error('offline');
    };
    const transfers = new EdgeTransfers(blobs, open, () => false);
    const egress = new EdgeEgress({
      db,
      dataDir: dir,
      driver: 'process',
      blobs,
      transfers,
      open,
      connected: () => false,
    });
    stops.push(
      () => void db.close(),
      () => transfers.stop(),
      () => egress.stop(),
    );
    // Two files uploaded and recorded; the agent died before dropping the first one's blob. A third
    // is still queued (in the outbox): its blob must stay.
    const mk = async (name: string, content: string) => {
      const f = path.join(dir, name);
      fs.writeFileSync(f, content);
      return blobs.queueUpload(f, 'application/octet-stream');
    };
    const done = await mk('a', 'done and kept by mistake');
    const queued = await mk('b', 'still queued');
    blobs.sent(done.digest);
    const row = db.prepare(
      `INSERT INTO egress_files (workload, target, path, size, mtime_ms, digest, state, mode, queued_at, done_at)
       VALUES (?, 'out', ?, ?, 1, ?, ?, 'copy', 1, ?)`,
    );
    row.run('w', 'out/a', done.size, done.digest, 'done', 2);
    row.run('w', 'out/b', queued.size, queued.digest, 'queued', null);
    expect(blobs.files.has(done.digest)).toBe(true);
    egress.start();
    await waitFor(() => !blobs.files.has(done.digest), { what: 'the blob of the done file dropped' });
    expect(blobs.files.has(queued.digest)).toBe(true);
  });
});
