/**
 * @module The wire protocol between an edge and the hub (docs/protocol.md).
 *
 * One WebSocket per edge, opened by the edge. Control messages are JSON text frames, a union on a
 * literal `type`, validated with zod on receipt (peer input is untrusted). Document sync travels
 * in binary frames: `[0x01][u16 id length][id utf-8][u8 epoch length][epoch][Automerge sync message]`;
 * the epoch lets a receiver drop a frame about a document generation it has already left
 * (compaction, docs/protocol.md). Frame type 0x02 is
 * reserved for the tunnel (streams from the hub into the edge).
 */
import { z } from 'zod';
import { MAX_FRAME_BYTES, MAX_HEARTBEAT_BYTES, MAX_HEARTBEAT_METRICS } from '../core/limits.js';

export { MAX_FRAME_BYTES };
export const PROTOCOL_VERSION = 1;

export const FRAME_SYNC = 0x01;
export const FRAME_TUNNEL = 0x02;

const DocEpoch = z.object({ id: z.string().max(200), epoch: z.string().max(100) });

export const HelloMessage = z.object({
  type: z.literal('hello'),
  protocol: z.number().int(),
  agentVersion: z.string().max(100),
  /**
   * `heads`: the edge's current heads of each document. Where the hub has exactly these heads in
   * the same epoch, both sides already hold the same history and skip the first sync round
   * (`welcome.quiet`). Optional, so hubs and edges of either age understand each other.
   */
  docs: z
    .array(
      DocEpoch.extend({
        heads: z
          .array(z.string().regex(/^[0-9a-f]{64}$/))
          .max(64)
          .optional(),
      }),
    )
    .max(16),
});
export type HelloMessage = z.infer<typeof HelloMessage>;

export const WelcomeMessage = z.object({
  type: z.literal('welcome'),
  protocol: z.number().int(),
  hubVersion: z.string().max(100),
  edge: z.string().max(63),
  docs: z.array(DocEpoch).max(16),
  heartbeatSeconds: z.number().int().positive(),
  /** Documents whose heads in the hello equal the hub's: both sides start them as in sync. */
  quiet: z.array(z.string().max(200)).max(16).optional(),
});
export type WelcomeMessage = z.infer<typeof WelcomeMessage>;

/** Ephemeral: the hub records last-seen in SQLite; never written into a document. */
export const HeartbeatMessage = z.object({
  type: z.literal('heartbeat'),
  at: z.number(),
  /** Small gauges for the hub's metrics (not history): at most MAX_HEARTBEAT_METRICS of them. */
  metrics: z
    .record(z.string().max(64), z.number())
    .refine((m) => Object.keys(m).length <= MAX_HEARTBEAT_METRICS, {
      message: `at most ${MAX_HEARTBEAT_METRICS} metrics in one heartbeat`,
    })
    .optional(),
});
export type HeartbeatMessage = z.infer<typeof HeartbeatMessage>;

/** The writer of a document moved it to a new epoch (compaction); the other side resets its replica. */
export const EpochMessage = z.object({
  type: z.literal('epoch'),
  id: z.string().max(200),
  epoch: z.string().max(100),
});
export type EpochMessage = z.infer<typeof EpochMessage>;

