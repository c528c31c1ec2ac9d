/** Which AgentUpgrade holds which edge (hub/upgrades/claims.ts), and what deleting one says it changes. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AgentUpgradeProgress } from '../../core/mailbox.js';
import type { AgentUpgrade } from '../../core/resources.js';
import type { AgentUpgradeOutcome } from '../state/agent-upgrades.js';
import { byPrecedence, computeClaims, type ClaimInput } from './claims.js';
import { deleteEffects } from './delete-effects.js';

const digest = (of: string) => `sha256:${createHash('sha256').update(of).digest('hex')}`;

function upgrade(name: string, version: string, created: string, extra: Partial<AgentUpgrade['spec']> = {}) {
  return {
    apiVersion: 'outpost.dev/v1alpha1',
    kind: 'AgentUpgrade',
    metadata: { name, project: 'default', creationTimestamp: created, labels: {}, annotations: {} },
    spec: {
      release: { scope: 'default', version, digest: digest(version), size: 1, signature: 'A'.repeat(88) },
      edges: ['e1', 'e2'],
      rollout: { maxUnavailable: 1, failureThreshold: 1, deadline: '2m', paused: false },
      ...extra,
    },
  } as unknown as AgentUpgrade;
}

const old = upgrade('agent-0-3-0', '0.3.0', '2026-01-01T00:00:00.000Z');
const later = upgrade('agent-0-2-0', '0.2.0', '2026-01-02T00:00:00.000Z');

function input(upgrades: AgentUpgrade[], over: Partial<ClaimInput> = {}): ClaimInput {
  return {
    upgrades,
    selected: new Map(upgrades.map((u) => [u.metadata.name, ['e1', 'e2']])),
    outcomes: new Map(),
    progress: new Map(),
    versions: new Map([
      ['e1', '0.1.0'],
      ['e2', '0.1.0'],
    ]),
    now: 1,
    ...over,
  };
}

describe('claims', () => {
  it('the most recently created upgrade comes first, whatever the names; then the newer release, then the name', () => {
    expect(byPrecedence(later, old)).toBeLessThan(0);
    const a = upgrade('a', '0.2.0', '2026-01-01T00:00:00.000Z');
    const b = upgrade('b', '0.10.0', '2026-01-01T00:00:00.000Z');
    expect([a, b].sort(byPrecedence).map((u) => u.metadata.name)).toEqual(['b', 'a']);
    expect(computeClaims(input([old, later])).holder).toEqual(
      new Map([
        ['e1', 'agent-0-2-0'],
        ['e2', 'agent-0-2-0'],
      ]),
    );
  });

  it('an upgrade finished on an edge (Running, RolledBack, Superseded) does not hold it; the next one does', () => {
    const ran: AgentUpgradeOutcome = { digest: later.spec.release.digest, version: '0.2.0', state: 'Running', at: 1 };
    const c = computeClaims(input([old, later], { outcomes: new Map([['agent-0-2-0', new Map([['e1', ran]])]]) }));
    expect(c.holder.get('e1')).toBe('agent-0-3-0');
    expect(c.holder.get('e2')).toBe('agent-0-2-0');
    expect(c.finished.get('agent-0-2-0')?.get('e1')?.state).toBe('Running');
    // A final report not recorded yet counts the same; an outcome of another digest does not.
    const p: AgentUpgradeProgress = {
      upgrade: 'agent-0-2-0',
      digest: later.spec.release.digest,
      version: '0.2.0',
      state: 'RolledBack',
      at: 5,
    };
    const stale: AgentUpgradeOutcome = { ...ran, digest: digest('another build') };
    const d = computeClaims(
      input([old, later], {
        progress: new Map([['e2', p]]),
        outcomes: new Map([['agent-0-2-0', new Map([['e1', stale]])]]),
      }),
    );
    expect(d.holder.get('e1')).toBe('agent-0-2-0');
    expect(d.holder.get('e2')).toBe('agent-0-3-0');
    // Refused is not final: the upgrade holds the edge on.
    const refused = computeClaims(input([old, later], { progress: new Map([['e2', { ...p, state: 'Refused' }]]) }));
    expect(refused.holder.get('e2')).toBe('agent-0-2-0');
  });

  it('an upgrade never holds an edge that runs a newer version unless it allows a downgrade', () => {
    const versions = new Map([
      ['e1', '0.3.0'],
      ['e2', '0.1.0'],
    ]);
    const c = computeClaims(input([old, later], { versions }));
    expect(c.newer.get('agent-0-2-0')).toEqual(new Map([['e1', '0.3.0']]));
    expect(c.holder.get('e1')).toBe('agent-0-3-0');
    const allowed = upgrade('agent-0-2-0', '0.2.0', '2026-01-02T00:00:00.000Z', { allowDowngrade: true });
    expect(computeClaims(input([old, allowed], { versions })).holder.get('e1')).toBe('agent-0-2-0');
  });

  it('deleting the holder: edges it ordered keep their version unless another upgrade would take them', () => {
    const versions = new Map([
      ['e1', '0.3.0'],
      ['e2', '0.1.0'],
    ]);
    const superseded: AgentUpgradeOutcome = {
      digest: old.spec.release.digest,
      version: '0.3.0',
      state: 'Superseded',
      by: 'agent-0-2-0',
      at: 1,
    };
    const base = input([old, later], { versions, outcomes: new Map([['agent-0-3-0', new Map([['e2', superseded]])]]) });
    const before = { ...base, claims: computeClaims(base) };
    const after = { claims: computeClaims({ ...base, upgrades: [old] }) };
    const order = { upgrade: 'agent-0-2-0', release: later.spec.release, deadlineMs: 60_000 } as never;
    // agent-0-2-0 would downgrade e1: agent-0-3-0 holds it; agent-0-2-0 holds e2, where agent-0-3-0 is history.
    expect(
      deleteEffects({ upgrade: later, before, after, orders: new Map([['e2', order]]), progress: new Map() }),
    ).toEqual(['edge e2 keeps running 0.1.0: no other AgentUpgrade takes it over', 'no edge is downgraded']);
    expect(
      deleteEffects({
        upgrade: old,
        before,
        after: { claims: computeClaims({ ...base, upgrades: [later] }) },
        orders: new Map(),
        progress: new Map(),
      }),
    ).toEqual(['edge e1 keeps running 0.3.0: no other AgentUpgrade takes it over', 'no edge is downgraded']);
  });
});
