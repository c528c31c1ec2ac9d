import { describe, expect, it } from 'vitest';
import { describeEdge, describePlacement, describeWorkload } from './describe.js';
import { KIND_INFO } from './kinds.js';
import { formatTable } from './output.js';
import { formatObjectTable, formatRevisions } from './tables.js';
import { edgeState, rolloutLine, type ApiObject } from './views.js';

const NOW = Date.parse('2025-01-01T12:00:00Z');
const iso = (agoMs: number): string => new Date(NOW - agoMs).toISOString();

function edge(name: string, status: Record<string, unknown>, extra: Partial<ApiObject> = {}): ApiObject {
  return {
    kind: 'Edge',
    metadata: { name, project: 'default', labels: { region: 'eu', tier: 'small' }, creationTimestamp: iso(86_400_000) },
    spec: { unschedulable: false },
    status,
    ...extra,
  };
}

const summary = (ready: number, total: number, extra: Record<string, unknown> = {}) => ({
  ready,
  total,
  states: { Ready: ready },
  broken: [],
  ...extra,
});

describe('formatTable', () => {
  it('aligns columns with three spaces and no trailing blanks', () => {
    expect(
      formatTable(
        ['NAME', 'STATE'],
        [
          ['a', 'Online'],
          ['long-name', ''],
        ],
      ),
    ).toBe('NAME        STATE\na           Online\nlong-name\n');
  });

  it('keeps alignment when cells are coloured', () => {
    const t = formatTable(
      ['NAME', 'STATE', 'X'],
      [
        ['a', 'Failed', '1'],
        ['bb', 'Ready', '2'],
      ],
      { color: true, colorColumns: ['STATE'] },
    );
    const plain = t.replace(/\u001b\[\d+m/g, '');
    expect(plain).toBe('NAME   STATE    X\na      Failed   1\nbb     Ready    2\n');
    expect(t).toContain('\u001b[31mFailed\u001b[0m');
  });
});

describe('text an edge sent', () => {
  /** Control characters left raw in CLI output: only the line feeds ending lines, and colour codes we add, are allowed. */
  const rawControls = (s: string) =>
    [...s.replace(/\u001b\[\d+m/g, '').replace(/\n/g, '')].filter((c) => /[\u0000-\u001f\u007f-\u009f\u202e]/.test(c));

  it('a table cell shows control characters escaped, aligned on what is shown', () => {
    const t = formatTable(
      ['PATH', 'SIZE'],
      [
        ['clips/a\u001b[2J\nb\t.mp4', '1 B'],
        ['x', '2 B'],
      ],
    );
    const shown = 'clips/a\\x1b[2J\\nb\\t.mp4';
    expect(t).toBe(`${'PATH'.padEnd(shown.length)}   SIZE\n${shown}   1 B\n${'x'.padEnd(shown.length)}   2 B\n`);
    expect(rawControls(t)).toEqual([]);
  });

  it('describe shows a value from an edge escaped and still colours the state', () => {
    const o = edge('shop-12', {
      phase: 'Online',
      lastSeenAgo: 1_000,
      inventory: { hostname: 'pos\u001b]0;pwned\u0007', cpuModel: 'fake\nWorkloads ready: 9/9', driver: 'process' },
      summary: summary(1, 1),
      workloads: [{ name: 'web', placement: 'eu', state: 'Failed', reason: 'exit\u001b[2J', restarts: 0 }],
      localIntents: { web: { paused: false, overrides: { 'a\u001b[2Jb': 1 }, intents: [] } },
    });
    const text = describeEdge(o, { now: NOW, color: true });
    expect(text).toContain('pos\\x1b]0;pwned\\x07');
    expect(text).toMatch(/CPU model:\s+fake\\nWorkloads ready: 9\/9/);
    expect(text).toContain('exit\\x1b[2J');
    expect(text).toContain('overrides a\\x1b[2Jb');
    expect(text).toContain('\u001b[32mOnline\u001b[0m');
    expect(rawControls(text)).toEqual([]);
  });
});

describe('get tables', () => {
  const edges = [
    edge('e1', {
      phase: 'Online',
      lastSeenAgo: 2_000,
      summary: summary(2, 3),
      agentVersion: '0.1.0',
      inventory: { driver: 'podman', agentVersion: '0.1.0' },
    }),
    edge('e2', { phase: 'Offline', lastSeen: iso(180_000), summary: summary(0, 1) }, { spec: { unschedulable: true } }),
    edge(
      'e3',
      { phase: 'Pending', summary: summary(0, 0) },
      { metadata: { name: 'e3', project: 'default', labels: {} } },
    ),
  ];

  it('edges: an offline edge shows how long it has been gone, never Unknown', () => {
    const t = formatObjectTable(KIND_INFO.Edge, edges, { now: NOW });
    expect(t.split('\n')).toEqual([
      'NAME   STATE                      READY   LAST-SEEN   LABELS',
      'e1     Online                     2/3     2s          region=eu,tier=small',
      'e2     Offline (3m),Drained       0/1     3m          region=eu,tier=small',
      'e3     Pending (needs approval)   0/0     never       <none>',
      '',
    ]);
    expect(t).not.toContain('Unknown');
  });

  it('edges -o wide adds agent, runtime driver and project', () => {
    const t = formatObjectTable(KIND_INFO.Edge, edges.slice(0, 1), { now: NOW, wide: true });
    expect(t.split('\n')[0]).toBe(
      'NAME   STATE    READY   LAST-SEEN   LABELS                 AGENT   RUNTIME   PROJECT',
    );
    expect(t.split('\n')[1]).toBe(
      'e1     Online   2/3     2s          region=eu,tier=small   0.1.0   podman    default',
    );
  });

  it('--all-projects puts PROJECT first, once', () => {
    const t = formatObjectTable(KIND_INFO.Edge, edges.slice(0, 1), { now: NOW, wide: true, allProjects: true });
    expect(t.split('\n')[0]).toBe(
      'PROJECT   NAME   STATE    READY   LAST-SEEN   LABELS                 AGENT   RUNTIME',
    );
  });

  it('workloads: revision, READY x/y, edges and age', () => {
    const wl: ApiObject = {
      kind: 'Workload',
      metadata: { name: 'web', creationTimestamp: iso(3_600_000 * 5) },
      status: { revision: 4, summary: summary(7, 9) },
    };
    expect(formatObjectTable(KIND_INFO.Workload, [wl], { now: NOW })).toBe(
      'NAME   REVISION   READY   EDGES   AGE\nweb    4          7/9     9       5h\n',
    );
  });

  it('placements: READY, worst state, rollout phase, selected edges', () => {
    const pl: ApiObject = {
      kind: 'Placement',
      metadata: { name: 'eu', creationTimestamp: iso(120_000) },
      spec: { rollout: { paused: false } },
      status: {
        selectedEdges: 10,
        summary: summary(8, 10, { worst: 'Failed' }),
        rollout: { phase: 'Paused', reason: 'x' },
      },
    };
    expect(formatObjectTable(KIND_INFO.Placement, [pl], { now: NOW })).toBe(
      'NAME   READY   WORST    ROLLOUT   EDGES   AGE\neu     8/10    Failed   Paused    10      2m\n',
    );
  });

  it('revision history marks the current revision', () => {
    const t = formatRevisions(
      [
        { revision: 2, createdAt: iso(60_000), manifests: [{ kind: 'Deployment', metadata: { name: 'web' } }] },
        {
          revision: 1,
          createdAt: iso(7_200_000),
          manifests: [
            { kind: 'Pod', metadata: { name: 'web' } },
            { kind: 'ConfigMap', metadata: { name: 'cfg' } },
          ],
        },
      ],
      NOW,
    );
    expect(t).toBe(
      'REVISION      AGE   MANIFESTS                CHANGE-CAUSE\n1             2h    Pod/web, ConfigMap/cfg   <none>\n2 (current)   1m    Deployment/web           <none>\n',
    );
  });
});

describe('status words', () => {
  it('an offline edge that never connected says so', () => {
    expect(edgeState(edge('x', { phase: 'Offline' }), NOW)).toBe('Offline (never connected)');
  });

  it('rollout line has the counts and the reason', () => {
    expect(
      rolloutLine({
        phase: 'Progressing',
        reason: 'waiting for e4',
        counts: { total: 10, updated: 3, ready: 2, failed: 0, pending: 7 },
      }),
    ).toBe('3/10 edges updated, 2 ready, 0 failed: waiting for e4');
    expect(rolloutLine(undefined)).toMatch(/no rollout status yet/);
  });
});

describe('describe', () => {
  it('edge: state, inventory, workloads with generation and restarts, local intents with time and origin, events', () => {
    const o = edge('shop-12', {
      phase: 'Offline',
      lastSeen: iso(180_000),
      agentVersion: '0.1.0',
      inventory: {
        hostname: 'till-1',
        os: 'linux',
        arch: 'arm64',
        cpus: 4,
        memoryBytes: 4 * 1024 ** 3,
        runtimes: ['process', 'podman'],
        driver: 'podman',
      },
      summary: summary(1, 2),
      workloads: [
        { name: 'web', placement: 'eu', generation: 3, observedGeneration: 3, state: 'Ready', restarts: 0 },
        {
          name: 'pos',
          placement: 'eu',
          generation: 2,
          observedGeneration: 1,
          state: 'Stale',
          reason: 'edge offline for 3m, last known Ready',
          restarts: 5,
        },
      ],
      localIntents: {
        pos: {
          paused: true,
          overrides: { 'spec.replicas': 1 },
          intents: [
            { seq: 1, workload: 'pos', action: 'pause', at: NOW - 600_000, origin: 'local-api uid=0' },
            {
              seq: 2,
              workload: 'pos',
              action: 'override',
              set: { 'spec.replicas': 1 },
              at: NOW - 300_000,
              origin: 'outpost edge local',
            },
          ],
        },
      },
    });
    const text = describeEdge(o, {
      now: NOW,
      events: [
        { at: NOW - 60_000, reason: 'Disconnected', message: 'connection lost' },
        { at: NOW - 3_600_000, reason: 'Connected', message: 'edge connected from 10.0.0.5' },
      ],
    });
    expect(text).toContain('Name:');
    expect(text).toMatch(/State:\s+Offline \(3m\)/);
    expect(text).toMatch(/Last seen:\s+3m ago/);
    expect(text).toMatch(/Memory:\s+4\.0 GiB/);
    expect(text).toMatch(/Runtimes:\s+process, podman/);
    expect(text).toMatch(/pos\s+eu\s+Stale\s+2\s+1\s+5\s+edge offline for 3m, last known Ready/);
    expect(text).toMatch(/pos\s+2025-01-01T11:50:00\.000Z \(10m ago\)\s+local-api uid=0\s+pause/);
    expect(text).toMatch(/override\s+spec\.replicas=1/);
    expect(text).toContain('pos: paused; overrides spec.replicas (clear: `outpost edge clear shop-12 pos`)');
    // Events read oldest first, like a log.
    expect(text.indexOf('Connected')).toBeLessThan(text.indexOf('Disconnected'));
  });

  it('edge: the release history with who ordered each switch and why it rolled back, the DataObjects it holds, the images it staged, the AgentUpgrade events about it', () => {
    const o = edge('shop-12', {
      phase: 'Online',
      inventory: {
        hostname: 'till-1',
        os: 'linux',
        arch: 'arm64',
        cpus: 4,
        memoryBytes: 1024,
        runtimes: ['process'],
        driver: 'process',
        agentVersion: '1.1.0',
        agentRelease: {
          version: '1.2.0',
          state: 'rolled-back',
          previousVersion: '1.1.0',
          at: iso(60_000),
          reason:
            'release 1.2.0: it exited (code 3) before it connected and reconciled; its last lines on stderr: boom',
          history: [
            {
              version: '1.2.0',
              previousVersion: '1.1.0',
              state: 'rolled-back',
              startedAt: iso(120_000),
              at: iso(60_000),
              upgrade: 'agent-1-2-0',
              reason:
                'release 1.2.0: it exited (code 3) before it connected and reconciled; its last lines on stderr: boom',
            },
            {
              version: '1.1.0',
              previousVersion: '1.0.0',
              state: 'committed',
              startedAt: iso(7_300_000),
              at: iso(7_200_000),
            },
          ],
        },
      },
      summary: summary(0, 0),
      workloads: [],
      localIntents: {},
      dataObjects: [
        { name: 'prices', path: 'prices.csv', state: 'Delivered', version: 'v2', holds: 'v2', since: iso(300_000) },
        {
          name: 'model',
          path: 'models/m.bin',
          state: 'Downloading',
          version: 'v4',
          holds: 'v3',
          percent: 40,
          since: iso(10_000),
        },
      ],
      imageStaging: {
        summary: 'images staged 1/2, 12 MB',
        images: [
          { image: 'reg.example/app@sha256:aa', state: 'Present', size: 12_000_000, done: 12_000_000 },
          { image: 'reg.example/db@sha256:bb', state: 'Failed', size: 3_000_000, done: 0, reason: 'no room' },
        ],
      },
    });
    const text = describeEdge(o, {
      now: NOW,
      events: [
        {
          at: NOW - 60_000,
          kind: 'AgentUpgrade',
          name: 'agent-1-2-0',
          edge: 'shop-12',
          reason: 'RolledBack',
          message: 'edge shop-12 rolled back 1.2.0: release 1.2.0: it exited (code 3)',
        },
        { at: NOW - 3_600_000, kind: 'Edge', name: 'shop-12', reason: 'Connected', message: 'edge connected' },
      ],
    });
    expect(text).toMatch(
      /Agent release:\s+1\.2\.0 RolledBack \(from 1\.1\.0 at .*\): release 1\.2\.0: it exited \(code 3\)/,
    );
    expect(text).toMatch(
      /Agent release history \(newest first, times on the edge\):\n\s+ENDED\s+VERSION\s+FROM\s+RESULT\s+ORDERED BY\s+REASON\n\s+2025-01-01T11:59:00\.000Z \(1m ago\)\s+1\.2\.0\s+1\.1\.0\s+RolledBack\s+agentupgrade\/agent-1-2-0\s+release 1\.2\.0: it exited \(code 3\) .*its last lines on stderr: boom\n\s+2025-01-01T10:00:00\.000Z \(2h ago\)\s+1\.1\.0\s+1\.0\.0\s+Committed\s+local upgrade\n/,
    );
    expect(text).toMatch(
      /DataObjects:\n\s+NAME\s+PATH\s+HOLDS\s+STATE\s+SINCE\s+REASON\n\s+prices\s+prices\.csv\s+v2\s+Delivered v2\s+5m\n\s+model\s+models\/m\.bin\s+v3\s+Downloading v4 40%\s+10s\n/,
    );
    expect(text).toMatch(
      /Staged images \(images staged 1\/2, 12 MB\):\n\s+IMAGE\s+STATE\s+SIZE\s+DONE\s+REASON\n\s+reg\.example\/app@sha256:aa\s+Present\s+11\.4 MiB\s+11\.4 MiB\n\s+reg\.example\/db@sha256:bb\s+Failed\s+2\.9 MiB\s+0 B\s+no room\n/,
    );
    // The edge's own events and the AgentUpgrade's about it, the other object named.
    expect(text).toMatch(
      /Events:\n\s+AGE\s+OBJECT\s+REASON\s+MESSAGE\n\s+1h\s+-\s+Connected\s+edge connected\n\s+1m\s+agentupgrade\/agent-1-2-0\s+RolledBack\s+edge shop-12 rolled back 1\.2\.0/,
    );
  });

  it('edge without intents, inventory or events says so instead of leaving gaps', () => {
    const text = describeEdge(edge('e', { phase: 'Pending', summary: summary(0, 0) }), {
      now: NOW,
      events: 'HTTP 500',
    });
    expect(text).toContain('Inventory:\n  <not reported yet>');
    expect(text).toContain('Local intents made on site:\n  <none>');
    expect(text).toContain('outpost edge approve e');
    expect(text).toContain('<cannot read events: HTTP 500>');
  });

  it('placement: summary with states, the broken list, and the rollout', () => {
    const o: ApiObject = {
      kind: 'Placement',
      metadata: { name: 'eu', project: 'shop', generation: 4, creationTimestamp: iso(60_000) },
      spec: {
        workloads: ['web'],
        edgeSelector: { matchLabels: { region: 'eu' } },
        rollout: { maxUnavailable: '25%', failureThreshold: 2, paused: false },
        customization: [{}],
      },
      status: {
        selectedEdges: 3,
        summary: {
          total: 3,
          ready: 1,
          worst: 'Failed',
          states: { Ready: 1, Failed: 1, Progressing: 1 },
          broken: [{ edge: 'e2', workload: 'web', object: 'Deployment/web', reason: 'image pull failed' }],
        },
        rollout: {
          phase: 'Paused',
          reason: 'paused: 1 edge failed',
          counts: { total: 3, updated: 2, ready: 1, failed: 1, pending: 1 },
          paused: false,
        },
      },
    };
    const text = describePlacement(o, { now: NOW, events: [] });
    expect(text).toMatch(/Edge selector:\s+region=eu/);
    expect(text).toMatch(/Rollout:\s+maxUnavailable 25%, failureThreshold 2/);
    expect(text).toMatch(/Ready:\s+1\/3/);
    expect(text).toMatch(/States:\s+Ready 1, Failed 1, Progressing 1/);
    expect(text).toMatch(/e2\s+web\s+Deployment\/web\s+image pull failed/);
    expect(text).toMatch(/Phase:\s+Paused/);
    expect(text).toMatch(/Reason:\s+paused: 1 edge failed/);
    expect(text).toMatch(/Progress:\s+2\/3 edges updated, 1 ready, 1 failed, 1 pending/);
    expect(text).toContain('Events:\n  <none>');
  });

  it('workload: revision, manifests and status', () => {
    const o: ApiObject = {
      kind: 'Workload',
      metadata: { name: 'web', project: 'default' },
      spec: { manifests: [{ kind: 'Deployment', metadata: { name: 'web' } }] },
      status: { revision: 3, summary: summary(2, 2, { worst: 'Ready' }) },
    };
    const text = describeWorkload(o, { now: NOW });
    expect(text).toMatch(/Revision:\s+3/);
    expect(text).toContain('Manifests:\n  Deployment/web');
    expect(text).toMatch(/Ready:\s+2\/2/);
  });
});
