import * as A from '@automerge/automerge/slim';
import { beforeAll, describe, expect, it } from 'vitest';
import { initAutomerge } from '../sync/native.js';
import {
  materializeReport,
  materializeSpec,
  setReportAgentUpgrade,
  setReportData,
  setSpecAgentUpgrade,
  setSpecData,
  putSpecAgentUpgrade,
  putSpecData,
  specDataNames,
  type AgentUpgradeOrder,
  deleteSpecWorkload,
  deleteReportWorkload,
  initReport,
  initSpec,
  type ObservedWorkload,
  putReportWorkload,
  readReport,
  setInventory,
  type ReportDoc,
  putSpecWorkload,
  readSpec,
  setSpecLabels,
  writeSpecTo,
  type SpecDoc,
  type SpecWorkload,
} from './mailbox.js';
import type { MapBackend } from './doc-backend.js';

const pod = (name: string, v: string) =>
  [
    { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: `busybox:${v}` }] } },
  ] as SpecWorkload['manifests'];

/** The same edits inside `A.change` (what tests and compaction use) and on the backend outside it (the hub's spec writes). */
function both(steps: { labels: Record<string, string>; workloads: SpecWorkload[] }[]): {
  proxy: A.Doc<SpecDoc>;
  backend: A.Doc<SpecDoc>;
} {
  let proxy = A.change(A.init<SpecDoc>(), (d) => initSpec(d, 'e1'));
  let backend = A.change(A.init<SpecDoc>(), (d) => initSpec(d, 'e1'));
  for (const s of steps) {
    proxy = A.change(proxy, (d) => {
      setSpecLabels(d, s.labels);
      const keep = new Set(s.workloads.map((w) => w.name));
      for (const n of Object.keys(d.workloads)) if (!keep.has(n)) deleteSpecWorkload(d, n);
      for (const w of s.workloads) putSpecWorkload(d, w);
    });
    const b = A.getBackend(backend);
    writeSpecTo(b, s.labels, s.workloads);
    b.commit(undefined, 0);
    backend = A.loadIncremental(backend, new Uint8Array(0));
  }
  return { proxy, backend };
}

