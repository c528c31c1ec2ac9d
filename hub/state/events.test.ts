/** The event log on an in-memory hub database. */
import { describe, expect, it } from 'vitest';
import { memoryHubState } from '../../test/fixtures/hub-state.js';

describe('event log', () => {
  it('records, filters newest first, rewrites and follows a cursor', () => {
    const { events } = memoryHubState().state;
    expect(events.lastId()).toBe(0);
    events.record({ project: 'p', kind: 'Edge', name: 'a', reason: 'Enrolled', message: 'm1', at: 1 });
    events.record({ project: 'p', kind: 'Edge', name: 'a', reason: 'Connected', message: 'm2', at: 2 });
    events.record({ project: 'q', kind: 'Workload', name: 'w', reason: 'Created', message: 'm3', at: 3 });
    expect(events.list('p', { limit: 10 }).map((e) => e.message)).toEqual(['m2', 'm1']);
    expect(events.list('p', { reason: 'Enrolled', limit: 10 }).map((e) => e.message)).toEqual(['m1']);
    expect(events.list('p', { since: 2, limit: 10 }).map((e) => e.message)).toEqual(['m2']);
    expect(events.list('q', { kind: 'Workload', name: 'w', limit: 1 })).toEqual([
      { id: 3, at: 3, project: 'q', kind: 'Workload', name: 'w', reason: 'Created', message: 'm3' },
    ]);
    const last = events.last('p', 'Edge', 'a')!;
    expect(last.reason).toBe('Connected');
    events.update(last.id, { at: 5, reason: 'Reconnected', message: 'm2b' });
    expect(events.last('p', 'Edge', 'a')).toMatchObject({ at: 5, reason: 'Reconnected', message: 'm2b' });
    expect(events.lastId()).toBe(3);
    expect(events.after(1)).toEqual([
      { id: 2, project: 'p' },
      { id: 3, project: 'q' },
    ]);
  });

  it('prunes by age and by count, oldest first', () => {
    const { events } = memoryHubState().state;
    for (let i = 1; i <= 10; i++)
      events.record({ project: 'p', kind: 'Edge', name: 'a', reason: 'R', message: `m${i}`, at: i * 100 });
    expect(events.prune(300, 5)).toBe(5);
    expect(events.list('p', { limit: 100 }).map((e) => e.message)).toEqual(['m10', 'm9', 'm8', 'm7', 'm6']);
  });
});