export const ERROR_CODES = [
  'protocol_version',
  'bad_frame',
  'forbidden_document',
  'write_violation',
  'replaced',
  'decommissioned',
  'internal',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const ErrorMessage = z.object({
  type: z.literal('error'),
  code: z.enum(ERROR_CODES),
  message: z.string().max(2000),
  id: z.string().max(200).optional(),
});
export type ErrorMessage = z.infer<typeof ErrorMessage>;

export const ControlMessage = z.discriminatedUnion('type', [
  HelloMessage,
  WelcomeMessage,
  HeartbeatMessage,
  EpochMessage,
  ErrorMessage,
]);
export type ControlMessage = z.infer<typeof ControlMessage>;

/** WebSocket close codes, one per refusal, so a client can tell them apart without parsing text. */
export const CLOSE_CODES: Record<ErrorCode, number> = {
  bad_frame: 4400,
  forbidden_document: 4403,
  write_violation: 4409,
  decommissioned: 4410,
  protocol_version: 4426,
  replaced: 4001,
  internal: 4500,
};

export function isHello(m: ControlMessage): m is HelloMessage {
  return m.type === 'hello';
}
export function isWelcome(m: ControlMessage): m is WelcomeMessage {
  return m.type === 'welcome';
}
export function isHeartbeat(m: ControlMessage): m is HeartbeatMessage {
  return m.type === 'heartbeat';
}
export function isError(m: ControlMessage): m is ErrorMessage {
  return m.type === 'error';
}
export function isEpoch(m: ControlMessage): m is EpochMessage {
  return m.type === 'epoch';
}

/** Bound on any control (text) message: a hello of 16 documents with 64 heads each is ~75 KB. */
export const MAX_CONTROL_CHARS = 256 * 1024;

export class ProtocolError extends Error {
  readonly code: ErrorCode;
  /** The document the error is about, when there is one. */
  readonly docId?: string;
  constructor(code: ErrorCode, message: string, docId?: string) {
    super(message);
    this.name = 'ProtocolError';
    this.code = code;
    this.docId = docId;
  }
}

export function decodeControl(text: string): ControlMessage {
  // Control messages are small; only the hello lists documents. An oversized heartbeat is refused
  // before schema validation: 278 KB heartbeats of 20,000 keys made a healthy edge's sync 7x slower.
  if (text.length > MAX_CONTROL_CHARS)
    throw new ProtocolError('bad_frame', `control message of ${text.length} characters exceeds ${MAX_CONTROL_CHARS}`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ProtocolError('bad_frame', 'text frame is not JSON');
  }
  if (text.length > MAX_HEARTBEAT_BYTES && (raw as { type?: unknown } | null)?.type === 'heartbeat')
    throw new ProtocolError('bad_frame', `heartbeat of ${text.length} bytes exceeds ${MAX_HEARTBEAT_BYTES}`);
  const r = ControlMessage.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new ProtocolError(
      'bad_frame',
      `invalid control message: ${i?.path.join('.') || 'type'}: ${i?.message ?? 'unknown'}`,
    );
  }
  return r.data;
}

export function encodeControl(m: ControlMessage): string {
  return JSON.stringify(m);
}

export function encodeSyncFrame(docId: string, epoch: string, message: Uint8Array): Buffer {
  const id = Buffer.from(docId, 'utf8');
  const ep = Buffer.from(epoch, 'utf8');
  const out = Buffer.allocUnsafe(4 + id.length + ep.length + message.length);
  out[0] = FRAME_SYNC;
  out.writeUInt16BE(id.length, 1);
  id.copy(out, 3);
  out[3 + id.length] = ep.length;
  ep.copy(out, 4 + id.length);
  out.set(message, 4 + id.length + ep.length);
  return out;
}

export interface SyncFrame {
  docId: string;
  epoch: string;
  message: Uint8Array;
}

export function decodeBinary(buf: Buffer): { kind: 'sync'; frame: SyncFrame } | { kind: 'tunnel'; payload: Buffer } {
  if (buf.length < 1) throw new ProtocolError('bad_frame', 'empty binary frame');
  if (buf[0] === FRAME_TUNNEL) return { kind: 'tunnel', payload: buf.subarray(1) };
  if (buf[0] !== FRAME_SYNC) throw new ProtocolError('bad_frame', `unknown frame type 0x${buf[0].toString(16)}`);
  if (buf.length < 3) throw new ProtocolError('bad_frame', 'truncated sync frame');
  const len = buf.readUInt16BE(1);
  if (len === 0 || len > 200 || buf.length < 4 + len)
    throw new ProtocolError('bad_frame', 'truncated or malformed sync frame');
  const epLen = buf[3 + len];
  const start = 4 + len + epLen;
  if (epLen === 0 || epLen > 100 || buf.length < start + 1)
    throw new ProtocolError('bad_frame', 'truncated or malformed sync frame');
  return {
    kind: 'sync',
    frame: {
      docId: buf.toString('utf8', 3, 3 + len),
      epoch: buf.toString('utf8', 4 + len, start),
      message: new Uint8Array(buf.buffer, buf.byteOffset + start, buf.length - start),
    },
  };
}