describe('writeSpecTo (a spec written through the document backend)', () => {
  beforeAll(() => initAutomerge());

  it('writes the same document inside A.change as on the backend, step by step, and the view shows it', () => {
    const steps: { labels: Record<string, string>; workloads: SpecWorkload[] }[] = [
      { labels: { site: 'a' }, workloads: [{ name: 'web', generation: 1, revision: 1, manifests: pod('web', '1') }] },
      {
        labels: { site: 'a', tier: 'x' },
        workloads: [
          { name: 'web', generation: 2, revision: 2, manifests: pod('web', '2') },
          { name: 'db', generation: 1, revision: 1, manifests: [], error: 'no such label' },
        ],
      },
      { labels: { tier: 'y' }, workloads: [{ name: 'db', generation: 2, revision: 1, manifests: pod('db', '1') }] },
      { labels: {}, workloads: [] },
    ];
    for (let n = 1; n <= steps.length; n++) {
      const { proxy, backend } = both(steps.slice(0, n));
      expect(A.toJS(backend)).toEqual(A.toJS(proxy));
      expect(readSpec(backend)).toEqual(readSpec(proxy));
    }
    // Datatypes too: strings are ImmutableStrings, numbers integers, as readers expect them.
    const { backend } = both(steps.slice(0, 2));
    expect(backend.workloads.web.manifests).toBeInstanceOf(A.ImmutableString);
    expect(backend.settings.labels.tier).toBeInstanceOf(A.ImmutableString);
    expect(A.getBackend(backend).getWithType(A.getObjectId(backend.workloads, 'web')!, 'generation')).toEqual([
      'int',
      2,
    ]);
  });

  it('changes nothing when the document already says it all', () => {
    const step = {
      labels: { site: 'a' },
      workloads: [{ name: 'web', generation: 1, revision: 1, manifests: pod('web', '1') }],
    };
    const { backend } = both([step]);
    const b = A.getBackend(backend);
    writeSpecTo(b, step.labels, step.workloads);
    expect(b.pendingOps()).toBe(0);
  });

  it('refuses a document that initSpec did not create', () => {
    const doc = A.from<Record<string, unknown>>({ other: 1 });
    expect(() => writeSpecTo(A.getBackend(doc), {}, [])).toThrow(/not created by initSpec/);
  });

  it('carries the hardware inventory, changes it only when it differs, and drops one that does not fit', () => {
    const inv = {
      hostname: 'h',
      os: 'Linux 6',
      arch: 'x64',
      cpus: 2,
      memoryBytes: 1024,
      runtimes: ['process'],
      driver: 'process',
      agentVersion: '1',
      cpuModel: 'AMD EPYC',
      disks: [{ name: 'vda', sizeBytes: 512, rotational: true, removable: false }],
      nics: [{ name: 'eth0', mac: '02:00:00:00:00:01', virtual: false }],
    };
    let doc = A.change(A.init<ReportDoc>(), (d) => initReport(d, 'e1'));
    doc = A.change(doc, (d) => void setInventory(d, inv));
    expect(readReport(doc).inventory).toEqual(inv);
    let changed = true;
    A.change(doc, (d) => void (changed = setInventory(d, structuredClone(inv))));
    expect(changed).toBe(false);
    // A peer that sends garbage in the hardware value: the thin inventory stays, nothing throws.
    const bad = A.change(doc, (d) => {
      (d.inventory as Record<string, unknown>).hardware = new A.ImmutableString(JSON.stringify({ disks: 'x' }));
    });
    const read = readReport(bad).inventory!;
    expect(read.disks).toBeUndefined();
    expect(read.hostname).toBe('h');
  });

  it('carries the last release switch, and drops one that does not fit the schema', () => {
    const inv = {
      hostname: 'h',
      os: 'Linux 6',
      arch: 'x64',
      cpus: 2,
      memoryBytes: 1024,
      runtimes: ['process'],
      driver: 'process',
      agentVersion: '1',
      agentRelease: {
        version: '2',
        state: 'rolled-back' as const,
        previousVersion: '1',
        at: '2026-11-24T18:00:00.000Z',
        reason: 'release 2: it exited (code 3) before it connected and reconciled',
      },
    };
    let doc = A.change(A.init<ReportDoc>(), (d) => initReport(d, 'e1'));
    doc = A.change(doc, (d) => void setInventory(d, inv));
    expect(readReport(doc).inventory).toEqual(inv);
    const bad = A.change(doc, (d) => {
      (d.inventory as Record<string, unknown>).agentRelease = new A.ImmutableString(
        JSON.stringify({ ...inv.agentRelease, state: 'exploded', reason: 'x'.repeat(5000) }),
      );
    });
    expect(readReport(bad).inventory!.agentRelease).toBeUndefined();
    expect(readReport(bad).inventory!.hostname).toBe('h');
  });
});

