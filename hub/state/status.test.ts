/** The status projection on an in-memory hub database: what a report leaves and what summaries read. */
import { describe, expect, it } from 'vitest';
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { SqlAssignmentStore } from './assignments.js';

const report = (workload: string, phase: string, generation = 1) => ({
  workload,
  observedGeneration: generation,
  phase,
  since: 1_000,
  restarts: 0,
  objects: { [`Pod/${workload}`]: { ready: phase === 'Ready' } },
});

function seeded() {
  const { db, state } = memoryHubState();
  state.edges.enroll({ name: 'e1', project: 'p', approved: true, at: 0 });
  state.edges.connected('e1', { at: 10, agentVersion: 'v', remoteAddress: 'x' });
  // Assignments are the scheduler's table: written here as the scheduler writes them.
  const put = db.prepare(
    "INSERT INTO assignments (edge, workload, project, placement, revision, content_key, generation, manifests, error) VALUES (?, ?, 'p', ?, 1, 'k', ?, '[]', ?)",
  );
  put.run('e1', 'web', 'pl', 2, null);
  put.run('e1', 'db', 'pl', 1, 'missing label');
  put.run('e2', 'web', 'other', 1, null);
  return { db, state };
}

describe('status state', () => {
  it('projects a report: upserts what it names and forgets what it no longer names', () => {
    const { state } = seeded();
    state.status.project('e1', [report('web', 'Progressing'), report('old', 'Ready')]);
    state.status.project('e1', [report('web', 'Ready', 2)]);
    expect(state.status.reported('e1', 'web')).toEqual({ ...report('web', 'Ready', 2) });
    expect(state.status.reported('e1', 'old')).toBeUndefined();
  });

  it('joins each assignment with its report and the edge’s liveness', () => {
    const { state } = seeded();
    state.status.project('e1', [report('web', 'Failed', 2)]);
    const rows = state.status.byEdge('e1');
    expect(rows.map((r) => r.workload)).toEqual(['db', 'web']);
    const [db, web] = rows;
    expect(db).toMatchObject({ placement: 'pl', generation: 1, error: 'missing label', connectedSince: 10 });
    expect(db.reported).toBeUndefined();
    expect(web.reported).toMatchObject({ phase: 'Failed', observedGeneration: 2 });
    expect(web.reported?.objects()).toEqual({ 'Pod/web': { ready: false } });
    expect(state.status.byPlacement('p', 'pl')).toHaveLength(2);
    const byWorkload = state.status.byWorkload('p', 'web');
    expect(byWorkload.map((r) => r.edge).sort()).toEqual(['e1', 'e2']);
    // e2 never enrolled: no liveness, never online.
    expect(byWorkload.find((r) => r.edge === 'e2')?.connectedSince).toBeUndefined();
  });

  it('forgets an edge’s reports, and a decommission forgets its assignments', () => {
    const { db, state } = seeded();
    state.status.project('e1', [report('web', 'Ready', 2)]);
    state.status.forgetEdge('e1');
    expect(state.status.reported('e1', 'web')).toBeUndefined();
    new SqlAssignmentStore(db).forgetEdge('e1');
    expect(state.status.byEdge('e1')).toEqual([]);
    expect(state.status.byEdge('e2')).toHaveLength(1);
  });
});
