/**
 * The engine's writer of an incremental kind (hub/orders/incremental.ts) on an in-memory replica
 * store, with its inputs as a named test double (a map per edge): a part is written only when
 * the digest of its inputs differs from the mark recorded in the document's epoch, slices drain
 * the queue, a bad edge costs only itself, and a hub replica writes the edges it serves.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { putJson } from '../../core/doc-backend.js';
import { edgeName, mailboxDocId } from '../../core/ids.js';
import type { OrderKind } from '../../core/orders/kind.js';
import type { ReplicaStore } from '../../sync/store.js';
import { memoryHubStore } from '../../test/fixtures/hub-state.js';
import { IncrementalWriter, type IncrementalInputs, type WrittenMark } from './incremental.js';

const KIND: OrderKind<{ v: number }> = { name: 'thing', put: (b, part) => void putJson(b, '_root', 'thing', part) };

type Input = { v: number; mark?: WrittenMark };

/** Test double of a kind's source: each edge's input value, the marks recorded, and edges whose part throws. */
class InputsDouble implements IncrementalInputs<Input, { v: number }> {
  readonly kind = KIND;
  values = new Map<string, number>();
  marks = new Map<string, WrittenMark>();
  failing = new Set<string>();
  reads = 0;
  inputs(edges: string[]) {
    this.reads++;
    const out = new Map<string, { v: number; mark?: WrittenMark }>();
    for (const e of edges) if (this.values.has(e)) out.set(e, { v: this.values.get(e)!, mark: this.marks.get(e) });
    return out;
  }
  digest = (i: { v: number }) => String(i.v);
  written = (i: Input) => i.mark;
  part(edge: string, i: { v: number }) {
    if (this.failing.has(edge)) throw new Error(`no part for ${edge}`);
    return { v: i.v };
  }
  record = (edge: string, mark: WrittenMark) => void this.marks.set(edge, mark);
  staleAll = (epochOf: (e: string) => string | undefined) =>
    [...this.values]
      .filter(([e, v]) => this.marks.get(e)?.digest !== String(v) || this.marks.get(e)?.epoch !== epochOf(e))
      .map(([e]) => e);
}

let store: ReplicaStore;
let inputs: InputsDouble;
let drained: number;
let writer: IncrementalWriter<Input, { v: number }>;

const id = (e: string) => mailboxDocId(edgeName(e), 'spec');
const partOf = (e: string): unknown => {
  const v = store.get<Record<string, unknown>>(id(e))?.thing;
  return v === undefined ? undefined : JSON.parse(String((v as { val?: string }).val ?? v));
};
const heads = (e: string) => JSON.stringify(store.meta(id(e))?.heads);
const untilIdle = async () => {
  while (writer.busy) await new Promise((r) => setImmediate(r));
};

beforeEach(async () => {
  store = await memoryHubStore();
  inputs = new InputsDouble();
  drained = 0;
  writer = new IncrementalWriter<Input, { v: number }>(inputs, store, () => drained++);
  inputs.values.set('e1', 1).set('e2', 1);
});

afterEach(() => store.close());

describe('IncrementalWriter', () => {
  it('writes a part once, records its mark, and does not load the document again for the same inputs', () => {
    writer.write('e1');
    expect(partOf('e1')).toEqual({ v: 1 });
    expect(inputs.marks.get('e1')).toEqual({ epoch: store.epoch(id('e1')), digest: '1' });
    const before = heads('e1');
    writer.write('e1');
    expect(heads('e1')).toBe(before);
    inputs.values.set('e1', 2);
    writer.write('e1');
    expect(partOf('e1')).toEqual({ v: 2 });
    // An edge without inputs (not enrolled) gets nothing, not even a mailbox.
    writer.write('nobody');
    expect(store.has(id('nobody'))).toBe(false);
  });

  it('finds the documents whose mark is of another digest or epoch, and writes them now', () => {
    expect(writer.writeStale().sort()).toEqual(['e1', 'e2']);
    expect(writer.stale()).toEqual([]);
    expect(writer.writeStale()).toEqual([]);
    // A document restarted in a new epoch (a replica that never served the edge) is stale.
    store.delete(id('e2'));
    store.create(id('e2'));
    expect(writer.stale()).toEqual(['e2']);
  });

  it('drains a queue in slices with batched reads, and says when it is done', async () => {
    writer.enqueue(['e1', 'e2']);
    await untilIdle();
    expect(partOf('e1')).toEqual({ v: 1 });
    expect(partOf('e2')).toEqual({ v: 1 });
    expect(drained).toBe(1);
    // Both edges' inputs came in one read (a slow machine may split them over two slices).
    expect(inputs.reads).toBeLessThanOrEqual(2);
  });

  it('writes the others of a slice when one edge cannot be written', async () => {
    inputs.failing.add('e1');
    writer.enqueue(['e1', 'e2']);
    await untilIdle();
    expect(partOf('e1')).toBeUndefined();
    expect(partOf('e2')).toEqual({ v: 1 });
    expect(inputs.marks.has('e1')).toBe(false);
  });

  it('on a hub replica, writes and looks at only the edges it serves, unless forced at a handshake', async () => {
    let served: string[] = [];
    writer.serving = { holds: (e) => served.includes(e), served: () => served };
    expect(writer.stale()).toEqual([]);
    writer.enqueue(['e1', 'e2']);
    await untilIdle();
    expect(store.has(id('e1'))).toBe(false);
    served = ['e2'];
    expect(writer.stale()).toEqual(['e2']);
    writer.write('e1');
    expect(store.has(id('e1'))).toBe(false);
    writer.write('e1', { force: true });
    expect(partOf('e1')).toEqual({ v: 1 });
  });
});
