/** The scheduler's tables on an in-memory database: what is written is what is read back. */
import { beforeEach, describe, expect, it } from 'vitest';
import type { SqliteDatabase } from '../../sync/sqlite.js';
import { memoryHubState, seedEdge, seedStatus } from '../../test/fixtures/hub-state.js';
import { SqliteAssignmentStore, SqliteEdgeReads, type Assignment } from './assignments.js';

let db: SqliteDatabase;
let store: SqliteAssignmentStore;

const pod = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: {} });
const a = (edge: string, workload: string, extra: Partial<Assignment> = {}): Assignment => ({
  edge,
  workload,
  project: 'default',
  placement: 'p1',
  revision: 1,
  contentKey: `key-${workload}`,
  generation: 1,
  manifests: [pod(workload)],
  ...extra,
});

beforeEach(() => {
  db = memoryHubState().db;
  store = new SqliteAssignmentStore(db);
});

describe('SqliteAssignmentStore', () => {
  it('puts, replaces and reads assignments by edge, placement and workload', () => {
    store.put(a('e1', 'web'));
    store.put(a('e1', 'db', { error: 'missing label', manifests: [] }));
    store.put(a('e2', 'web', { placement: 'p2' }));
    store.put(a('e1', 'web', { generation: 2, contentKey: 'k2' }));
    expect(store.forEdge('e1').map((x) => [x.workload, x.generation, x.error])).toEqual([
      ['db', 1, 'missing label'],
      ['web', 2, undefined],
    ]);
    expect(store.forEdge('e1')[1]!.manifests).toEqual([pod('web')]);
    expect(store.forPlacement('default', 'p1').map((x) => `${x.edge}/${x.workload}`)).toEqual(['e1/db', 'e1/web']);
    expect(store.forWorkload('default', 'web').map((x) => x.edge)).toEqual(['e1', 'e2']);
    expect(store.keysForPlacement('default', 'p1')[1]).toEqual({
      edge: 'e1',
      workload: 'web',
      project: 'default',
      placement: 'p1',
      revision: 1,
      contentKey: 'k2',
      generation: 2,
    });
    expect([...store.keysByEdge().keys()]).toEqual(['e1', 'e2']);
    expect(store.keysForEdge('e1').keys).toEqual(store.keysByEdge().get('e1'));
    expect(store.keysForEdge('e1').withManifests()).toEqual(store.forEdge('e1'));
    expect(store.placementsOnEdge('e1')).toEqual([{ project: 'default', placement: 'p1' }]);
    expect(store.heldElsewhere('default', 'p1', ['web'])).toEqual(new Map([['e2/web', 'p2']]));
  });

  it('removes one assignment only from the placement named, a whole placement, or a forgotten edge', () => {
    store.put(a('e1', 'web'));
    store.put(a('e1', 'db'));
    store.put(a('e2', 'web', { placement: 'p2' }));
    store.recordSpecWritten('e1', { epoch: 'ep', digest: 'd' });
    store.remove('e1', 'web', 'p2');
    expect(store.forEdge('e1')).toHaveLength(2);
    store.remove('e1', 'web');
    expect(store.forEdge('e1').map((x) => x.workload)).toEqual(['db']);
    store.removePlacement('default', 'p2');
    expect(store.forEdge('e2')).toEqual([]);
    store.forgetEdge('e1');
    expect(store.forEdge('e1')).toEqual([]);
    expect(store.specWritten('e1')).toBeUndefined();
  });

  it('joins what edges reported to a placement’s assignments', () => {
    store.put(a('e1', 'web'));
    seedStatus(db, 'e1', 'web', 1, 'Ready');
    seedStatus(db, 'e1', 'other', 4, 'Failed');
    expect(store.statusForPlacement('default', 'p1')).toEqual(
      new Map([['e1/web', { edge: 'e1', workload: 'web', observedGeneration: 1, phase: 'Ready' }]]),
    );
    expect(store.observedGeneration('e1', 'other')).toBe(4);
    expect(store.observedGeneration('e9', 'web')).toBe(0);
  });

  it('keeps spec digests and rollout records; saving a phase keeps the acknowledged failures', () => {
    store.recordSpecWritten('e1', { epoch: 'a', digest: 'x' });
    store.recordSpecWritten('e1', { epoch: 'b', digest: 'y' });
    expect(store.specWritten('e1')).toEqual({ epoch: 'b', digest: 'y' });
    expect(store.allSpecWritten()).toEqual(new Map([['e1', { epoch: 'b', digest: 'y' }]]));

    expect(store.rolloutRecord('default', 'p1')).toBeUndefined();
    store.saveRollout('default', 'p1', 'Paused', 'paused: 1 edge failed');
    expect(store.rolloutRecord('default', 'p1')).toEqual({
      phase: 'Paused',
      reason: 'paused: 1 edge failed',
      acknowledged: {},
    });
    store.acknowledge('default', 'p1', { e1: 'k' });
    store.saveRollout('default', 'p1', 'Progressing', 'going on');
    expect(store.rolloutRecord('default', 'p1')).toEqual({
      phase: 'Progressing',
      reason: 'going on',
      acknowledged: { e1: 'k' },
    });
    store.removeRollout('default', 'p1');
    expect(store.rolloutRecord('default', 'p1')).toBeUndefined();
  });

  it('rolls a transaction back whole', () => {
    expect(() =>
      store.transaction(() => {
        store.put(a('e1', 'web'));
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(store.forEdge('e1')).toEqual([]);
  });
});

describe('SqliteEdgeReads', () => {
  it('reads enrolled edges, their project and stored labels', () => {
    seedEdge(db, 'e1', { project: 'p', labels: { region: 'eu' } });
    const edges = new SqliteEdgeReads(db);
    expect(edges.exists('e1')).toBe(true);
    expect(edges.exists('e2')).toBe(false);
    expect(edges.names()).toEqual(['e1']);
    expect(edges.project('e1')).toBe('p');
    expect(edges.labels('e1')).toBe('{"region":"eu"}');
    expect(edges.allLabels()).toEqual(new Map([['e1', '{"region":"eu"}']]));
  });
});
