/**
 * @module Blob transfers over the edge's sync connection (docs/protocol.md, "Transfers"): streams
 * of the tunnel mux (sync/tunnel.ts) that the edge opens, so they inherit its flow control (a
 * credit window per stream, and tunnel bytes yield to sync frames at the socket), in both
 * directions. The edge always drives: it knows what it holds, so after a cut link or a kill -9 of
 * either side it asks again from where its (or the hub's) partial file ends, and nothing already
 * on disk is sent twice. Every transfer ends with a size and sha256 check before the blob exists.
 *
 * `blob-get` (hub -> edge): OPEN `{type, digest, offset}`; the hub answers META `{size}` then
 * DATA from `offset` and END. `blob-put` (edge -> hub): OPEN `{type, digest, size, mediaType}`;
 * the hub answers META `{have: true}` (deduplicated: END, nothing is sent) or `{offset}`; the edge
 * sends DATA from there and END; the hub checks, then META `{ok: true}` and END. Any refusal is a
 * RESET with a code and a message.
 *
 * @example
 * await downloadBlob((h) => tunnel.open(h), files, digest, { onProgress: (n, size) => log(n / size) });
 * await uploadBlob((h) => tunnel.open(h), files, digest, 'application/octet-stream');
 */
import fs from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { DIGEST_PATTERN, type BlobDigest } from '../core/blobs.js';
import { BlobError, type BlobFiles } from './blob-files.js';
import { TunnelError, type StreamLimits, type TunnelStream } from './tunnel.js';

/** A transfer that moved no byte for this long is cut (and resumed later). */
export const TRANSFER_IDLE_MS = 60_000;

export const BlobGetRequest = z.object({
  type: z.literal('blob-get'),
  digest: z.string().regex(DIGEST_PATTERN),
  offset: z.number().int().min(0),
});
export const BlobPutRequest = z.object({
  type: z.literal('blob-put'),
  digest: z.string().regex(DIGEST_PATTERN),
  size: z.number().int().min(0),
  mediaType: z.string().max(255),
});
export const TransferRequest = z.discriminatedUnion('type', [BlobGetRequest, BlobPutRequest]);
export type TransferRequest = z.infer<typeof TransferRequest>;

export function isTransferHeader(h: Record<string, unknown>): boolean {
  return h.type === 'blob-get' || h.type === 'blob-put';
}

export type OpenStream = (header: Record<string, unknown>, limits?: StreamLimits) => TunnelStream;

export interface TransferProgress {
  /** Bytes of the blob on the receiving side so far (resumed bytes included). */
  done: number;
  size: number;
  /** Bytes this attempt moved (what went over the wire). */
  moved: number;
}

/** Resets `s` when nothing moved for `ms`. */
function idleWatch(s: TunnelStream, ms: number): { touch(): void; stop(): void } {
  let t = setTimeout(fire, ms);
  function fire(): void {
    s.destroy(new TunnelError('deadline', `no bytes moved for ${ms / 1000}s`));
  }
  return {
    touch() {
      clearTimeout(t);
      t = setTimeout(fire, ms);
    },
    stop: () => clearTimeout(t),
  };
}

export function nextMeta(s: TunnelStream): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const onMeta = (m: Record<string, unknown>) => {
      cleanup();
      resolve(m);
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const onEnd = () => {
      cleanup();
      reject(new TunnelError('protocol', 'the stream ended without an answer'));
    };
    const cleanup = () => {
      s.off('meta', onMeta);
      s.off('error', onError);
      s.off('end', onEnd);
    };
    s.on('meta', onMeta);
    s.on('error', onError);
    s.on('end', onEnd);
  });
}

function counter(onChunk: (n: number) => void): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      try {
        onChunk(chunk.length);
      } catch (err) {
        return cb(err as Error);
      }
      cb(null, chunk);
    },
  });
}

/**
 * Edge side of `blob-get`: brings `digest` into `files`, resuming a partial file. Resolves when
 * the blob is complete and checked; `beforeData(size)` may throw to refuse (the edge's budget).
 */
export async function downloadBlob(
  open: OpenStream,
  files: BlobFiles,
  digest: BlobDigest,
  o: { onProgress?: (p: TransferProgress) => void; beforeData?: (size: number) => void; idleMs?: number } = {},
): Promise<{ size: number; moved: number }> {
  const size0 = files.size(digest);
  if (size0 !== undefined) return { size: size0, moved: 0 };
  const offset = files.partialSize(digest);
  const s = open({ type: 'blob-get', digest, offset });
  s.on('error', () => undefined);
  s.end(); // nothing to send: our half is done
  const idle = idleWatch(s, o.idleMs ?? TRANSFER_IDLE_MS);
  try {
    const head = await nextMeta(s);
    const size = head.size;
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < offset)
      throw new TunnelError('protocol', `bad blob-get answer ${JSON.stringify(head).slice(0, 200)}`);
    o.beforeData?.(size - offset);
    let moved = 0;
    o.onProgress?.({ done: offset, size, moved });
    await pipeline(
      s,
      counter((n) => {
        moved += n;
        idle.touch();
        o.onProgress?.({ done: offset + moved, size, moved });
      }),
      fs.createWriteStream(files.partialPath(digest), { flags: 'a', mode: 0o600 }),
    );
    await files.commitPartial(digest, size);
    return { size, moved };
  } catch (err) {
    s.destroy(err instanceof TunnelError ? err : new TunnelError('aborted', (err as Error).message));
    if (err instanceof TunnelError && err.code === 'refused' && /offset/.test(err.message))
      await files.removePartial(digest); // our partial file is longer than the blob: start over
    throw err;
  } finally {
    idle.stop();
  }
}

