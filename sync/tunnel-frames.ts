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
import { TunnelError } from './tunnel-error.js';

export const TUNNEL_OPEN = 1;
export const TUNNEL_DATA = 2;
export const TUNNEL_WINDOW = 3;
export const TUNNEL_END = 4;
export const TUNNEL_RESET = 5;
export const TUNNEL_META = 6;

/** Largest DATA body; well under MAX_FRAME_BYTES, and small so sync frames interleave finely. */
export const MAX_DATA_BYTES = 32 * 1024;
/** Bound on a JSON header or META body. */
const MAX_JSON_BYTES = 64 * 1024;

/** One payload: `kind`, stream `id`, then `body` copied in. */
export function frame(kind: number, id: number, body?: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + (body?.length ?? 0));
  out[0] = kind;
  out.writeUInt32BE(id, 1);
  if (body) body.copy(out, 5);
  return out;
}

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
