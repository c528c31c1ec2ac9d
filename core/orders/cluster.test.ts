/**
 * The cluster kind's codec (core/orders/cluster.ts) on real mailbox documents: written through the
 * backend as the hub does, read back checked, withdrawn; and kept across a compaction (a new epoch
 * materialized from the plain view): a spec or report that lost it would tear the node down.
 */
import * as A from '@automerge/automerge/slim';
import { beforeAll, describe, expect, it } from 'vitest';
import { initAutomerge } from '../../sync/native.js';
import {
  ClusterTemplateSpec,
  DEFAULT_CLUSTER_PORTS,
  type ClusterNodeOrder,
  type ClusterNodeReport,
} from '../cluster.js';
import {
  initReport,
  initSpec,
  materializeReport,
  materializeSpec,
  readReport,
  readReportCluster,
  readSpec,
  readSpecCluster,
  setReportCluster,
  type ReportDoc,
  type SpecDoc,
} from '../mailbox.js';
import { CLUSTER_ORDER } from './cluster.js';

const artifact = {
  scope: 'default',
  version: '1.33.13',
  digest: `sha256:${'a'.repeat(64)}`,
  size: 1,
  signature: 'A'.repeat(88),
};
const order: ClusterNodeOrder = {
  cluster: 'site',
  uid: 'u-1',
  role: 'control-plane',
  template: { name: 'k8s', version: '1' },
  spec: ClusterTemplateSpec.parse({
    version: '1',
    kubernetesVersion: 'v1.33.13',
    artifacts: Object.fromEntries(
      [
        'etcd',
        'kube-apiserver',
        'kube-controller-manager',
        'kube-scheduler',
        'kubelet',
        'containerd',
        'runc',
        'cni-plugins',
        'pause',
      ].map((n) => [n, artifact]),
    ),
  }),
  ports: DEFAULT_CLUSTER_PORTS,
  pki: 'oes1.sealed',
};

function write(doc: A.Doc<SpecDoc>, part: ClusterNodeOrder | undefined): A.Doc<SpecDoc> {
  const b = A.getBackend(doc);
  CLUSTER_ORDER.put(b, part);
  b.commit(undefined, 0);
  return A.loadIncremental(doc, new Uint8Array(0));
}

beforeAll(() => initAutomerge());

describe('CLUSTER_ORDER', () => {
  it('writes the node order, reads it back, keeps it across a compaction, withdraws it', () => {
    let doc = A.change(A.init<SpecDoc>(), (d) => initSpec(d, 'e1'));
    doc = write(doc, order);
    expect(readSpecCluster(doc)).toEqual(order);
    const compacted = A.change(A.init<SpecDoc>(), materializeSpec(readSpec(doc)));
    expect(readSpecCluster(compacted)).toEqual(order);
    doc = write(doc, undefined);
    expect(readSpecCluster(doc)).toBeUndefined();
  });

  it("reads a node's report checked (a value that does not fit reads as none), and keeps it across a compaction", () => {
    const r: ClusterNodeReport = {
      cluster: 'site',
      uid: 'u-1',
      role: 'control-plane',
      template: 'k8s@1',
      phase: 'Ready',
      step: 'NodeReady',
      components: { etcd: { running: true, healthy: true, pid: 42, restarts: 0 } },
      node: { ready: true, kubeletVersion: 'v1.33.13' },
      events: [{ at: 1, step: 'NodeReady', message: 'node e1 is Ready' }],
      at: 1,
    };
    let doc = A.change(A.init<ReportDoc>(), (d) => initReport(d, 'e1'));
    doc = A.change(doc, (d) => void setReportCluster(d, r));
    expect(readReportCluster(doc)).toEqual(r);
    const compacted = A.change(A.init<ReportDoc>(), materializeReport(readReport(doc), 0));
    expect(readReportCluster(compacted)).toEqual(r);
    const bad = A.change(
      doc,
      (d) => void setReportCluster(d, { ...r, phase: 'Exploded' } as unknown as ClusterNodeReport),
    );
    expect(readReportCluster(bad)).toBeUndefined();
  });
});
