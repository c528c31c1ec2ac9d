/**
 * @module The tunnel's frame codec (docs/tunnel.md, "Wire format"): the payload of a 0x02 frame
 * is `[u8 kind][u32 BE stream id][body]`, kinds:
 * OPEN (JSON header; the hub opens requests, the edge blob transfers), DATA (bytes), WINDOW (u32 BE credit), END (no more data from
 * the sender), RESET (JSON `{code, message}`, aborts both directions), META (JSON, out-of-band
 * about the stream: response head, exit status; ordered with DATA).
 *
 * The mux (sync/tunnel.ts) and its streams (sync/tunnel-stream.ts) build and read frames with
 * these helpers; a JSON body from the peer is untrusted and bounded by `MAX_JSON_BYTES`.
 */
import { FRAME_TUNNEL } from './messages.js';
import { TunnelError } from './tunnel-error.js';

export const TUNNEL_OPEN = 1;
export const TUNNEL_DATA = 2;
export const TUNNEL_WINDOW = 3;
export const TUNNEL_END = 4;
export const TUNNEL_RESET = 5;
export const TUNNEL_META = 6;

/** Largest DATA body; well under MAX_FRAME_BYTES, and small so sync frames interleave finely. */
export const MAX_DATA_BYTES = 32 * 1024;
/**
 * Largest DATA body of a bulk stream (one of plain bytes: `isBulk`, sync/tunnel-stream.ts): queued pieces
 * go out together up to this. What a relayed byte costs is mostly per frame (a stream write, a
 * queue, a frame, a WebSocket send on each of three event loops), so fewer, larger frames move
 * more bytes per CPU second; a sync frame still waits behind at most SOCKET_HIGH_WATER.
 */
export const MAX_BULK_DATA_BYTES = 256 * 1024;

/** Payloads `frame` made: their type byte is already in front (`tunnelMessage`). */
const framed = new WeakSet<Buffer>();

/** The bytes of a whole bulk DATA message: type byte, kind, stream id, body. */
const BULK_MESSAGE_BYTES = 6 + MAX_BULK_DATA_BYTES;
/**
 * Bulk DATA messages once written, to be filled again: a relayed stream sends one per 256 KiB, and
 * allocating each anew made the hub's garbage collector a third of its CPU (each new buffer is
 * external memory, which V8 answers with full collections). At most this many wait for reuse.
 */
const spare: Buffer[] = [];
const MAX_SPARE = 16;

/**
 * A DATA payload of `pieces` (a bulk stream's), in a buffer reused once `release` is called: call
 * it when the message has left for the kernel (the transport's `written`), never before.
 */
export function dataFrame(id: number, pieces: readonly Buffer[]): { payload: Buffer; release: () => void } {
  let n = 0;
  for (const p of pieces) n += p.length;
  if (n > MAX_BULK_DATA_BYTES) return { payload: frame(TUNNEL_DATA, id, pieces), release: () => undefined };
  const msg = spare.pop() ?? Buffer.allocUnsafeSlow(BULK_MESSAGE_BYTES);
  msg[0] = FRAME_TUNNEL;
  msg[1] = TUNNEL_DATA;
  msg.writeUInt32BE(id, 2);
  let at = 6;
  for (const p of pieces) at += p.copy(msg, at);
  const payload = msg.subarray(1, 6 + n);
  framed.add(payload);
  let released = false;
  return {
    payload,
    release: () => {
      if (released || spare.length >= MAX_SPARE) return;
      released = true;
      spare.push(msg);
    },
  };
}

/**
 * One payload: `kind`, stream `id`, then `body` (or the pieces of `body`, in order) copied in.
 * It is allocated with the WebSocket message's type byte in front, so `tunnelMessage` sends it
 * without another copy.
 */
export function frame(kind: number, id: number, body?: Buffer | readonly Buffer[]): Buffer {
  const pieces = body === undefined ? [] : Buffer.isBuffer(body) ? [body] : body;
  let n = 0;
  for (const p of pieces) n += p.length;
  const msg = Buffer.allocUnsafe(6 + n);
  msg[0] = FRAME_TUNNEL;
  msg[1] = kind;
  msg.writeUInt32BE(id, 2);
  let at = 6;
  for (const p of pieces) at += p.copy(msg, at);
  const out = msg.subarray(1);
  framed.add(out);
  return out;
}

/** The WebSocket message (type byte 0x02, then the payload) for a tunnel payload. */
export function tunnelMessage(payload: Buffer): Buffer {
  return framed.has(payload)
    ? Buffer.from(payload.buffer, payload.byteOffset - 1, payload.length + 1)
    : Buffer.concat([Buffer.of(FRAME_TUNNEL), payload]);
}

/**
 * The body of a DATA frame to keep: the received bytes themselves where they are most of the
 * buffer they sit in (no copy), else a copy, so tiny frames from the peer cannot each pin a whole
 * socket read (what a stream holds stays bounded by twice its window).
 */
export function keepBody(body: Buffer): Buffer {
  return body.buffer.byteLength <= 2 * body.length ? body : Buffer.from(body);
}
/** Bound on a JSON header or META body. */
const MAX_JSON_BYTES = 64 * 1024;

/** A JSON body (OPEN header, META, RESET). */
export function json(v: unknown): Buffer {
  return Buffer.from(JSON.stringify(v), 'utf8');
}

/** A WINDOW body: `n` as u32 BE. */
export function u32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n, 0);
  return b;
}

/** A JSON object body from the peer; throws `protocol` when it is too large, not JSON or not an object. */
export function parseJson(body: Buffer): Record<string, unknown> {
  if (body.length > MAX_JSON_BYTES)
    throw new TunnelError('protocol', `tunnel JSON of ${body.length} bytes exceeds ${MAX_JSON_BYTES}`);
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    throw new TunnelError('protocol', 'tunnel frame body is not JSON');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new TunnelError('protocol', 'tunnel frame body is not a JSON object');
  return v as Record<string, unknown>;
}
