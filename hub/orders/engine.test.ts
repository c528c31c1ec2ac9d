/**
 * The order engine on a real replica file (sync/store.ts): a kind's parts are copied into the spec
 * documents of the edges this process serves, only those that changed, withdrawn when gone, and
 * every kind's part is written at an edge's handshake.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { putJson } from '../../core/doc-backend.js';
import type { OrderKind } from '../../core/orders/kind.js';
import { ensureMailbox } from '../../sync/mailbox.js';
import { ReplicaStore } from '../../sync/store.js';
import { OrderEngine } from './engine.js';

/** A kind of order for the test: one JSON value at the root of the spec document. */
const kind = (name: string): OrderKind<{ v: number }> => ({
  name,
  put: (b, part) => void putJson(b, '_root', name, part),
});

let dir: string;
let store: ReplicaStore;

/** The part `name` of an edge's spec document, as written (putJson keeps JSON text), or undefined. */
const partOf = (edge: string, name: string): unknown => {
  const v = store.get<Record<string, unknown>>(mailboxDocId(edgeName(edge), 'spec'))![name];
  return v === undefined ? undefined : JSON.parse(String((v as { val?: string }).val ?? v));
};
const heads = (edge: string) => JSON.stringify(store.meta(mailboxDocId(edgeName(edge), 'spec'))!.heads);

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-orders-'));
  store = await ReplicaStore.open(path.join(dir, 'hub.db'));
  for (const e of ['e1', 'e2', 'e3']) ensureMailbox(store, edgeName(e), 'hub');
});

afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('OrderEngine', () => {
  it('copies the parts that changed, withdraws those gone, and leaves the others untouched', () => {
    const engine = new OrderEngine(store);
    let parts = new Map([
      ['e1', { v: 1 }],
      ['e2', { v: 1 }],
    ]);
    const written: string[][] = [];
    engine.register({
      kind: kind('thing'),
      all: () => parts,
      of: (e) => parts.get(e),
      written: (es) => written.push(es),
    });
    expect(engine.copy('thing').sort()).toEqual(['e1', 'e2']);
    expect(partOf('e1', 'thing')).toEqual({ v: 1 });
    expect(partOf('e3', 'thing')).toBeUndefined();
    const e2 = heads('e2');

    parts = new Map([['e1', { v: 2 }]]);
    expect(engine.copy('thing').sort()).toEqual(['e1', 'e2']);
    expect(partOf('e1', 'thing')).toEqual({ v: 2 });
    expect(partOf('e2', 'thing')).toBeUndefined();
    expect(heads('e2')).not.toBe(e2);
    // Nothing changed: nothing written, no document touched.
    const e1 = heads('e1');
    expect(engine.copy('thing')).toEqual([]);
    expect(heads('e1')).toBe(e1);
    expect(written).toHaveLength(2);
  });

  it('writes only the documents of the edges this process serves', () => {
    const engine = new OrderEngine(store);
    engine.holds = (e) => e !== 'e2';
    const parts = new Map([
      ['e1', { v: 1 }],
      ['e2', { v: 1 }],
    ]);
    engine.register({ kind: kind('thing'), all: () => parts, of: (e) => parts.get(e) });
    expect(engine.copy('thing')).toEqual(['e1']);
    expect(partOf('e2', 'thing')).toBeUndefined();
    // The edge comes to this replica: its handshake writes its part.
    engine.writeEdge('e2');
    expect(partOf('e2', 'thing')).toEqual({ v: 1 });
  });

  it('writes every kind at a handshake, withdrawing what the edge no longer has; an edge without a mailbox is skipped', () => {
    const engine = new OrderEngine(store);
    const a = new Map([['e1', { v: 1 }]]);
    const b = new Map<string, { v: number }>();
    engine.register({ kind: kind('a'), all: () => a, of: (e) => a.get(e) });
    engine.register({ kind: kind('b'), all: () => b, of: (e) => b.get(e) });
    expect(() => engine.register({ kind: kind('a'), all: () => a, of: (e) => a.get(e) })).toThrow(/registered twice/);
    store.changeBackend(mailboxDocId(edgeName('e1'), 'spec'), (bk) => void putJson(bk, '_root', 'b', { v: 9 }));
    expect(partOf('e1', 'b')).toEqual({ v: 9 });
    engine.writeEdge('e1');
    expect(partOf('e1', 'a')).toEqual({ v: 1 });
    expect(partOf('e1', 'b')).toBeUndefined();
    engine.writeEdge('not-enrolled');
    expect(store.has(mailboxDocId(edgeName('not-enrolled'), 'spec'))).toBe(false);
  });
});

