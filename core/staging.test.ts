import * as A from '@automerge/automerge/slim';
import { beforeAll, describe, expect, it } from 'vitest';
import { initAutomerge } from '../sync/native.js';
import {
  initReport,
  initSpec,
  materializeReport,
  materializeSpec,
  readReport,
  readSpec,
  type ReportDoc,
  type SpecDoc,
} from './mailbox.js';
import {
  readReportStaging,
  readSpecStaging,
  setReportStaging,
  setSpecStaging,
  stagingSummary,
  type StagingOrder,
} from './staging.js';

const d = (c: string) => `sha256:${c.repeat(64)}`;
const order: StagingOrder = {
  groups: [
    {
      placement: 'default/web',
      budgetBytes: 1000,
      images: [
        {
          image: `reg:5000/app@${d('a')}`,
          manifest: { digest: d('a'), size: 700, mediaType: 'application/vnd.oci.image.manifest.v1+json' },
          blobs: [
            { digest: d('b'), size: 800 },
            { digest: d('c'), size: 411_998_500 },
          ],
        },
      ],
    },
  ],
};

describe('image staging in the mailbox', () => {
  beforeAll(() => initAutomerge());

  it('carries the order in the spec and the states in the report, through compaction', () => {
    let spec = A.change(A.init<SpecDoc>(), (s) => initSpec(s, 'e1'));
    spec = A.change(spec, (s) => void setSpecStaging(s, order));
    expect(readSpecStaging(spec)).toEqual(order);
    const freshSpec = A.change(A.init<SpecDoc>(), materializeSpec(readSpec(spec)));
    expect(readSpecStaging(freshSpec)).toEqual(order);
    // An empty order removes the section.
    spec = A.change(spec, (s) => void setSpecStaging(s, { groups: [] }));
    expect(readSpecStaging(spec)).toBeUndefined();

    const images = [
      { image: `reg:5000/app@${d('a')}`, state: 'Present' as const, size: 412_000_000, done: 412_000_000 },
    ];
    let report = A.change(A.init<ReportDoc>(), (r) => initReport(r, 'e1'));
    report = A.change(report, (r) => void setReportStaging(r, { images, at: 1 }));
    expect(readReportStaging(report)?.images).toEqual(images);
    const freshReport = A.change(A.init<ReportDoc>(), materializeReport(readReport(report), 0));
    expect(readReportStaging(freshReport)?.images).toEqual(images);
    expect(stagingSummary(images)).toBe('images staged 1/1, 412 MB');
  });

  it('reads a report that does not fit its schema (peer input) as none', () => {
    let report = A.change(A.init<ReportDoc>(), (r) => initReport(r, 'e1'));
    report = A.change(report, (r) => {
      r.imageStaging = new A.ImmutableString(JSON.stringify({ images: [{ image: 'x', state: 'Bogus' }], at: 1 }));
    });
    expect(readReportStaging(report)).toBeUndefined();
    expect(readReport(report).imageStaging).toBeUndefined();
  });

  it('counts staged and skipped images and the bytes on the edge', () => {
    expect(
      stagingSummary([
        { image: 'a', state: 'Present', size: 2_000_000, done: 2_000_000 },
        { image: 'b', state: 'Staging', size: 9_000_000, done: 1_500_000 },
        { image: 'c', state: 'Skipped', size: 0, done: 0 },
      ]),
    ).toBe('images staged 2/3, 3.5 MB');
  });
});
