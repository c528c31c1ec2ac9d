/** The workloads kind's codec (core/orders/workloads.ts) on a real spec document, written through its backend as the hub does. */
import * as A from '@automerge/automerge/slim';
import { beforeAll, describe, expect, it } from 'vitest';
import { initAutomerge } from '../../sync/native.js';
import { initSpec, readSpec, type SpecDoc } from '../mailbox.js';
import { WORKLOAD_ORDERS, type WorkloadsPart } from './workloads.js';

function write(doc: A.Doc<SpecDoc>, part: WorkloadsPart | undefined): A.Doc<SpecDoc> {
  const b = A.getBackend(doc);
  WORKLOAD_ORDERS.put(b, part);
  b.commit(undefined, 0);
  return A.loadIncremental(doc, new Uint8Array(0));
}

beforeAll(() => initAutomerge());

describe('WORKLOAD_ORDERS', () => {
  it("writes the edge's labels and exactly its workloads, and withdraws them all", () => {
    let doc = A.change(A.init<SpecDoc>(), (d) => initSpec(d, 'e1'));
    const web = {
      name: 'web',
      generation: 1,
      revision: 1,
      manifests: [{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' } }],
    };
    doc = write(doc, { labels: { site: 'a' }, workloads: [web, { ...web, name: 'db' }] });
    expect(readSpec(doc).labels).toEqual({ site: 'a' });
    expect(Object.keys(readSpec(doc).workloads).sort()).toEqual(['db', 'web']);
    doc = write(doc, { labels: { site: 'a' }, workloads: [{ ...web, generation: 2 }] });
    expect(Object.keys(readSpec(doc).workloads)).toEqual(['web']);
    expect(readSpec(doc).workloads.web?.generation).toBe(2);
    doc = write(doc, undefined);
    expect(readSpec(doc).workloads).toEqual({});
    expect(readSpec(doc).labels).toEqual({});
  });
});
