import { describe, expect, it } from 'vitest';
import { servingOrder, type ServingCandidate } from './pick.js';

const c = (edge: string, region: string | undefined, phase = 'Ready', online = true): ServingCandidate => ({
  edge,
  online,
  phase,
  ...(region ? { region } : {}),
});

describe('servingOrder', () => {
  it("puts healthy edges of the consumer's region first, then healthy ones elsewhere, then not Ready; never offline", () => {
    const all = [
      c('w1', 'west'),
      c('e1', 'east'),
      c('e2', 'east', 'Progressing'),
      c('x1', undefined),
      c('e3', 'east', 'Ready', false),
    ];
    expect(servingOrder(all, 'east', 0)).toEqual(['e1', 'w1', 'x1', 'e2']);
    expect(servingOrder(all, undefined, 0)).toEqual(['w1', 'e1', 'x1', 'e2']);
  });

  it('goes round robin within a tier', () => {
    const all = [c('e1', 'east'), c('e2', 'east'), c('w1', 'west')];
    expect([0, 1, 2].map((t) => servingOrder(all, 'east', t))).toEqual([
      ['e1', 'e2', 'w1'],
      ['e2', 'e1', 'w1'],
      ['e1', 'e2', 'w1'],
    ]);
  });

  it('is empty when no serving edge is online', () => {
    expect(servingOrder([c('e1', 'east', 'Ready', false)], 'east', 0)).toEqual([]);
  });
});
