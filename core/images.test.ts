import { describe, expect, it } from 'vitest';
import {
  dockerConfigJson,
  imagesOf,
  parseImageRef,
  pinnedImage,
  PULL_SECRET_NAME,
  registriesOf,
  registryTlsAnnotations,
  registryTlsOf,
  withImages,
  withPullSecret,
} from './images.js';
import type { Manifest } from './resources.js';

describe('parseImageRef', () => {
  it('reads the registry, repository, tag and digest as the container tools do', () => {
    expect(parseImageRef('busybox')).toEqual({ registry: 'docker.io', repository: 'library/busybox' });
    expect(parseImageRef('nginx:1.27')).toEqual({ registry: 'docker.io', repository: 'library/nginx', tag: '1.27' });
    expect(parseImageRef('acme/app:v2')).toEqual({ registry: 'docker.io', repository: 'acme/app', tag: 'v2' });
    expect(parseImageRef('localhost/outpost-busybox:latest')).toEqual({
      registry: 'localhost',
      repository: 'outpost-busybox',
      tag: 'latest',
    });
    expect(parseImageRef('127.0.0.1:5000/team/app:1')).toEqual({
      registry: '127.0.0.1:5000',
      repository: 'team/app',
      tag: '1',
    });
    expect(parseImageRef('reg.example.com/app@sha256:abc')).toEqual({
      registry: 'reg.example.com',
      repository: 'app',
      digest: 'sha256:abc',
    });
    expect(parseImageRef('reg.example.com:443/a/b:t@sha256:abc')).toEqual({
      registry: 'reg.example.com:443',
      repository: 'a/b',
      tag: 't',
      digest: 'sha256:abc',
    });
  });
});

const pod: Manifest = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p' },
  spec: {
    initContainers: [{ name: 'i', image: 'reg.example.com/init:1' }],
    containers: [
      { name: 'a', image: 'reg.example.com/app:1' },
      { name: 'b', image: 'busybox' },
    ],
  },
};
const deployment: Manifest = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'd' },
  spec: {
    template: { spec: { imagePullSecrets: [{ name: 'own' }], containers: [{ name: 'c', image: 'other.io/x' }] } },
  },
};

describe('images of a workload', () => {
  it('lists containers and init containers, and their registries', () => {
    expect(imagesOf([pod, deployment]).sort()).toEqual([
      'busybox',
      'other.io/x',
      'reg.example.com/app:1',
      'reg.example.com/init:1',
    ]);
    expect(registriesOf([pod, deployment])).toEqual(['docker.io', 'other.io', 'reg.example.com']);
  });
});

describe('withPullSecret', () => {
  const secret: Manifest = { apiVersion: 'v1', kind: 'Secret', metadata: { name: PULL_SECRET_NAME }, data: {} };
  it('adds the Secret first and names it in every pod template, keeping the pods own names', () => {
    const out = withPullSecret([pod, deployment], secret);
    expect(out[0]).toBe(secret);
    expect((out[1].spec as any).imagePullSecrets).toEqual([{ name: PULL_SECRET_NAME }]);
    expect((out[2].spec as any).template.spec.imagePullSecrets).toEqual([{ name: 'own' }, { name: PULL_SECRET_NAME }]);
    // The input is left as it was.
    expect((pod.spec as any).imagePullSecrets).toBeUndefined();
    // Applied twice: one Secret, one reference.
    const again = withPullSecret(out, secret);
    expect(again.filter((m) => m.kind === 'Secret')).toHaveLength(1);
    expect((again[1].spec as any).imagePullSecrets).toEqual([{ name: PULL_SECRET_NAME }]);
  });
});

describe('registry access', () => {
  it('puts only registries with credentials in the docker config, and reads the TLS annotations back', () => {
    const regs = [
      { host: 'a.io', username: 'u', password: 'p:w' },
      { host: 'b.io:5000', caBundle: '-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n' },
      { host: 'lab:80', insecure: true },
    ];
    expect(JSON.parse(dockerConfigJson(regs))).toEqual({
      auths: { 'a.io': { auth: Buffer.from('u:p:w').toString('base64') } },
    });
    const tls = registryTlsOf(registryTlsAnnotations(regs));
    expect([...tls.ca]).toEqual([['b.io:5000', regs[1].caBundle]]);
    expect([...tls.insecure]).toEqual(['lab:80']);
    expect(registryTlsAnnotations([{ host: 'a.io', username: 'u', password: 'p' }])).toEqual({});
  });
});

describe('pinning images to digests', () => {
  const d = `sha256:${'a'.repeat(64)}`;
  it('drops the tag (or an older digest) and keeps the host as spelled', () => {
    expect(pinnedImage('127.0.0.1:5000/team/app:v1', d)).toBe(`127.0.0.1:5000/team/app@${d}`);
    expect(pinnedImage('127.0.0.1:5000/team/app', d)).toBe(`127.0.0.1:5000/team/app@${d}`);
    expect(pinnedImage(`reg:443/a/b:t@sha256:${'b'.repeat(64)}`, d)).toBe(`reg:443/a/b@${d}`);
  });
  it('replaces the images it maps in containers and init containers of every pod template, without changing the input', () => {
    const input: Manifest[] = [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p' },
        spec: { containers: [{ name: 'a', image: 'h:1/x:1' }] },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'd' },
        spec: {
          template: {
            spec: {
              initContainers: [{ name: 'i', image: 'h:1/x:1' }],
              containers: [{ name: 'b', image: 'other:2' }],
            },
          },
        },
      },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { image: 'h:1/x:1' } },
    ];
    const copy = structuredClone(input);
    const out = withImages(input, new Map([['h:1/x:1', `h:1/x@${d}`]]));
    expect(input).toEqual(copy);
    expect(imagesOf(out).sort()).toEqual([`h:1/x@${d}`, 'other:2']);
    expect(out[2]).toBe(input[2]);
  });
});
