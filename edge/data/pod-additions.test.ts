import { describe, expect, it } from 'vitest';
import type { Manifest } from '../../core/resources.js';
import { withPodAdditions } from './pod-additions.js';

const deployment = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'd' },
  spec: {
    template: {
      spec: {
        containers: [
          {
            name: 'a',
            env: [
              { name: 'X', value: 'old' },
              { name: 'KEEP', value: '1' },
            ],
          },
          { name: 'b' },
        ],
        volumes: [{ name: 'v' }],
      },
    },
  },
} as unknown as Manifest;

describe('withPodAdditions', () => {
  it('sets the variables on every container of a pod template, replacing same names, and adds mounts and volumes', () => {
    const out = withPodAdditions(deployment, {
      env: [{ name: 'X', value: '/dir' }],
      mounts: [{ name: 'm', mountPath: '/in', readOnly: true }],
      volumes: [{ name: 'm', hostPath: { path: '/host', type: 'Directory' } }],
    }) as unknown as typeof deployment & { spec: { template: { spec: Record<string, any> } } };
    const pod = out.spec.template.spec;
    expect(pod.containers[0].env).toEqual([
      { name: 'KEEP', value: '1' },
      { name: 'X', value: '/dir' },
    ]);
    expect(pod.containers[1].env).toEqual([{ name: 'X', value: '/dir' }]);
    expect(pod.containers[1].volumeMounts).toEqual([{ name: 'm', mountPath: '/in', readOnly: true }]);
    expect(pod.volumes).toEqual([{ name: 'v' }, { name: 'm', hostPath: { path: '/host', type: 'Directory' } }]);
    // The input is not touched, and the same additions give the same manifest (a stable content hash).
    expect((deployment as any).spec.template.spec.containers[0].env[0].value).toBe('old');
    expect(withPodAdditions(deployment, { env: [{ name: 'X', value: '/dir' }] })).toEqual(
      withPodAdditions(deployment, { env: [{ name: 'X', value: '/dir' }] }),
    );
  });

  it('leaves a manifest without a pod as it is', () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: {} } as unknown as Manifest;
    expect(withPodAdditions(cm, { env: [{ name: 'X', value: '1' }] })).toBe(cm);
  });
});
