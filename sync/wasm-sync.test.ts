import * as A from '@automerge/automerge/slim';
import { beforeAll, describe, expect, it } from 'vitest';
import { initAutomerge } from './native.js';
import * as W from './wasm-sync.js';

type Doc = { items: Record<string, number> };

/** Runs the sync protocol between two documents until neither side has anything to say. */
function exchange(
  a: A.Doc<Doc>,
  sa: W.SyncHandle,
  b: A.Doc<Doc>,
  sb: W.SyncHandle,
): { a: A.Doc<Doc>; b: A.Doc<Doc>; rounds: number } {
  let rounds = 0;
  for (;;) {
    const m1 = W.generate(a, sa);
    if (m1) b = W.receive(b, sb, m1);
    const m2 = W.generate(b, sb);
    if (m2) a = W.receive(a, sa, m2);
    if (!m1 && !m2) return { a, b, rounds };
    if (++rounds > 10) throw new Error('sync did not settle');
  }
}

/** Two replicas synced from `a` into `b`, with their sync states. */
function synced(a: A.Doc<Doc>, b: A.Doc<Doc>): { a: A.Doc<Doc>; b: A.Doc<Doc>; sa: W.SyncHandle; sb: W.SyncHandle } {
  const sa = W.newSyncState();
  const sb = W.newSyncState();
  return { ...exchange(a, sa, b, sb), sa, sb };
}

describe('wasm sync states (Automerge internals this project relies on)', () => {
  beforeAll(() => initAutomerge());

  it('uses the Automerge instance initializeWasm set up, and converges two replicas', () => {
    let { a, b, sa, sb } = synced(A.from<Doc>({ items: { x: 1 } }), A.init<Doc>());
    expect(b.items.x).toBe(1);
    expect(A.getHeads(b)).toEqual(A.getHeads(a));
    expect(W.theirHeads(sa)).toEqual(A.getHeads(a));
    expect(W.theirHeads(sb)).toEqual(A.getHeads(a));

    // A change flows and moves the receiver's JS view forward; the old view is outdated.
    a = A.change(a, (d) => void (d.items.y = 2));
    const old = b;
    ({ a, b } = exchange(a, sa, b, sb));
    expect(b).not.toBe(old);
    expect(b.items).toEqual({ x: 1, y: 2 });
    expect(() => A.change(old, (d) => void (d.items.z = 3))).toThrow(/outdated/);
    // The receiver can go on changing its current view.
    b = A.change(b, (d) => void (d.items.z = 3));
    ({ a, b } = exchange(a, sa, b, sb));
    expect(a.items).toEqual({ x: 1, y: 2, z: 3 });
  });

  it('keeps the same view for a message that adds nothing (an acknowledgement)', () => {
    const first = A.from<Doc>({ items: { x: 1 } });
    let { a, b, sa, sb } = synced(first, A.load<Doc>(A.save(first)));
    a = A.change(a, (d) => void (d.items.x = 5));
    b = W.receive(b, sb, W.generate(a, sa)!);
    const ack = W.generate(b, sb)!;
    expect(ack).not.toBeNull();
    const view = a;
    expect(W.receive(a, sa, ack)).toBe(view);
    expect(b.items.x).toBe(5);
  });

  it('encodes sync states exactly as the public API does', () => {
    const { a, b, sa } = synced(A.from<Doc>({ items: { x: 1 } }), A.init<Doc>());
    const bytes = W.encodeSyncState(sa);
    expect(A.encodeSyncState(A.decodeSyncState(bytes))).toEqual(bytes);
    expect(A.decodeSyncState(bytes).sharedHeads).toEqual(A.getHeads(a));
    expect(W.encodeSyncState(W.decodeSyncState(bytes))).toEqual(bytes);
    const settled = W.importSyncState({ ...A.initSyncState(), sharedHeads: A.getHeads(b) } as A.SyncState);
    expect(A.decodeSyncState(W.encodeSyncState(settled)).sharedHeads).toEqual(A.getHeads(b));
  });

  it('loads a document lazily: backend complete at once, the view built whole on catchUp', () => {
    let full = A.from<Doc & { label: A.ImmutableString }>({
      items: { x: 1, y: 2 },
      label: new A.ImmutableString('edge-1'),
    });
    full = A.change(full, (d) => void (d.items.z = 3));
    const lazy = W.loadLazy<Doc & { label: A.ImmutableString }>(A.save(full));
    // Heads, saves and sync work on the placeholder; its view is empty until catchUp.
    expect(A.getHeads(lazy)).toEqual(A.getHeads(full));
    expect(A.save(lazy)).toEqual(A.save(A.load(A.save(full))));
    expect(Object.keys(lazy)).toEqual([]);
    const view = W.catchUp(lazy);
    expect(view.items).toEqual({ x: 1, y: 2, z: 3 });
    expect(view.label).toBeInstanceOf(A.ImmutableString);
    expect(view.label.val).toBe('edge-1');
    // The built view is a normal document: it changes, syncs and moves forward by patches.
    const changed = A.change(view, (d) => void (d.items.w = 4));
    A.getBackend(changed).put('/items', 'v', 5, 'int');
    expect(W.catchUp(changed).items).toEqual({ x: 1, y: 2, z: 3, w: 4, v: 5 });
    const { b } = synced(changed, A.init<Doc>());
    expect(b.items.w).toBe(4);
  });

  it('builds the view of a lazily loaded document that a sync message changed', () => {
    const origin = A.from<Doc>({ items: { x: 1 } });
    let { a, sa } = synced(origin, A.init<Doc>());
    const lazy = W.loadLazy<Doc>(A.save(origin));
    const sl = W.newSyncState();
    a = A.change(a, (d) => void (d.items.y = 2));
    // Two rounds: the lazy replica first says what it has, then receives the change.
    let b = lazy;
    for (let i = 0; i < 4; i++) {
      const m = W.generate(a, sa);
      if (m) b = W.receive(b, sl, m);
      const r = W.generate(b, sl);
      if (r) a = W.receive(a, sa, r);
    }
    expect(b).not.toBe(lazy);
    expect(b.items).toEqual({ x: 1, y: 2 });
  });
});
