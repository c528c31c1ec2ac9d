import { describe, expect, it } from 'vitest';
import { HubModules, loop, type HubModule } from './module.js';
import type { ObjectChange } from './objects.js';

/** A module that records what reached it, in one shared log. */
function recorder(name: string, log: string[], failStop = false): HubModule {
  return {
    name,
    start: () => void log.push(`start ${name}`),
    stop: (why) => {
      log.push(`stop ${name} ${why ?? ''}`.trim());
      if (failStop) throw new Error(`${name} would not stop`);
    },
    onObjectChange: (c) => void log.push(`${name} saw ${c.kind}/${c.name}`),
    forgetEdge: (edge) => void log.push(`${name} forgot ${edge}`),
  };
}

const change = { kind: 'Placement', project: 'default', name: 'p1' } as ObjectChange;

describe('HubModules', () => {
  it('starts in list order, stops in reverse, and a module that fails to stop does not stop the rest', async () => {
    const log: string[] = [];
    const modules = new HubModules([
      recorder('blobs', log),
      recorder('orders', log, true),
      recorder('replication', log),
    ]);
    modules.start();
    await modules.stop('SIGTERM');
    expect(log).toEqual([
      'start blobs',
      'start orders',
      'start replication',
      'stop replication SIGTERM',
      'stop orders SIGTERM',
      'stop blobs SIGTERM',
    ]);
  });

  it('gives an object change and a decommissioned edge to every module that hooks them, in list order', () => {
    const log: string[] = [];
    const modules = new HubModules([recorder('changes', log), loop('blobs', {}), recorder('orders', log)]);
    modules.objectChanged(change);
    modules.forgetEdge('edge-1');
    expect(log).toEqual([
      'changes saw Placement/p1',
      'orders saw Placement/p1',
      'changes forgot edge-1',
      'orders forgot edge-1',
    ]);
  });

  it('refuses a module listed twice (its hooks would run twice)', () => {
    expect(() => new HubModules([loop('blobs', {}), loop('blobs', {})])).toThrow(/hub module blobs listed twice/);
  });
});