/** Edge side of `blob-put`: sends a blob in `files` to the hub, from where the hub's partial copy ends. */
export async function uploadBlob(
  open: OpenStream,
  files: BlobFiles,
  digest: BlobDigest,
  mediaType: string,
  o: { onProgress?: (p: TransferProgress) => void; idleMs?: number } = {},
): Promise<{ size: number; moved: number; deduplicated: boolean }> {
  const size = files.size(digest);
  if (size === undefined) throw new BlobError('not_found', `blob ${digest} is not in the edge's store`);
  const s = open({ type: 'blob-put', digest, size, mediaType });
  s.on('error', () => undefined);
  const idle = idleWatch(s, o.idleMs ?? TRANSFER_IDLE_MS);
  try {
    const head = await nextMeta(s);
    if (head.have === true) {
      s.end();
      return { size, moved: 0, deduplicated: true };
    }
    const offset = head.offset;
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0 || offset > size)
      throw new TunnelError('protocol', `bad blob-put answer ${JSON.stringify(head).slice(0, 200)}`);
    let moved = 0;
    const done = nextMeta(s);
    done.catch(() => undefined);
    await pipeline(
      fs.createReadStream(files.path(digest), { start: offset, highWaterMark: 64 * 1024 }),
      counter((n) => {
        moved += n;
        idle.touch();
        o.onProgress?.({ done: offset + moved, size, moved });
      }),
      s,
      { end: true },
    );
    idle.touch();
    const r = await done;
    if (r.ok !== true) throw new TunnelError('protocol', `bad blob-put result ${JSON.stringify(r).slice(0, 200)}`);
    s.resume();
    return { size, moved, deduplicated: false };
  } catch (err) {
    s.destroy(err instanceof TunnelError ? err : new TunnelError('aborted', (err as Error).message));
    throw err;
  } finally {
    idle.stop();
  }
}

/** What the hub decides about a transfer an edge asks for (hub/blobs/transfers.ts). */
export interface TransferPolicy {
  /** The size of a blob the edge may read; throws a TunnelError (`not_found`, `forbidden`) otherwise. */
  readable(digest: BlobDigest): number;
  /** `have` when the hub already holds it for this edge's project; throws to refuse (quota). */
  writable(digest: BlobDigest, size: number, mediaType: string): 'have' | 'send';
  /** A put is complete and checked in the files: index it. */
  received(digest: BlobDigest, size: number, mediaType: string): void;
}

const receiving = new WeakMap<BlobFiles, Set<string>>();

/**
 * Hub side of a stream the edge opened. Validates the header (peer input is untrusted), asks the
 * policy, and moves the bytes. Rejects with the error the stream was reset with.
 */
export async function serveTransfer(
  s: TunnelStream,
  files: BlobFiles,
  policy: TransferPolicy,
  idleMs = TRANSFER_IDLE_MS,
): Promise<void> {
  s.on('error', () => undefined);
  const parsed = TransferRequest.safeParse(s.header);
  if (!parsed.success) {
    const e = new TunnelError('refused', `malformed transfer request: ${parsed.error.issues[0]?.message}`);
    s.destroy(e);
    throw e;
  }
  const r = parsed.data;
  const digest = r.digest as BlobDigest;
  const idle = idleWatch(s, idleMs);
  try {
    if (r.type === 'blob-get') {
      const size = policy.readable(digest);
      if (r.offset > size)
        throw new TunnelError('refused', `offset ${r.offset} is past the end of ${digest} (${size} bytes)`);
      s.resume(); // the edge sends nothing; its END must still be read
      s.sendMeta({ size });
      await pipeline(
        fs.createReadStream(files.path(digest), { start: r.offset, highWaterMark: 64 * 1024 }),
        counter(() => idle.touch()),
        s,
      );
      return;
    }
    if (policy.writable(digest, r.size, r.mediaType) === 'have') {
      s.sendMeta({ have: true });
      s.end();
      s.resume();
      return;
    }
    let busy = receiving.get(files);
    if (!busy) receiving.set(files, (busy = new Set()));
    if (busy.has(digest))
      throw new TunnelError('unavailable', `${digest} is being received on another stream; retry later`);
    busy.add(digest);
    try {
      // A partial copy longer than the blob is not a prefix of it: start over.
      if (files.partialSize(digest) > r.size) await files.removePartial(digest);
      const offset = files.partialSize(digest);
      s.sendMeta({ offset });
      let got = offset;
      await pipeline(
        s,
        counter((n) => {
          got += n;
          idle.touch();
          if (got > r.size) throw new TunnelError('protocol', `more than the announced ${r.size} bytes`);
        }),
        fs.createWriteStream(files.partialPath(digest), { flags: 'a', mode: 0o600 }),
      );
      await files.commitPartial(digest, r.size);
      policy.received(digest, r.size, r.mediaType);
      s.sendMeta({ ok: true });
      s.end();
    } finally {
      busy.delete(digest);
    }
  } catch (err) {
    const e =
      err instanceof TunnelError
        ? err
        : err instanceof BlobError
          ? new TunnelError('refused', err.message)
          : new TunnelError('internal', (err as Error).message);
    s.destroy(e);
    throw e;
  } finally {
    idle.stop();
  }
}
