/**
 * Blob transfers over a pair of tunnel muxes (the edge opens the streams) with real files in temp
 * dirs: a download and an upload cut halfway resume from the bytes on disk and move the rest
 * only; a blob the hub has is not sent; a partial file with wrong bytes is caught by the final
 * digest check and starts over.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BlobDigest } from '../core/blobs.js';
import { muxLink } from '../test/fixtures/mux-link.js';
import { tempDir } from '../test/helpers.js';
import { BlobFiles } from './blob-files.js';
import { downloadBlob, serveTransfer, uploadBlob, type TransferPolicy } from './transfer.js';
import { TunnelError, type TunnelStream } from './tunnel.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function stores() {
  const d = tempDir('outpost-transfer-');
  dirs.push(d);
  return { hub: new BlobFiles(path.join(d, 'hub')), edge: new BlobFiles(path.join(d, 'edge')) };
}

/** The edge opens the streams; the hub serves them. */
const link = (onHubStream: (s: TunnelStream) => void) => {
  const l = muxLink({ onHubStream });
  return { wire: l.wire, cut: l.cut, open: (h: Record<string, unknown>) => l.edge.open(h) };
};

function put(files: BlobFiles, bytes: Buffer): BlobDigest {
  const d = `sha256:${createHash('sha256').update(bytes).digest('hex')}` as BlobDigest;
  fs.writeFileSync(files.path(d), bytes);
  return d;
}

function policy(files: BlobFiles, received: BlobDigest[] = []): TransferPolicy {
  return {
    readable: (d) => {
      const n = files.size(d);
      if (n === undefined) throw new TunnelError('not_found', `blob ${d} not found`);
      return n;
    },
    writable: (d) => (files.has(d) ? 'have' : 'send'),
    received: (d) => void received.push(d),
  };
}

describe('blob transfers', () => {
  it('a download cut halfway resumes from the partial file and moves only the rest', async () => {
    const { hub, edge } = stores();
    const bytes = randomBytes(4 * 1024 * 1024);
    const d = put(hub, bytes);
    const a = link((s) => void serveTransfer(s, hub, policy(hub)).catch(() => undefined));
    const first = downloadBlob(a.open, edge, d, {
      onProgress: (p) => p.done >= bytes.length / 2 && a.wire.up && a.cut(),
    });
    await expect(first).rejects.toThrow(/cut/);
    const partial = edge.partialSize(d);
    // What reached the disk before the cut (bytes still in the pipe are lost, and sent again).
    expect(partial).toBeGreaterThan(bytes.length / 4);
    expect(partial).toBeLessThan(bytes.length);

    const b = link((s) => void serveTransfer(s, hub, policy(hub)).catch(() => undefined));
    const r = await downloadBlob(b.open, edge, d);
    expect(r.moved).toBe(bytes.length - partial);
    expect(fs.readFileSync(edge.path(d)).equals(bytes)).toBe(true);
    expect(b.wire.bytes).toBeLessThan((bytes.length - partial) * 1.01 + 4096);
    // Already there: nothing moves.
    expect((await downloadBlob(b.open, edge, d)).moved).toBe(0);
  });

  it('an upload cut halfway resumes from the hub partial file; a blob the hub has is not sent', async () => {
    const { hub, edge } = stores();
    const bytes = randomBytes(3 * 1024 * 1024 + 5);
    const d = put(edge, bytes);
    const received: BlobDigest[] = [];
    const a = link((s) => void serveTransfer(s, hub, policy(hub, received)).catch(() => undefined));
    await expect(
      uploadBlob(a.open, edge, d, 'application/x-test', {
        onProgress: (p) => p.done >= bytes.length / 2 && a.wire.up && a.cut(),
      }),
    ).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 50));
    const partial = hub.partialSize(d);
    expect(partial).toBeGreaterThan(0);

    const b = link((s) => void serveTransfer(s, hub, policy(hub, received)).catch(() => undefined));
    const r = await uploadBlob(b.open, edge, d, 'application/x-test');
    expect(r.moved).toBe(bytes.length - partial);
    expect(fs.readFileSync(hub.path(d)).equals(bytes)).toBe(true);
    expect(received).toEqual([d]);

    const again = await uploadBlob(b.open, edge, d, 'application/x-test');
    expect(again).toMatchObject({ deduplicated: true, moved: 0 });
  });

  it('a partial file with wrong bytes fails the digest check, is discarded, and the next attempt succeeds', async () => {
    const { hub, edge } = stores();
    const bytes = randomBytes(1024 * 1024);
    const d = put(hub, bytes);
    fs.writeFileSync(edge.partialPath(d), randomBytes(1000));
    const a = link((s) => void serveTransfer(s, hub, policy(hub)).catch(() => undefined));
    await expect(downloadBlob(a.open, edge, d)).rejects.toThrow(/hashes to sha256:/);
    expect(edge.has(d)).toBe(false);
    expect(edge.partialSize(d)).toBe(0);
    await downloadBlob(a.open, edge, d);
    expect(fs.readFileSync(edge.path(d)).equals(bytes)).toBe(true);
  });

  it('the hub refuses a malformed request and a blob it does not hold', async () => {
    const { hub, edge } = stores();
    const a = link((s) => void serveTransfer(s, hub, policy(hub)).catch(() => undefined));
    const missing = `sha256:${'0'.repeat(64)}` as BlobDigest;
    await expect(downloadBlob(a.open, edge, missing)).rejects.toThrow(/not found/);
    const s = a.open({ type: 'blob-get', digest: 'sha256:nothex', offset: 0 });
    const err = await new Promise<Error>((r) => s.on('error', r));
    expect(err.message).toMatch(/malformed transfer request/);
  });
});
