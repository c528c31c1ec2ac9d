/**
 * The hub's blob store through the CLI against a real hub (TLS, real SQLite, real files):
 * push prints the digest, get returns the same bytes, a second push is deduplicated, the
 * project quota refuses what does not fit and leaves nothing behind, rm refuses a referenced
 * blob, and garbage collection removes an unreferenced blob after its grace period and never a
 * referenced one.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlobDigest } from '../core/blobs.js';
import { runCli } from './fixtures/cli.js';
import { startHub, type Hub } from '../hub/hub.js';
import { tempDir } from './helpers.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
const GRACE_MS = 60_000;
const cli = (args: string[]) => runCli(args, { env });

beforeAll(async () => {
  dir = tempDir('outpost-blobs-');
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    blobQuotaBytes: 8 * 1024 * 1024,
    blobGraceMs: GRACE_MS,
  });
  env = { OUTPOST_CONFIG: path.join(dir, 'cli', 'config.json') };
  expect((await cli(['login', '--hub', hub.url, '--token', hub.adminToken])).code).toBe(0);
});

afterAll(async () => {
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function file(name: string, bytes: Buffer): { file: string; digest: string } {
  const f = path.join(dir, name);
  fs.writeFileSync(f, bytes);
  return { file: f, digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}` };
}

const onDisk = (d: string) => fs.existsSync(path.join(dir, 'hub', 'blobs', 'sha256', d.slice(7)));

describe('the blob store', () => {
  it('push prints the digest, get returns the same bytes, ls lists it', async () => {
    const a = file('a.bin', randomBytes(3 * 1024 * 1024 + 17));
    const r = await cli(['blob', 'push', a.file, '--media-type', 'application/x-test']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(a.digest);
    expect(onDisk(a.digest)).toBe(true);

    const out = path.join(dir, 'a.out');
    expect((await cli(['blob', 'get', a.digest, '-o', out])).code).toBe(0);
    expect(fs.readFileSync(out).equals(fs.readFileSync(a.file))).toBe(true);

    const ls = await cli(['blob', 'ls']);
    expect(ls.stdout).toMatch(
      new RegExp(`${a.digest}\\s+3\\.0 MiB\\s+application/x-test\\s+token:\\S+\\s+\\d+s\\s+-\\s+<none>`),
    );
    // Pushing the same bytes again keeps one file and one row.
    expect((await cli(['blob', 'push', a.file])).stdout.trim()).toBe(a.digest);
    const json = JSON.parse((await cli(['blob', 'ls', '-o', 'json'])).stdout) as { digest: string }[];
    expect(json.filter((b) => b.digest === a.digest)).toHaveLength(1);
  });

  it('refuses an upload past the project quota, naming the fix, and keeps nothing of it', async () => {
    const big = file('big.bin', randomBytes(6 * 1024 * 1024));
    const r = await cli(['blob', 'push', big.file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /quota of 8388608 bytes: remove blobs with `outpost blob rm` or raise the hub's --blob-quota/,
    );
    expect(onDisk(big.digest)).toBe(false);
    expect(fs.readdirSync(path.join(dir, 'hub', 'blobs', 'tmp'))).toEqual([]);
  });

  it('garbage collection removes an unreferenced blob after its grace period and never a referenced one', async () => {
    const kept = file('kept.bin', randomBytes(1000));
    const loose = file('loose.bin', randomBytes(1000));
    for (const f of [kept, loose]) expect((await cli(['blob', 'push', f.file])).code).toBe(0);
    hub.blobs.setReferences('default', 'AgentUpgrade', 'v2', [kept.digest as BlobDigest]);

    // Within the grace period nothing goes.
    expect(await hub.blobs.gc(Date.now() + GRACE_MS / 2)).toEqual([]);
    expect(onDisk(loose.digest)).toBe(true);

    const gone = await hub.blobs.gc(Date.now() + GRACE_MS + 1000);
    expect(gone).toContain(loose.digest);
    expect(gone).not.toContain(kept.digest);
    expect(onDisk(loose.digest)).toBe(false);
    expect(onDisk(kept.digest)).toBe(true);
    const g = await cli(['blob', 'get', loose.digest, '-o', path.join(dir, 'loose.out')]);
    expect(g.code).toBe(1);
    expect(g.stderr).toMatch(/not found/);

    // A referenced blob cannot be removed by hand either; once the reference goes, its grace period starts.
    const rm = await cli(['blob', 'rm', kept.digest]);
    expect(rm.code).toBe(1);
    expect(rm.stderr).toMatch(/referred to by AgentUpgrade\/v2: delete or change that object first/);
    const t = Date.now();
    hub.blobs.setReferences('default', 'AgentUpgrade', 'v2', []);
    expect(await hub.blobs.gc(t + GRACE_MS / 2)).toEqual([]);
    expect(await hub.blobs.gc(t + GRACE_MS + 1000)).toContain(kept.digest);
    expect(onDisk(kept.digest)).toBe(false);
  });

  it('garbage collection drops a partial upload nobody resumed within the grace period', async () => {
    const d = `sha256:${'ab'.repeat(32)}` as BlobDigest;
    const partial = path.join(dir, 'hub', 'blobs', 'partial', d.slice(7));
    fs.writeFileSync(partial, randomBytes(100));
    await hub.blobs.gc(Date.now() + GRACE_MS / 2);
    expect(fs.existsSync(partial)).toBe(true);
    await hub.blobs.gc(Date.now() + GRACE_MS + 1000);
    expect(fs.existsSync(partial)).toBe(false);
  });

  it('rm removes an unreferenced blob at once', async () => {
    const f = file('rm.bin', randomBytes(100));
    expect((await cli(['blob', 'push', f.file])).code).toBe(0);
    expect((await cli(['blob', 'rm', f.digest])).code).toBe(0);
    expect(onDisk(f.digest)).toBe(false);
    expect((await cli(['blob', 'rm', f.digest])).stderr).toMatch(/not found/);
  });
});
