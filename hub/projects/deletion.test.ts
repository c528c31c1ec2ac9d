import { describe, expect, it } from 'vitest';
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { ProjectDeletions, type DeletionDeps } from './deletion.js';

describe('project deletion passes', () => {
  it('end without a rejection when the projects cannot be read (a timer starts them: nothing would catch it)', async () => {
    const { db, state } = memoryHubState();
    // Only the state is reached before the read fails.
    const deletions = new ProjectDeletions({ state, leading: () => true } as unknown as DeletionDeps);
    await expect(deletions.passes()).resolves.toBeUndefined();
    db.close();
    expect(() => state.projects.terminating()).toThrow();
    await expect(deletions.passes()).resolves.toBeUndefined();
  });
});
