import crypto from 'node:crypto';
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { memoryHubState } from '../../test/fixtures/hub-state.js';
import { ObjectStore } from '../objects.js';
import { HubSecrets, SecretBox } from '../secrets.js';
import { GitRepos } from './index.js';

describe('the GitRepo poll loop', () => {
  it('goes on when the database cannot be read (a replica cut off from PostgreSQL): a throw in its timer would end the hub', () => {
    const { db, state } = memoryHubState();
    const box = new SecretBox(crypto.randomBytes(32));
    const objects = new ObjectStore(state, new HubSecrets(box, () => undefined));
    const repos = new GitRepos({ dataDir: os.tmpdir(), state, objects, box });
    expect(() => repos.tick()).not.toThrow();
    db.close();
    // The read now fails as PostgreSQL's unreachable database does: an error out of objects.list.
    expect(() => objects.list('GitRepo', '*')).toThrow();
    expect(() => repos.tick()).not.toThrow();
  });
});
