/**
 * Blobs across hub replicas (issue #22): the blob index is in PostgreSQL, so the replicas share
 * the files too, through one `--blob-dir` (a shared filesystem in production; one directory here).
 * A blob pushed through replica A is listed and served by replica B, byte for byte; and a replica
 * starting on the shared directory leaves another one's upload in progress alone, removing only
 * an abandoned one.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubApi } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { tempDir } from './helpers.js';
import { cli, freePort, startHubProc, type HubProc } from './procs.js';

const server = new TestPostgres();
let dir: string;
let blobDir: string;
let a: HubProc;
let b: HubProc;

beforeAll(async () => {
  dir = tempDir('outpost-replica-blobs-');
  blobDir = path.join(dir, 'shared-blobs');
  await server.start();
  const url = server.createDatabase('hub');
  a = await startHubProc(path.join(dir, 'hub-a'), await freePort(), [
    '--insecure-http',
    '--database',
    url,
    '--blob-dir',
    blobDir,
  ]);
}, 60_000);

afterAll(async () => {
  for (const h of [a, b]) await h?.proc.kill('SIGTERM').catch(() => undefined);
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('blobs on a directory the replicas share', () => {
  it('a replica starting leaves an upload in progress alone and removes an abandoned one', async () => {
    const young = path.join(blobDir, 'tmp', 'upload-in-progress');
    const old = path.join(blobDir, 'tmp', 'upload-abandoned');
    fs.writeFileSync(young, 'half of an upload');
    fs.writeFileSync(old, 'an upload nobody finished');
    const hourAgo = new Date(Date.now() - 3_600_000);
    fs.utimesSync(old, hourAgo, hourAgo);
    b = await startHubProc(path.join(dir, 'hub-b'), await freePort(), [
      '--insecure-http',
      '--database',
      server.url('hub'),
      '--blob-dir',
      blobDir,
    ]);
    // One admin token per database: A made it, and it works on B (B has no admin.token of its own).
    b = { ...b, token: a.token };
    expect(fs.existsSync(young)).toBe(true);
    expect(fs.existsSync(old)).toBe(false);
    fs.rmSync(young);
  });

  it('a blob pushed through replica A is listed and served by replica B', async () => {
    const bytes = randomBytes(256 * 1024);
    const file = path.join(dir, 'payload.bin');
    fs.writeFileSync(file, bytes);
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    const pushed = await cli(['blob', 'push', file], { OUTPOST_HUB: a.url, OUTPOST_TOKEN: a.token });
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(pushed.stdout.trim()).toBe(digest);

    const listed = await hubApi(b, 'GET', '/api/v1/projects/default/blobs');
    expect(listed.json.items.map((x: { digest: string }) => x.digest)).toContain(digest);
    const res = await fetch(`${b.url}/api/v1/projects/default/blobs/${digest}`, {
      headers: { authorization: `Bearer ${b.token}` },
    });
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    // One file, in the shared directory; none in either replica's own data directory.
    expect(fs.existsSync(path.join(blobDir, 'sha256', digest.slice(7)))).toBe(true);
    for (const h of ['hub-a', 'hub-b']) expect(fs.existsSync(path.join(dir, h, 'blobs'))).toBe(false);
  });
});
