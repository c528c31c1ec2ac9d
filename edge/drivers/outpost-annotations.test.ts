import { describe, expect, it } from 'vitest';
import { EGRESS_ANNOTATION } from '../../core/data.js';
import { OBJECTS_MOUNT_ANNOTATION } from '../../core/delivery.js';
import type { Manifest } from '../../core/resources.js';
import { prepare } from './kubernetes/objects.js';
import { isOutpostAnnotation, withoutOutpostAnnotations } from './outpost-annotations.js';

const egress = '[{"source": "/export", "target": "clips", "mode": "move", "maxBytes": "2GiB"}]';

describe('withoutOutpostAnnotations', () => {
  it('knows the outpost.dev domain and its subdomains, nothing else', () => {
    expect(isOutpostAnnotation('outpost.dev/registry-ca')).toBe(true);
    expect(isOutpostAnnotation(EGRESS_ANNOTATION)).toBe(true);
    expect(isOutpostAnnotation('a.b.outpost.dev/x')).toBe(true);
    for (const k of ['notoutpost.dev/x', 'outpost.dev.example.com/x', 'outpost.dev', 'team', 'example.com/outpost.dev'])
      expect(isOutpostAnnotation(k), k).toBe(false);
  });

  it("strips them from a manifest's metadata and its pod template's, keeping labels and other annotations", () => {
    const m = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'camera',
        labels: { 'outpost.dev/workload': 'camera' },
        annotations: { [EGRESS_ANNOTATION]: egress, team: 'vision' },
      },
      spec: {
        template: {
          metadata: { labels: { app: 'c' }, annotations: { [OBJECTS_MOUNT_ANNOTATION]: '/objects' } },
          spec: { containers: [{ name: 'main', image: 'i' }] },
        },
      },
    } as unknown as Manifest;
    const before = structuredClone(m);
    const out = withoutOutpostAnnotations(m) as any;
    expect(out.metadata).toEqual({
      name: 'camera',
      labels: { 'outpost.dev/workload': 'camera' },
      annotations: { team: 'vision' },
    });
    expect(out.spec.template.metadata).toEqual({ labels: { app: 'c' } });
    expect(m).toEqual(before); // a copy: the reconciler's manifests (and their hash) are untouched
  });

  it("reaches a CronJob's job and pod templates, and gives back the manifest itself when it has none", () => {
    const cron = {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'c' },
      spec: {
        jobTemplate: {
          metadata: { annotations: { 'outpost.dev/a': '1' } },
          spec: { template: { metadata: { annotations: { 'data.outpost.dev/b': '2', keep: '3' } } } },
        },
      },
    } as unknown as Manifest;
    const out = withoutOutpostAnnotations(cron) as any;
    expect(out.spec.jobTemplate.metadata).toEqual({});
    expect(out.spec.jobTemplate.spec.template.metadata).toEqual({ annotations: { keep: '3' } });
    const plain = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', annotations: { a: 'b' } } };
    expect(withoutOutpostAnnotations(plain)).toBe(plain);
  });

  it('is applied by the kubernetes driver to every object it applies, before its own labels', () => {
    const { objects } = prepare({
      name: 'camera',
      generation: 1,
      hash: 'h1',
      manifests: [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'camera', annotations: { [EGRESS_ANNOTATION]: egress } },
          spec: { containers: [{ name: 'main', image: 'i' }] },
        },
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'pull', annotations: { 'outpost.dev/registry-ca': 'x', team: 'a' } },
        },
      ] as Manifest[],
    });
    const pod = objects.find((o) => o.kind === 'Pod')!;
    expect(pod.metadata.annotations).toBeUndefined();
    expect(pod.metadata.labels).toEqual({
      'outpost.dev/workload': 'camera',
      'outpost.dev/hash': 'h1',
      'outpost.dev/generation': '1',
    });
    expect(objects.find((o) => o.kind === 'Secret')!.metadata.annotations).toEqual({ team: 'a' });
  });
});