describe('the agent upgrade order and its progress', () => {
  beforeAll(async () => {
    await initAutomerge();
  });
  const order: AgentUpgradeOrder = {
    upgrade: 'agent-0-2-0',
    release: {
      version: '0.2.0',
      digest: `sha256:${'a'.repeat(64)}`,
      size: 100,
      signature: 'A'.repeat(88),
    } as AgentUpgradeOrder['release'],
    deadlineMs: 120_000,
  };

  it('the spec carries one order, written only when it differs, removed with undefined, kept by compaction', () => {
    let doc = A.change(A.init<SpecDoc>(), (d) => initSpec(d, 'e1'));
    expect(readSpec(doc).agentUpgrade).toBeUndefined();
    doc = A.change(doc, (d) => void expect(setSpecAgentUpgrade(d, order)).toBe(true));
    expect(readSpec(doc).agentUpgrade).toEqual(order);
    A.change(doc, (d) => void expect(setSpecAgentUpgrade(d, { ...order })).toBe(false));
    const fresh = A.change(A.init<SpecDoc>(), materializeSpec(readSpec(doc)));
    expect(readSpec(fresh).agentUpgrade).toEqual(order);
    doc = A.change(doc, (d) => void expect(setSpecAgentUpgrade(d, undefined)).toBe(true));
    expect(readSpec(doc).agentUpgrade).toBeUndefined();
  });

  it('the report carries the progress; one that does not fit the schema (peer input) reads as none', () => {
    const p = {
      upgrade: 'agent-0-2-0',
      digest: order.release.digest,
      version: '0.2.0',
      state: 'Downloading' as const,
      percent: 40,
      at: 1,
    };
    let doc = A.change(A.init<ReportDoc>(), (d) => initReport(d, 'e1'));
    doc = A.change(doc, (d) => void setReportAgentUpgrade(d, p));
    expect(readReport(doc).agentUpgrade).toEqual(p);
    const fresh = A.change(A.init<ReportDoc>(), materializeReport(readReport(doc), 0));
    expect(readReport(fresh).agentUpgrade).toEqual(p);
    const bad = A.change(doc, (d) => {
      d.agentUpgrade = new A.ImmutableString(JSON.stringify({ ...p, state: 'Exploded' }));
    });
    expect(readReport(bad).agentUpgrade).toBeUndefined();
    expect(readReport(bad).edge).toBe('e1');
  });
});

describe('DataObject orders and deliveries (spec.data, report.data)', () => {
  beforeAll(async () => {
    await initAutomerge();
  });
  const order = { version: 'v2', digest: `sha256:${'b'.repeat(64)}`, size: 10, path: 'models/m.bin', activateAt: 5 };

  it('the spec carries one order per object, written only when it differs, kept by compaction, removed with undefined', () => {
    let doc = A.change(A.init<SpecDoc>(), (d) => initSpec(d, 'e1'));
    expect(readSpec(doc).data).toBeUndefined();
    doc = A.change(doc, (d) => void expect(setSpecData(d, 'model', order)).toBe(true));
    doc = A.change(doc, (d) => void setSpecData(d, 'config', { ...order, path: 'config' }));
    expect(readSpec(doc).data).toEqual({ model: order, config: { ...order, path: 'config' } });
    A.change(doc, (d) => void expect(setSpecData(d, 'model', { ...order })).toBe(false));
    const fresh = A.change(A.init<SpecDoc>(), materializeSpec(readSpec(doc)));
    expect(readSpec(fresh).data).toEqual(readSpec(doc).data);
    doc = A.change(doc, (d) => void expect(setSpecData(d, 'model', undefined)).toBe(true));
    expect(Object.keys(readSpec(doc).data ?? {})).toEqual(['config']);
  });

  it('written through the backend (the hub, no JS view) it reads the same, and writing what it holds makes no change', () => {
    let doc = A.change(A.init<SpecDoc>(), (d) => initSpec(d, 'e1'));
    doc = A.change(doc, (d) => void setSpecData(d, 'model', order));
    const b = A.getBackend(doc) as unknown as MapBackend;
    expect(specDataNames(b)).toEqual(['model']);
    expect(putSpecData(b, 'model', { ...order })).toBe(false);
    expect(putSpecAgentUpgrade(b, undefined)).toBe(false);
    expect(b.pendingOps()).toBe(0);
    expect(putSpecData(b, 'config', { ...order, path: 'config' })).toBe(true);
    expect(putSpecData(b, 'model', undefined)).toBe(true);
    A.getBackend(doc).commit('backend', 0);
    const view = A.load<SpecDoc>(A.save(doc));
    expect(readSpec(view).data).toEqual({ config: { ...order, path: 'config' } });
  });

  it('the report carries each delivery; values that do not fit (peer input) or bad names read as none', () => {
    const p = { version: 'v2', digest: order.digest, path: 'models/m.bin', state: 'Delivered' as const, at: 7 };
    let doc = A.change(A.init<ReportDoc>(), (d) => initReport(d, 'e1'));
    doc = A.change(doc, (d) => void setReportData(d, 'model', p));
    expect(readReport(doc).data).toEqual({ model: p });
    const fresh = A.change(A.init<ReportDoc>(), materializeReport(readReport(doc), 0));
    expect(readReport(fresh).data).toEqual({ model: p });
    const bad = A.change(doc, (d) => {
      d.data!.other = new A.ImmutableString(JSON.stringify({ ...p, state: 'Exploded' }));
      d.data!['../x'] = new A.ImmutableString(JSON.stringify(p));
    });
    expect(readReport(bad).data).toEqual({ model: p });
  });
});

