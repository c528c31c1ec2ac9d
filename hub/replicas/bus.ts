/**
 * @module The replicas' bus (issue #22; docs/architecture.md, "Hub replicas"): hub processes
 * sharing one PostgreSQL tell each other what changed with NOTIFY on one channel. A message sent
 * inside a transaction is delivered when it commits, and never if it rolls back: what a replica
 * hears has happened. Each message names its sender, which ignores its own.
 *
 * Messages are hints, not the state: the state is in the tables, and a replica that missed some
 * (its session connection was lost) reads the tables again (hub/replicas/index.ts).
 */
import { z } from 'zod';
import { createLogger } from '../../core/logger.js';
import type { SyncPostgres } from '../state/pg/sync-client.js';

const log = createLogger('hub:replicas');

/** The channel every replica LISTENs to. */
export const CHANNEL = 'outpost_replicas';
/** PostgreSQL refuses a payload of 8,000 bytes or more: lists are sent in parts below this. */
export const MAX_PAYLOAD_BYTES = 7_000;

const Name = z.string().min(1).max(253);
const Key = z.string().min(3).max(507); // project/name

export const BusMessage = z.discriminatedUnion('t', [
  /** An object was written on the sender (its API): the others refresh what shows it. */
  z.object({ t: z.literal('object'), kind: Name, project: Name, name: Name }),
  /** For the leader: placements to plan again. */
  z.object({ t: z.literal('placements'), keys: z.array(Key) }),
  /** For the leader: edges that changed themselves (labels, approval, inventory). */
  z.object({ t: z.literal('edges'), edges: z.array(Name) }),
  /** Edges whose status changed on the sender (reports projected, connections): the leader plans. */
  z.object({ t: z.literal('status'), edges: z.array(Name), cause: z.enum(['report', 'connectivity']) }),
  /** From the leader: these edges' assignments changed; whoever serves one writes its spec. */
  z.object({ t: z.literal('specs'), edges: z.array(Name) }),
  /**
   * From a replica that just took over the planning: the last `specs` of the one before may never
   * have gone out (killed between its commit and its message); each replica writes the specs of
   * its edges that do not hold what the tables say.
   */
  z.object({ t: z.literal('leader') }),
  /** API tokens revoked on the sender: every replica ends their open streams now (hub/auth/token-streams.ts). */
  z.object({ t: z.literal('revoked'), tokens: z.array(z.string().regex(/^[0-9a-f]{16}$/)).max(1_000) }),
]);
export type BusMessage = z.infer<typeof BusMessage>;

const Envelope = z.object({ from: z.string().min(1).max(200), m: BusMessage });

/** The list a message carries, if any (so it can be sent in parts). */
function listOf(m: BusMessage): { field: 'keys' | 'edges'; items: string[] } | undefined {
  if (m.t === 'placements') return { field: 'keys', items: m.keys };
  if (m.t === 'edges' || m.t === 'status' || m.t === 'specs') return { field: 'edges', items: m.edges };
  return undefined;
}

/** The payloads of one message: one, or its list cut into parts that fit MAX_PAYLOAD_BYTES. */
export function payloads(from: string, m: BusMessage): string[] {
  const whole = JSON.stringify({ from, m });
  const list = listOf(m);
  if (whole.length <= MAX_PAYLOAD_BYTES || !list) return [whole];
  const out: string[] = [];
  const base = JSON.stringify({ from, m: { ...m, [list.field]: [] } }).length;
  let part: string[] = [];
  let size = base;
  for (const item of list.items) {
    const add = JSON.stringify(item).length + 1;
    if (part.length && size + add > MAX_PAYLOAD_BYTES) {
      out.push(JSON.stringify({ from, m: { ...m, [list.field]: part } }));
      part = [];
      size = base;
    }
    part.push(item);
    size += add;
  }
  if (part.length) out.push(JSON.stringify({ from, m: { ...m, [list.field]: part } }));
  return out;
}

/** A payload from the channel as a message, or undefined (bad JSON or shape: logged, dropped). */
export function parsePayload(payload: string): { from: string; m: BusMessage } | undefined {
  try {
    const r = Envelope.safeParse(JSON.parse(payload));
    if (r.success) return r.data;
    log.warn({ issues: r.error.issues.slice(0, 3) }, 'dropped a replica message of an unknown shape');
  } catch {
    log.warn('dropped a replica message that is not JSON');
  }
  return undefined;
}

/**
 * Sends a message to every replica with the client's next round trip (SyncPostgres.defer):
 * delivered at the commit of the transaction that carries it, if any, else at once.
 */
export function publish(pg: SyncPostgres, from: string, m: BusMessage): void {
  for (const p of payloads(from, m)) pg.defer('SELECT pg_notify(?, ?)', CHANNEL, p);
}