describe('OrderEngine registry', () => {
  /** Test double of an incremental kind's writer: what it was asked to write. */
  const writerDouble = () => {
    const calls: string[] = [];
    return {
      calls,
      writer: {
        writeStale: () => (calls.push('stale'), ['e1']),
        enqueue: (edges: Iterable<string>) => void calls.push(`enqueue ${[...edges].join(',')}`),
        write: (edge: string, opts?: { force?: boolean }) => void calls.push(`write ${edge} ${!!opts?.force}`),
      } as never,
    };
  };

  it('runs an incremental kind through its writer: copy, enqueue, and the handshake (forced)', () => {
    const engine = new OrderEngine(store);
    const w = writerDouble();
    engine.registerIncremental({ kind: kind('inc'), writer: w.writer });
    const parts = new Map([['e1', { v: 1 }]]);
    engine.register({ kind: kind('whole'), all: () => parts, of: (e) => parts.get(e) });
    expect(engine.kinds()).toEqual(['inc', 'whole']);
    expect(engine.copy('inc')).toEqual(['e1']);
    engine.enqueue('inc', ['e1', 'e2']);
    engine.writeEdge('e1');
    expect(w.calls).toEqual(['stale', 'enqueue e1,e2', 'write e1 true']);
    expect(partOf('e1', 'whole')).toEqual({ v: 1 });
    expect(() => engine.enqueue('whole', ['e1'])).toThrow(/not incremental/);
    expect(() => engine.withdraw('inc', ['e1'])).toThrow(/incremental/);
  });

  it("gathers every kind's handshake reads, projections, wake-ups, object changes and decommissions", () => {
    const engine = new OrderEngine(store);
    const seen: string[] = [];
    const none = new Map<string, { v: number }>();
    for (const name of ['a', 'b'])
      engine.register({
        kind: kind(name),
        all: () => none,
        of: () => undefined,
        handshakeReads: {
          edge: (e) => [{ sql: `${name} of ${e}`, params: [] } as never],
          ...(name === 'a' ? { project: (p: string) => [{ sql: `${name} in ${p}`, params: [] } as never] } : {}),
        },
        project: (e, report) => (seen.push(`${name} projects ${e}`), name === 'b' && !!report.inventory),
        wake: (edges) => void seen.push(`${name} wakes for ${edges.join(',')}`),
        onObjectChange: (c) => void seen.push(`${name} sees ${c.kind}`),
        onPeerObjectChange: (k) => void seen.push(`${name} hears of ${k}`),
        forgetEdge: (e) => void seen.push(`${name} forgets ${e}`),
      });
    expect(engine.handshakeReads('e1').map((r) => (r as { sql: string }).sql)).toEqual(['a of e1', 'b of e1']);
    expect(engine.projectReads('shop', 'e1').map((r) => (r as { sql: string }).sql)).toEqual(['a in shop']);
    const report = { inventory: {} } as never;
    engine.project('e1', report);
    engine.project('e2', report);
    engine.wake();
    // Woken once per commit, with every edge that said something to the kind; nothing left after.
    engine.wake();
    engine.objectChanged({ kind: 'Placement', project: 'p', name: 'x' } as never);
    engine.peerObjectChanged('DataObject');
    engine.forgetEdge('e1');
    expect(seen).toEqual([
      'a projects e1',
      'b projects e1',
      'a projects e2',
      'b projects e2',
      'b wakes for e1,e2',
      'a sees Placement',
      'b sees Placement',
      'a hears of DataObject',
      'b hears of DataObject',
      'a forgets e1',
      'b forgets e1',
    ]);
  });
});
