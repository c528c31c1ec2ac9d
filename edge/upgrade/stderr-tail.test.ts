import { describe, expect, it } from 'vitest';
import { RELEASE_HISTORY_MAX } from '../../core/resources.js';
import { agentReleaseOf } from '../inventory.js';
import { REASON_MAX, StderrTail, withStderrTail } from './stderr-tail.js';
import { endSwitch, type UpgradeState } from './switch.js';

const trial = (version: string, at: string, history?: UpgradeState['history']): UpgradeState => ({
  state: 'trial',
  version,
  binary: `/data/agent/outpost-${version}`,
  previousVersion: '1.0.0',
  starts: 1,
  deadlineMs: 60_000,
  at,
  order: `agent-${version}@sha256:${'a'.repeat(64)}`,
  ...(history ? { history } : {}),
});

describe('the stderr tail of a new agent binary', () => {
  it('keeps the last ten lines that say something, trimmed, without terminal colours, controls escaped', () => {
    const t = new StderrTail();
    for (let i = 1; i <= 14; i++) t.push(Buffer.from(`  line ${i}  \n${i === 7 ? '\n\n' : ''}`));
    t.push(Buffer.from('\u001b[31merror:\u001b[0m cannot open libfoo.so\u0007'));
    expect(t.lines()).toEqual([
      'line 6',
      'line 7',
      'line 8',
      'line 9',
      'line 10',
      'line 11',
      'line 12',
      'line 13',
      'line 14',
      'error: cannot open libfoo.so\\x07',
    ]);
  });

  it('keeps at most 8 KB while the binary writes, dropping the cut first line', () => {
    const t = new StderrTail();
    for (let i = 0; i < 1000; i++) t.push(Buffer.from(`${String(i).padStart(4, '0')} ${'x'.repeat(95)}\n`));
    const lines = t.lines(100);
    expect(lines.length).toBeLessThanOrEqual(82);
    expect(lines.at(-1)).toMatch(/^0999 x{95}$/);
    for (const l of lines) expect(l).toMatch(/^\d{4} x{95}$/);
  });

  it('ends the reason with as many last lines as fit in 1024 characters, newest kept', () => {
    expect(withStderrTail('release 2.0.0: it exited (code 3)', ['a', 'b'])).toBe(
      'release 2.0.0: it exited (code 3); its last lines on stderr: a | b',
    );
    expect(withStderrTail('release 2.0.0: it exited (code 3)', [])).toBe('release 2.0.0: it exited (code 3)');
    const long = Array.from({ length: 10 }, (_, i) => `${i} ${'y'.repeat(198)}`);
    const r = withStderrTail('release 2.0.0: it exited (code 1)', long);
    expect(r.length).toBeLessThanOrEqual(REASON_MAX);
    expect(r).toMatch(/; its last lines on stderr: 6 y+ \| 7 y+ \| 8 y+ \| 9 y+$/);
    // One line longer than the room: its end.
    const one = withStderrTail('why', ['z'.repeat(3000) + ' the end']);
    expect(one.length).toBe(REASON_MAX);
    expect(one).toMatch(/^why; its last lines on stderr: …z+ the end$/);
  });
});

describe('the release history of an edge', () => {
  it('puts each ended switch first, with when it started and ended, who ordered it and why; at most ten', () => {
    let s = endSwitch(trial('2.0.0', 't0'), 'rolled-back', 't1', 'release 2.0.0: it exited (code 3)');
    expect(s).toMatchObject({ state: 'rolled-back', at: 't1', reason: 'release 2.0.0: it exited (code 3)' });
    expect(s.history).toEqual([
      {
        version: '2.0.0',
        previousVersion: '1.0.0',
        state: 'rolled-back',
        startedAt: 't0',
        at: 't1',
        upgrade: 'agent-2.0.0',
        reason: 'release 2.0.0: it exited (code 3)',
      },
    ]);
    s = endSwitch({ ...trial('2.0.1', 't2', s.history), order: undefined }, 'committed', 't3');
    expect(s.reason).toBeUndefined();
    expect(s.history!.map((h) => [h.version, h.state, h.upgrade])).toEqual([
      ['2.0.1', 'committed', undefined],
      ['2.0.0', 'rolled-back', 'agent-2.0.0'],
    ]);
    for (let i = 0; i < 12; i++) s = endSwitch(trial(`3.0.${i}`, `u${i}`, s.history), 'committed', `v${i}`);
    expect(s.history).toHaveLength(RELEASE_HISTORY_MAX);
    expect(s.history![0]!.version).toBe('3.0.11');
    // Reported to the hub without paths: versions, states, times, who ordered and why.
    const reported = agentReleaseOf(s)!;
    expect(reported.history).toHaveLength(RELEASE_HISTORY_MAX);
    expect(JSON.stringify(reported)).not.toContain('/data/agent');
  });
});