describe('putReportWorkload (a workload status, compared with the plain view)', () => {
  beforeAll(() => initAutomerge());

  const steps: ObservedWorkload[] = [
    { observedGeneration: 1, phase: 'Pending', restarts: 0, objects: {}, message: 'not started yet' },
    { observedGeneration: 1, phase: 'Pending', restarts: 0, objects: {}, message: 'not started yet' },
    { observedGeneration: 1, phase: 'Ready', restarts: 0, objects: { 'Pod/a': { ready: true } } },
    { observedGeneration: 2, phase: 'Ready', restarts: 0, objects: { 'Pod/a': { ready: true } } },
    {
      observedGeneration: 2,
      phase: 'Degraded',
      restarts: 3,
      objects: { 'Pod/a': { ready: false, message: 'back-off' } },
    },
    {
      observedGeneration: 2,
      phase: 'Degraded',
      restarts: 3,
      objects: { 'Pod/a': { ready: false, message: 'back-off' } },
    },
    { observedGeneration: 2, phase: 'Ready', restarts: 3, objects: { 'Pod/b': { ready: true } } },
  ];

  it('writes the same document and says the same "changed" whether it reads the plain view or the proxies', () => {
    let viaView = A.change(A.init<ReportDoc>(), (d) => initReport(d, 'e1'));
    let viaProxy = A.clone(viaView);
    steps.forEach((o, i) => {
      let changedView = false;
      let changedProxy = false;
      const was = viaView;
      viaView = A.change(viaView, (d) => {
        changedView = putReportWorkload(d, 'w', o, 1000 + i, was.workloads.w);
      });
      viaProxy = A.change(viaProxy, (d) => {
        changedProxy = putReportWorkload(d, 'w', o, 1000 + i);
      });
      expect(changedView).toBe(changedProxy);
      expect(readReport(viaView)).toEqual(readReport(viaProxy));
    });
    // Only the transitions made history: the repeated steps wrote nothing.
    expect(A.getHistory(viaView)).toHaveLength(A.getHistory(viaProxy).length);
    expect(A.getHistory(viaView)).toHaveLength(steps.length - 2 + 1);
    expect(readReport(viaView).workloads.w).toMatchObject({ phase: 'Ready', restarts: 3, since: 1006 });
    expect(Object.keys(readReport(viaView).workloads.w.objects)).toEqual(['Pod/b']);
  });

  it('compares without reading the proxies when given the plain view: a pass with nothing new calls no backend read', () => {
    const o = steps[2];
    const doc = A.change(
      A.change(A.init<ReportDoc>(), (d) => initReport(d, 'e1')),
      (d) => void putReportWorkload(d, 'w', o),
    );
    let reads = 0;
    A.change(doc, (d) => {
      const b = A.getBackend(d as unknown as A.Doc<unknown>) as unknown as MapBackend;
      const getWithType = b.getWithType.bind(b);
      b.getWithType = (obj, prop) => {
        reads++;
        return getWithType(obj, prop);
      };
      try {
        expect(putReportWorkload(d, 'w', o, 5, doc.workloads.w)).toBe(false);
        expect(deleteReportWorkload(d, 'gone', doc)).toBe(false);
        expect(reads).toBe(0);
        expect(putReportWorkload(d, 'w', o, 5)).toBe(false);
        expect(reads).toBeGreaterThan(5);
      } finally {
        b.getWithType = getWithType;
      }
    });
  });
});
