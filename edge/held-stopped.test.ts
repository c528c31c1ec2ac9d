import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../test/helpers.js';
import { HeldStopped } from './held-stopped.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function file(): string {
  const d = tempDir('outpost-held-');
  dirs.push(d);
  return path.join(d, 'held-stopped.json');
}

describe('workloads held stopped by remote actions', () => {
  it('survive a reload of the file, and a start lifts the hold on disk too', async () => {
    const f = file();
    const held = await HeldStopped.load(f);
    expect(held.size).toBe(0);
    await Promise.all([held.add('web'), held.add('api')]);
    expect((await HeldStopped.load(f)).has('web')).toBe(true);
    expect([...(await HeldStopped.load(f))]).toEqual(['api', 'web']);
    await held.delete('web');
    const again = await HeldStopped.load(f);
    expect(again.has('web')).toBe(false);
    expect(again.has('api')).toBe(true);
    // Written by rename: no temporary files stay behind.
    expect(fs.readdirSync(path.dirname(f))).toEqual(['held-stopped.json']);
  });

  it('a malformed file holds nothing rather than stopping the agent from starting', async () => {
    const f = file();
    fs.writeFileSync(f, '{"version": 1, "workloads": ["Not A Name"]}');
    expect((await HeldStopped.load(f)).size).toBe(0);
    fs.writeFileSync(f, 'not json');
    expect((await HeldStopped.load(f)).size).toBe(0);
  });

  it('a write that cannot happen fails the caller with the file named', async () => {
    const held = await HeldStopped.load(path.join(file(), 'missing-dir', 'held-stopped.json'));
    await expect(held.add('web')).rejects.toThrow(/held-stopped\.json.*data directory is writable/);
    expect(held.has('web')).toBe(false);
  });
});
