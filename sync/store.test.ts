import fs from 'node:fs';
import path from 'node:path';
import * as A from '@automerge/automerge/slim';
import { afterEach, describe, expect, it } from 'vitest';
import type { DocId } from '../core/ids.js';
import { tempDir } from '../test/helpers.js';
import { openDatabase } from './sqlite.js';
import { ReplicaStore } from './store.js';
import { encodeSyncState, generate } from './wasm-sync.js';

type Doc = { n: number; items: Record<string, number> };
const dirs: string[] = [];
function file(): string {
  const d = tempDir();
  dirs.push(d);
  return path.join(d, 'replica.db');
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
const ID = 'doc/a' as DocId;

describe('ReplicaStore', () => {
  it('persists changes across reopen, folding chunks into a snapshot', async () => {
    const f = file();
    const s = await ReplicaStore.open(f);
    s.create<Doc>(ID, { init: (d) => Object.assign(d, { n: 0, items: {} }) });
    for (let i = 1; i <= 100; i++) s.change<Doc>(ID, (d) => void (d.n = i));
    const heads = A.getHeads(s.get(ID)!);
    const chunks = s.db.prepare('SELECT chunk_count FROM docs WHERE id = ?').get(ID) as { chunk_count: number };
    expect(chunks.chunk_count).toBeLessThan(64);
    s.close();
    const r = await ReplicaStore.open(f);
    expect(r.get<Doc>(ID)!.n).toBe(100);
    expect(A.getHeads(r.get(ID)!)).toEqual(heads);
    r.close();
  });

  it('note: a fact about a document answered while it is unchanged, across reopen, without loading it', async () => {
    const f = file();
    const s = await ReplicaStore.open(f);
    s.create<Doc>(ID, { init: (d) => Object.assign(d, { n: 1, items: {} }) });
    expect(s.noted(ID, 'k')).toBeUndefined();
    s.note(ID, 'k', 'one');
    s.note(ID, 'other', 'x');
    expect(s.noted(ID, 'k')).toBe('one');
    s.close();
    const r = await ReplicaStore.open(f);
    expect(r.noted(ID, 'k')).toBe('one');
    expect(r.isLoaded(ID)).toBe(false);
    // Any change of the document: the notes are no longer about it.
    r.changeBackend(ID, (b) => b.put('_root', 'n', 2, 'int'));
    expect(r.noted(ID, 'k')).toBeUndefined();
    expect(r.noted(ID, 'other')).toBeUndefined();
    r.note(ID, 'k', 'two');
    r.note(ID, 'other', 'y');
    expect(r.noted(ID, 'k')).toBe('two');
    // A change that says which part it writes keeps the notes about the others.
    r.changeBackend(ID, (b) => b.put('_root', 'n', 3, 'int'), 'n only', 'other');
    expect(r.noted(ID, 'k')).toBe('two');
    expect(r.noted(ID, 'other')).toBeUndefined();
    r.delete(ID);
    expect(r.noted(ID, 'k')).toBeUndefined();
    r.note(ID, 'k', 'none'); // no document: nothing noted
    expect(r.db.prepare('SELECT count(*) AS n FROM doc_notes').get()).toEqual({ n: 0 });
    r.close();
  });

  it('what it keeps of a read (meta, noted) never outlives a write, even one rolled back', async () => {
    const s = await ReplicaStore.open(file());
    s.create<Doc>(ID, { init: (d) => Object.assign(d, { n: 1, items: {} }) });
    s.note(ID, 'k', 'one');
    const heads = s.meta(ID)!.heads;
    expect(s.noted(ID, 'k')).toBe('one'); // read, and kept
    expect(() =>
      s.transaction(() => {
        s.changeBackend(ID, (b) => b.put('_root', 'n', 2, 'int'), 'n', 'other');
        s.note(ID, 'k', 'two');
        expect(s.noted(ID, 'k')).toBe('two');
        expect(s.meta(ID)!.heads).not.toEqual(heads);
        throw new Error('abort');
      }),
    ).toThrow('abort');
    expect(s.meta(ID)!.heads).toEqual(heads);
    expect(s.noted(ID, 'k')).toBe('one');
    s.changeBackend(ID, (b) => b.put('_root', 'n', 3, 'int'));
    expect(s.meta(ID)!.heads).not.toEqual(heads);
    expect(s.noted(ID, 'k')).toBeUndefined();
    // All the notes read at once, a large one read again when asked.
    s.note(ID, 'big', 'x'.repeat(5000));
    s.note(ID, 'small', 's');
    expect(s.noted(ID, 'small')).toBe('s');
    expect(s.noted(ID, 'big')).toHaveLength(5000);
    expect(s.noted(ID, 'none')).toBeUndefined();
    s.close();
  });

  it('a no-op change writes nothing', async () => {
    const s = await ReplicaStore.open(file());
    s.create<Doc>(ID, { init: (d) => Object.assign(d, { n: 1, items: {} }) });
    expect(s.change<Doc>(ID, (d) => void (d.n = 1))).toBe(false);
    expect(s.change<Doc>(ID, (d) => void (d.n = 2))).toBe(true);
    s.close();
  });

  it('rolls back the whole write when the projection hook fails', async () => {
    let fail = false;
    const f = file();
    const s = await ReplicaStore.open(f, {
      onChange: ({ db }) => {
        db.prepare('INSERT INTO proj (v) VALUES (1)').run();
        if (fail) throw new Error('projection broke');
      },
    });
    s.db.exec('CREATE TABLE proj (v INTEGER)');
    s.create<Doc>(ID, { init: (d) => Object.assign(d, { n: 1, items: {} }) });
    fail = true;
    expect(() => s.change<Doc>(ID, (d) => void (d.n = 2))).toThrow(/projection broke/);
    // Memory and disk agree: the change did not happen.
    expect(s.get<Doc>(ID)!.n).toBe(1);
    expect((s.db.prepare('SELECT COUNT(*) c FROM proj').get() as { c: number }).c).toBe(1);
    s.close();
    const r = await ReplicaStore.open(f);
    expect(r.get<Doc>(ID)!.n).toBe(1);
    r.close();
  });

  it('batch: one transaction, announcements after the commit; a failure rolls every change back', async () => {
    const f = file();
    const announced: string[] = [];
    const s = await ReplicaStore.open(f, {
      afterChange: (id) => announced.push(`${id}:${s.db.inTransaction ? 'in-tx' : 'committed'}`),
    });
    const B = 'doc/b' as DocId;
    s.create<Doc>(ID, { init: (d) => Object.assign(d, { n: 0, items: {} }) });
    s.create<Doc>(B, { init: (d) => Object.assign(d, { n: 0, items: {} }) });
    announced.length = 0;
    s.batch(() => {
      s.change<Doc>(ID, (d) => void (d.n = 1));
      s.change<Doc>(B, (d) => void (d.n = 1));
      expect(announced).toEqual([]);
    });
    expect(announced).toEqual([`${ID}:committed`, `${B}:committed`]);

    announced.length = 0;
    expect(() =>
      s.batch(() => {
        s.change<Doc>(ID, (d) => void (d.n = 2));
        s.change<Doc>(B, (d) => void (d.n = 2));
        throw new Error('disk full');
      }),
    ).toThrow('disk full');
    expect(announced).toEqual([]);
    // Memory follows the disk again: both documents read back what was committed.
    expect(s.get<Doc>(ID)!.n).toBe(1);
    expect(s.get<Doc>(B)!.n).toBe(1);
    s.change<Doc>(ID, (d) => void (d.n = 3));
    s.close();
    const again = await ReplicaStore.open(f);
    expect(again.get<Doc>(ID)!.n).toBe(3);
    expect(again.get<Doc>(B)!.n).toBe(1);
    again.close();
  });

  it('changeBackend: persisted and announced like change, the JS view brought forward only when read', async () => {
    const f = file();
    const seen: number[] = [];
    const announced: string[] = [];
    const s = await ReplicaStore.open(f, {
      onChange: (c) => seen.push((c.doc as unknown as Doc).n),
      afterChange: (id) => announced.push(id),
    });
    s.create<Doc>(ID, { init: (d) => Object.assign(d, { n: 0, items: {} }) });
    seen.length = 0;
    expect(s.changeBackend(ID, (b) => b.put('_root', 'n', 5, 'int'))).toBe(true);
    expect(seen).toEqual([5]); // the hook asked for the document: it got the new value
    expect(announced).toEqual([ID, ID]);
    expect(s.changeBackend(ID, (b) => b.put('_root', 'n', 5, 'int'))).toBe(false); // same value: no op
    // Without a reader in between, the view lags (handle) until get brings it forward.
    const quiet = await ReplicaStore.open(file());
    quiet.create<Doc>(ID, { init: (d) => Object.assign(d, { n: 0, items: {} }) });
    quiet.changeBackend(ID, (b) => b.put('_root', 'n', 7, 'int'));
    expect(quiet.handle<Doc>(ID)!.n).toBe(0);
    expect(quiet.get<Doc>(ID)!.n).toBe(7);
    // Past the snapshot fold (A.save of a lagging view) and a sync message: still caught up.
    for (let i = 1; i <= 70; i++) quiet.changeBackend(ID, (b) => b.put('_root', 'n', 100 + i, 'int'));
    generate(quiet.handle(ID)!, quiet.loadSyncState('peer', ID));
    expect(quiet.get<Doc>(ID)!.n).toBe(170);
    quiet.change<Doc>(ID, (d) => void (d.items.x = 1));
    expect(quiet.get<Doc>(ID)).toMatchObject({ n: 170, items: { x: 1 } });
    quiet.close();
    // A failing fn leaves nothing behind.
    expect(() =>
      s.changeBackend(ID, (b) => {
        b.put('_root', 'n', 9, 'int');
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(s.get<Doc>(ID)!.n).toBe(5);
    s.close();
    const again = await ReplicaStore.open(f);
    expect(again.get<Doc>(ID)!.n).toBe(5);
    again.close();
  });

  it('loads on demand and evicts under its memory budget', async () => {
    // ~7 KiB estimated per tiny document: 256 KiB holds about 36 of the 50.
    const s = await ReplicaStore.open(file(), { memoryBudgetBytes: 256 * 1024 });
    for (let i = 0; i < 50; i++)
      s.create<Doc>(`doc/${i}` as DocId, { init: (d) => Object.assign(d, { n: i, items: {} }) });
    const st = s.loadedStats();
    expect(st.docs).toBeLessThan(50);
    expect(st.docs).toBeGreaterThan(20);
    expect(st.bytes).toBeLessThanOrEqual(256 * 1024);
    // Evicted documents come back from disk intact.
    for (let i = 0; i < 50; i++) expect(s.get<Doc>(`doc/${i}` as DocId)!.n).toBe(i);
    s.close();
  });

  it('sets the WAL checkpoint interval it is given (the hub checkpoints every 10,000 pages)', async () => {
    const s = await ReplicaStore.open(file(), { walAutocheckpointPages: 10_000 });
    expect(s.db.pragma('wal_autocheckpoint', { simple: true })).toBe(10_000);
    s.close();
    const d = await ReplicaStore.open(file());
    expect(d.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1_000);
    d.close();
  });

  it('two stores converge through sync messages and persist sync states', async () => {
    const a = await ReplicaStore.open(file());
    const b = await ReplicaStore.open(file());
    a.create<Doc>(ID, { init: (d) => Object.assign(d, { n: 7, items: { x: 1 } }) });
    b.create(ID, { epoch: a.epoch(ID) });
    const sa = a.loadSyncState('b', ID);
    const sb = b.loadSyncState('a', ID);
    for (let i = 0; i < 6; i++) {
      let m = generate(a.get(ID)!, sa);
      if (m) b.receive('a', ID, sb, m, { mayAddChanges: true });
      m = generate(b.get(ID)!, sb);
      if (m) a.receive('b', ID, sa, m, { mayAddChanges: false });
    }
    expect(b.get<Doc>(ID)!.items.x).toBe(1);
    expect(A.getHeads(b.get(ID)!)).toEqual(A.getHeads(a.get(ID)!));
    // Persisted (b wrote the state with the change; acknowledgements are flushed at close).
    b.flushSyncStates();
    expect(A.decodeSyncState(encodeSyncState(b.loadSyncState('a', ID))).sharedHeads).toEqual(A.getHeads(a.get(ID)!));
    expect(
      A.decodeSyncState(
        (b.db.prepare("SELECT state FROM sync_states WHERE peer = 'a'").get() as { state: Buffer }).state,
      ).sharedHeads,
    ).toEqual(A.getHeads(a.get(ID)!));
    a.close();
    b.close();
  });

  it('loads a document without its view until read, and names the fix for a damaged one', async () => {
    const f = file();
    const s = await ReplicaStore.open(f);
    s.create<Doc>(ID, { init: (d) => Object.assign(d, { n: 3, items: { x: 1 } }) });
    s.create<Doc>('doc/2' as DocId, { init: (d) => Object.assign(d, { n: 4, items: {} }) });
    s.close();
    const again = await ReplicaStore.open(f);
    // Backend-only use (heads) needs no view; reading builds it, with the whole content.
    expect(A.getHeads(again.handle(ID)!)).toHaveLength(1);
    expect(again.get<Doc>(ID)).toMatchObject({ n: 3, items: { x: 1 } });
    again.db.prepare("UPDATE docs SET snapshot = substr(snapshot, 1, length(snapshot) - 20) WHERE id = 'doc/2'").run();
    expect(() => again.get('doc/2' as DocId)).toThrow(
      /doc\/2 .* cannot be loaded: restore the data directory from a backup/,
    );
    again.close();
  });

  it('refuses a file written by a newer schema, with the fix in the message', async () => {
    const f = file();
    (await ReplicaStore.open(f)).close();
    const db = openDatabase(f);
    db.prepare("UPDATE schema_versions SET version = 99 WHERE component = 'replica'").run();
    db.close();
    await expect(ReplicaStore.open(f)).rejects.toThrow(/schema version 99.*newer outpost/);
  });
});
