import { describe, expect, it } from 'vitest';
import type { Placement } from '../../core/resources.js';
import { waitingFor, type EdgeGate } from './gates.js';

const placement = { metadata: { name: 'app', project: 'default' } } as Placement;
const ctx = {
  readyOn: (_p: string, placement: string, edge: string) => placement === 'db' && edge === 'e1',
  targetsOn: () => [],
};

describe('waitingFor', () => {
  it("merges every gate's reasons per edge and leaves out edges no gate holds", () => {
    const db: EdgeGate = (_p, edges, c) =>
      new Map(edges.filter((e) => !c.readyOn('default', 'db', e)).map((e) => [e, ['package db ^1 Ready on it']]));
    const images: EdgeGate = (_p, edges) => new Map(edges.filter((e) => e === 'e2').map((e) => [e, ['images staged']]));
    expect(waitingFor([db, images], placement, ['e1', 'e2', 'e3'], ctx)).toEqual(
      new Map([
        ['e2', ['package db ^1 Ready on it', 'images staged']],
        ['e3', ['package db ^1 Ready on it']],
      ]),
    );
  });

  it('asks every gate even when no edge is unwritten (so it can forget the placement), and holds none', () => {
    const asked: number[] = [];
    const gate: EdgeGate = (_p, edges) => {
      asked.push(edges.length);
      return new Map(edges.map((e) => [e, ['x']]));
    };
    expect(waitingFor([gate], placement, [], ctx).size).toBe(0);
    expect(asked).toEqual([0]);
  });
});
