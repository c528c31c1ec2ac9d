import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { EGRESS_ANNOTATION } from '../../../core/data.js';
import { OBJECTS_MOUNT_ANNOTATION } from '../../../core/delivery.js';
import { DOCKER_CONFIG_KEY, DOCKER_CONFIG_TYPE, registryTlsAnnotations } from '../../../core/images.js';
import type { Manifest } from '../../../core/resources.js';
import { planUnit, UnsupportedUnitError } from './plan.js';

const unitOf = (manifests: unknown[]) => ({
  name: 'web',
  generation: 3,
  hash: 'h1',
  manifests: manifests as Manifest[],
});
const docs = (yaml: string) => yaml.split(/^---$/m).map((d) => parse(d));

describe('planUnit', () => {
  it('labels pods, drops unpublished ports, keeps hostPorts and resolves named probe ports', () => {
    const plan = planUnit(
      unitOf([
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'web' },
          spec: {
            containers: [
              {
                name: 'a',
                image: 'i',
                ports: [{ name: 'http', containerPort: 8080 }],
                readinessProbe: { httpGet: { port: 'http' } },
              },
              { name: 'b', image: 'i', ports: [{ containerPort: 9090, hostPort: 19090 }] },
            ],
          },
        },
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc' } },
      ]),
      'own1',
      '/data/vol',
    );
    const [pod] = docs(plan.yaml);
    expect(pod.metadata.labels).toEqual({
      'outpost.dev/owner': 'own1',
      'outpost.dev/workload': 'web',
      'outpost.dev/hash': 'h1',
      'outpost.dev/generation': '3',
      'outpost.dev/template': 'web',
    });
    // NAME-OWNER-VERSION: two edges on one host, and two versions side by side, never collide.
    expect(pod.metadata.name).toBe('web-own1-h1');
    expect(pod.spec.hostname).toBe('web');
    expect(plan.images).toEqual(['i']);
    expect(pod.spec.containers[0].ports).toBeUndefined();
    expect(pod.spec.containers[1].ports).toEqual([{ containerPort: 9090, hostPort: 19090 }]);
    expect(plan.ports).toEqual([8080, 9090]);
    expect(plan.probes['web/a'].httpGet?.port).toBe(8080);
    expect(plan.ignored).toEqual(['Service/svc']);
    // What an apply plays to recreate the pod alone (apply.ts recreateMissing).
    expect(plan.pods.map((p) => [p.name, p.podmanName])).toEqual([['web', 'web-own1-h1']]);
    expect(docs(plan.pods[0].yaml)).toEqual([pod]);
  });

  it('labels the pod template of a Deployment and turns config volumes into hostPath files', () => {
    const plan = planUnit(
      unitOf([
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 's' },
          data: { k: Buffer.from([0, 1, 2]).toString('base64') },
        },
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'd' },
          spec: {
            replicas: 2,
            template: {
              spec: {
                containers: [
                  {
                    name: 'c',
                    image: 'i',
                    env: [{ name: 'K', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
                    volumeMounts: [{ name: 'v', mountPath: '/s' }],
                  },
                ],
                volumes: [{ name: 'v', secret: { secretName: 's', defaultMode: 0o400 } }],
              },
            },
          },
        },
      ]),
      'own1',
      '/data/vol',
    );
    const [dep] = docs(plan.yaml);
    expect(docs(plan.yaml)).toHaveLength(1);
    expect(dep.spec.template.metadata.labels['outpost.dev/workload']).toBe('web');
    expect(dep.spec.template.spec.volumes).toEqual([
      { name: 'v', hostPath: { path: '/data/vol/d/v', type: 'Directory' } },
    ]);
    expect(dep.spec.template.spec.containers[0].volumeMounts[0].readOnly).toBe(true);
    expect(dep.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.name).toBe('outpost.own1.web.s');
    expect(plan.secrets).toEqual([{ name: 'outpost.own1.web.s', data: JSON.stringify({ k: 'AAEC' }) }]);
    expect(plan.volumes).toEqual([
      { dir: 'd/v', files: [{ path: 'k', content: Buffer.from([0, 1, 2]), mode: 0o400 }] },
    ]);
    expect(plan.templates).toEqual([{ kind: 'Deployment', name: 'd', replicas: 2 }]);
    // Each of its pods on its own, as podman names and makes a Deployment's pods: a Pod from the template.
    expect(plan.pods.map((p) => [p.name, p.podmanName])).toEqual([
      ['d-pod-0', 'd-own1-h1-pod-0'],
      ['d-pod-1', 'd-own1-h1-pod-1'],
    ]);
    const [one] = docs(plan.pods[1].yaml);
    expect(one).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { ...dep.spec.template.metadata, name: 'd-own1-h1-pod-1' },
      spec: dep.spec.template.spec,
    });
  });

  it("hands podman no outpost.dev annotation, after reading a pull Secret's registry settings", () => {
    // docs/data.md's egress declaration: podman 4.3 refuses an annotation value past 63 characters.
    const egress = '[{"source": "/export", "target": "clips", "mode": "move", "maxBytes": "2GiB"}]';
    const plan = planUnit(
      unitOf([
        {
          apiVersion: 'v1',
          kind: 'Secret',
          type: DOCKER_CONFIG_TYPE,
          metadata: {
            name: 'pull',
            annotations: registryTlsAnnotations([
              { host: 'reg.example:5000', caBundle: 'PEM' },
              { host: 'plain.example:5000', insecure: true },
            ]),
          },
          stringData: { [DOCKER_CONFIG_KEY]: JSON.stringify({ auths: { 'reg.example:5000': { auth: 'dTpw' } } }) },
        },
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'camera', annotations: { [EGRESS_ANNOTATION]: egress, team: 'vision' } },
          spec: { imagePullSecrets: [{ name: 'pull' }], containers: [{ name: 'main', image: 'reg.example:5000/c:1' }] },
        },
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'reader', annotations: { [OBJECTS_MOUNT_ANNOTATION]: '/objects' } },
          spec: {
            replicas: 1,
            template: {
              metadata: { annotations: { [OBJECTS_MOUNT_ANNOTATION]: '/objects', 'outpost.dev/x': 'y' } },
              spec: { containers: [{ name: 'main', image: 'i' }] },
            },
          },
        },
      ]),
      'own1',
      '/data/vol',
    );
    expect(plan.pull?.ca.get('reg.example:5000')).toBe('PEM');
    expect([...(plan.pull?.insecure ?? [])]).toEqual(['plain.example:5000']);
    const [camera, reader] = docs(plan.yaml);
    expect(camera.metadata.annotations).toEqual({ team: 'vision' });
    expect(camera.metadata.labels['outpost.dev/workload']).toBe('web');
    expect(reader.metadata.annotations).toBeUndefined();
    expect(reader.spec.template.metadata.annotations).toBeUndefined();
    expect(reader.spec.template.metadata.labels['outpost.dev/template']).toBe('reader');
    const played = [plan.yaml, ...plan.pods.map((p) => p.yaml)].join('\n');
    expect(played).not.toMatch(/outpost\.dev\/(egress|objects|x|registry)/);
    expect(plan.pods.map((p) => docs(p.yaml)[0].metadata.annotations)).toEqual([{ team: 'vision' }, undefined]);
  });

  it('rejects kinds podman cannot run and volumes of objects the workload lacks', () => {
    expect(() =>
      planUnit(unitOf([{ apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'x' } }]), 'o', '/v'),
    ).toThrow(/kind CronJob is not supported/);
    const missing = [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p' },
        spec: { containers: [{ name: 'c', image: 'i' }], volumes: [{ name: 'v', configMap: { name: 'nope' } }] },
      },
    ];
    expect(() => planUnit(unitOf(missing), 'o', '/v')).toThrow(UnsupportedUnitError);
  });
});
