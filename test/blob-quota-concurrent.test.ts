/**
 * The blob quota under concurrent uploads (issue #41): six uploads of 20 MiB at once under a
 * 40 MiB quota, half with a declared length and half chunked, were all accepted (120 MiB held).
 * Each upload now reserves its bytes before writing them, checked and written in one transaction
 * serialized per project: on a SQLite hub (in-process) and on two hub replicas sharing one
 * PostgreSQL and one blob directory, the bytes held never pass the quota, every refusal is a 413,
 * and nothing stays reserved after: the quota then takes exactly two such uploads again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type Hub } from '../hub/hub.js';
import { MiB, rawUpload } from './fixtures/blob-uploads.js';
import { hubApi } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { startReplicas } from './fixtures/replicas.js';
import { tempDir } from './helpers.js';
import type { HubProc } from './procs.js';

const QUOTA = 40 * MiB;
const SIZE = 20 * MiB;
const UPLOADS = 6;

type Target = { url: string; token: string };

async function heldBytes(hub: Target): Promise<{ bytes: number; digests: string[] }> {
  const r = await hubApi(hub, 'GET', '/api/v1/projects/default/blobs');
  const items = r.json.items as { digest: string; size: number }[];
  return { bytes: items.reduce((n, b) => n + b.size, 0), digests: items.map((b) => b.digest) };
}

async function removeAll(hub: Target): Promise<void> {
  for (const d of (await heldBytes(hub)).digests)
    expect((await hubApi(hub, 'DELETE', `/api/v1/projects/default/blobs/${d}`)).status).toBe(204);
}

/** Six uploads at once, spread over `hubs`; then the quota is checked, emptied and filled again one by one. */
async function uploadsAtOnce(hubs: Target[], what: string): Promise<void> {
  const ups = Array.from({ length: UPLOADS }, (_, i) =>
    rawUpload(hubs[i % hubs.length]!.url, {
      token: hubs[i % hubs.length]!.token,
      size: SIZE,
      chunked: i % 2 === 1,
      fill: 10 + i,
      close: true,
    }),
  );
  const answers = await Promise.all(ups.map((u) => u.answer));
  const held = await heldBytes(hubs[0]!);
  const accepted = answers.filter((a) => a.status === 201).length;
  console.log(
    `${what}: ${UPLOADS} uploads of ${SIZE} bytes at once under a quota of ${QUOTA}: answers ${answers.map((a) => a.status).join(' ')}; ${held.bytes} bytes held`,
  );
  for (const a of answers) {
    if (a.status === 201) continue;
    expect(a.status).toBe(413);
    expect(a.json.error.code).toBe('too_large');
    expect(a.json.error.message).toMatch(/would pass its quota of 41943040 bytes/);
  }
  expect(held.bytes).toBeLessThanOrEqual(QUOTA);
  expect(held.bytes).toBe(accepted * SIZE);

  // Nothing stays reserved: emptied, the project takes two of them again (on either replica), not a third.
  await removeAll(hubs[0]!);
  for (let i = 0; i < 3; i++) {
    const h = hubs[i % hubs.length]!;
    const r = await rawUpload(h.url, { token: h.token, size: SIZE, fill: 20 + i, close: true }).answer;
    expect(r.status, JSON.stringify(r.json)).toBe(i < 2 ? 201 : 413);
  }
  expect((await heldBytes(hubs[0]!)).bytes).toBe(2 * SIZE);
  await removeAll(hubs[0]!);
}

describe('the blob quota under concurrent uploads', () => {
  describe('one hub on SQLite', () => {
    let dir: string;
    let hub: Hub;
    beforeAll(async () => {
      dir = tempDir('outpost-quota-sqlite-');
      hub = await startHub({
        dataDir: path.join(dir, 'hub'),
        listen: '127.0.0.1:0',
        insecureHttp: true,
        blobQuotaBytes: QUOTA,
      });
    });
    afterAll(async () => {
      await hub?.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('never holds more than the quota', async () => {
      await uploadsAtOnce([{ url: hub.url, token: hub.adminToken }], 'SQLite');
    });
  });

  describe('two hub replicas on PostgreSQL', () => {
    const pg = new TestPostgres();
    let dir: string;
    let hubs: HubProc[] = [];
    beforeAll(async () => {
      dir = tempDir('outpost-quota-pg-');
      await pg.start();
      hubs = await startReplicas(dir, 2, pg.createDatabase('hub'), [
        '--blob-quota',
        String(QUOTA),
        '--blob-dir',
        path.join(dir, 'shared-blobs'),
      ]);
    }, 90_000);
    afterAll(async () => {
      for (const h of hubs) await h.proc.kill('SIGTERM');
      await pg.remove();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('never hold more than the quota together', async () => {
      await uploadsAtOnce(hubs, 'PostgreSQL, 2 replicas');
    });
  });
});
