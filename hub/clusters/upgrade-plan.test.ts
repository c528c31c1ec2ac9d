/** The order of a cluster's upgrade (hub/clusters/upgrade-plan.ts): pure, so tested on its own. */
import { describe, expect, it } from 'vitest';
import { upgradePlan, type NodeProgress } from './upgrade-plan.js';

const V1 = 'k8s@1';
const V2 = 'k8s@2';
const ready = (edge: string, role: NodeProgress['role'], runs: string, ordered = runs): NodeProgress => ({
  edge,
  role,
  ordered,
  runs,
  phase: 'Ready',
  ready: true,
});
const rules = { maxUnavailable: 1, failureThreshold: 1 };

describe('upgradePlan', () => {
  it('upgrades the control plane first: the workers keep their version until it runs the new one Ready', () => {
    const nodes = [ready('cp', 'control-plane', V1), ready('w1', 'worker', V1), ready('w2', 'worker', V1)];
    const p = upgradePlan(V2, nodes, rules);
    expect(Object.fromEntries(p.versions)).toEqual({ cp: V2, w1: V1, w2: V1 });
    // Swapping but not Ready yet: still the control plane only.
    const swapping = [{ ...ready('cp', 'control-plane', V1, V2), phase: 'Upgrading' }, ...nodes.slice(1)];
    expect(upgradePlan(V2, swapping, rules).versions.get('w1')).toBe(V1);
  });

  it('then maxUnavailable workers at a time, in the order of their names', () => {
    const cp = ready('cp', 'control-plane', V2);
    const ws = ['w3', 'w1', 'w2'].map((e) => ready(e, 'worker', V1));
    expect(Object.fromEntries(upgradePlan(V2, [cp, ...ws], rules).versions)).toEqual({
      cp: V2,
      w1: V2,
      w2: V1,
      w3: V1,
    });
    // w1 ordered, not done: no second one.
    const w1 = { ...ready('w1', 'worker', V1, V2), phase: 'Upgrading', ready: false };
    const inFlight = [cp, w1, ready('w2', 'worker', V1), ready('w3', 'worker', V1)];
    expect(upgradePlan(V2, inFlight, rules).versions.get('w2')).toBe(V1);
    expect(upgradePlan(V2, inFlight, { ...rules, maxUnavailable: 2 }).versions.get('w2')).toBe(V2);
    // w1 done: the next one.
    const next = [cp, ready('w1', 'worker', V2), ready('w2', 'worker', V1), ready('w3', 'worker', V1)];
    expect(Object.fromEntries(upgradePlan(V2, next, rules).versions)).toMatchObject({ w1: V2, w2: V2, w3: V1 });
  });

  it('pauses once failureThreshold workers rolled back: no further worker gets the version', () => {
    const cp = ready('cp', 'control-plane', V2);
    const w1 = { ...ready('w1', 'worker', V1, V2), phase: 'RolledBack' };
    const p = upgradePlan(V2, [cp, w1, ready('w2', 'worker', V1)], { maxUnavailable: 2, failureThreshold: 1 });
    expect(p.versions.get('w2')).toBe(V1);
    expect(p.paused).toContain('1 worker(s) rolled back (w1; failureThreshold 1)');
    // Under the threshold, the others go on.
    const q = upgradePlan(V2, [cp, w1, ready('w2', 'worker', V1)], { maxUnavailable: 2, failureThreshold: 2 });
    expect(q.versions.get('w2')).toBe(V2);
    expect(q.paused).toBeUndefined();
  });

  it('lets a new worker join at the version the control plane runs', () => {
    const cp = { ...ready('cp', 'control-plane', V1, V2), phase: 'Upgrading' };
    expect(upgradePlan(V2, [cp, { edge: 'w9', role: 'worker' }], rules).versions.get('w9')).toBe(V1);
  });
});
