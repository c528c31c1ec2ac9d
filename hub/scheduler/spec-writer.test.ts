/** Spec documents written from assignments, on an in-memory replica store holding the hub's tables. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { edgeName, mailboxDocId } from '../../core/ids.js';
import { readSpec, type SpecDoc } from '../../core/mailbox.js';
import type { Manifest } from '../../core/resources.js';
import type { ReplicaStore } from '../../sync/store.js';
import { memoryHubStore, seedEdge } from '../../test/fixtures/hub-state.js';
import { SqlAssignmentStore, SqlEdgeReads, type Assignment } from '../state/assignments.js';
import { SpecWriter } from './spec-writer.js';

let store: ReplicaStore;
let assignments: SqlAssignmentStore;
let drained: number;
let sealFails: boolean;
let writer: SpecWriter;

beforeEach(async () => {
  store = await memoryHubStore();
  assignments = new SqlAssignmentStore(store.db);
  drained = 0;
  sealFails = false;
  writer = new SpecWriter(
    assignments,
    new SqlEdgeReads(store.db),
    store,
    (_edge, m: Manifest[]) => {
      if (sealFails) throw new Error('no key');
      return m;
    },
    () => drained++,
  );
  seedEdge(store.db, 'e1', { labels: { region: 'eu' } });
  seedEdge(store.db, 'e2');
});

afterEach(() => store.close());

const put = (edge: string, workload: string, generation: number, extra: Partial<Assignment> = {}) =>
  assignments.put({
    edge,
    workload,
    project: 'default',
    placement: 'p',
    revision: 1,
    contentKey: `k${generation}`,
    generation,
    manifests: [{ apiVersion: 'v1', kind: 'Pod', metadata: { name: workload } }],
    ...extra,
  });

const id = (edge: string) => mailboxDocId(edgeName(edge), 'spec');
const spec = (edge: string) => readSpec(store.get<SpecDoc>(id(edge))!);
const heads = (edge: string) => JSON.stringify(store.meta(id(edge))?.heads);

describe('SpecWriter', () => {
  it('writes labels and assignments, and does not touch a document that already holds them', () => {
    put('e1', 'web', 1);
    writer.write('e1');
    expect(spec('e1').labels).toEqual({ region: 'eu' });
    expect(spec('e1').workloads.web).toMatchObject({ generation: 1, revision: 1 });
    const before = heads('e1');
    writer.write('e1');
    expect(heads('e1')).toBe(before);
    put('e1', 'web', 2);
    writer.write('e1');
    expect(spec('e1').workloads.web?.generation).toBe(2);
  });

  it('writes nothing for an edge that is not enrolled', () => {
    put('gone', 'web', 1);
    writer.write('gone');
    expect(store.meta(id('gone'))).toBeUndefined();
  });

  it('puts a workload whose Secrets cannot be sealed as an error, not its manifests', () => {
    sealFails = true;
    put('e1', 'web', 1);
    writer.write('e1');
    expect(spec('e1').workloads.web).toMatchObject({
      manifests: [],
      error: expect.stringMatching(/cannot seal.*no key/),
    });
  });

  it('finds exactly the documents that missed their last write', () => {
    put('e1', 'web', 1);
    put('e2', 'web', 1);
    writer.write('e1');
    writer.write('e2');
    expect(writer.stale()).toEqual([]);
    put('e1', 'web', 7);
    expect(writer.stale()).toEqual(['e1']);
  });

  it('on a hub replica, finds those among the edges it serves only, and none while it serves none', () => {
    put('e1', 'web', 1);
    put('e2', 'web', 1);
    writer.write('e1');
    writer.write('e2');
    let served: string[] = [];
    writer.serving = { holds: (e) => served.includes(e), served: () => served };
    put('e1', 'web', 7);
    put('e2', 'web', 7);
    expect(writer.stale()).toEqual([]);
    served = ['e2'];
    expect(writer.stale()).toEqual(['e2']);
    served = ['e1', 'e2', 'not-enrolled'];
    expect(writer.stale()).toEqual(['e1', 'e2']);
    // A document in another epoch than the one last written is stale too.
    writer.enqueue(['e1']);
    expect(writer.stale()).toEqual(['e2']);
    store.delete(id('e1'));
    store.create(id('e1'));
    expect(writer.stale()).toEqual(['e1', 'e2']);
  });

  it('drains a queue and says when it is done', async () => {
    put('e1', 'web', 1);
    put('e2', 'web', 1);
    writer.enqueue(['e1', 'e2']);
    // The first slice runs at once; a slow machine may leave the second edge to the next turn.
    while (writer.busy) await new Promise((r) => setImmediate(r));
    expect(spec('e1').workloads.web?.generation).toBe(1);
    expect(spec('e2').workloads.web?.generation).toBe(1);
    expect(writer.busy).toBe(false);
    expect(drained).toBe(1);
  });
});
