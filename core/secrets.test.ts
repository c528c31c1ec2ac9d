import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newSealKeyPair, openOnEdge, openSecretsOnEdge, redactSecrets, REDACTED, sealToEdge } from './secrets.js';

const D = crypto.randomBytes(32);

describe('sealing to an edge', () => {
  it('opens with the edge key only, is stable for one value, and differs for another', () => {
    const k = newSealKeyPair();
    const s = sealToEdge(k.publicKey, 'hunter2', D);
    expect(s).toMatch(/^oes1\.[A-Za-z0-9_-]+$/);
    expect(s).not.toContain('hunter2');
    expect(sealToEdge(k.publicKey, 'hunter2', D)).toBe(s);
    expect(sealToEdge(k.publicKey, 'hunter3', D)).not.toBe(s);
    expect(openOnEdge(k.privateKey, s)).toBe('hunter2');
    expect(() => openOnEdge(newSealKeyPair().privateKey, s)).toThrow(/sealed for another key/);
    const raw = Buffer.from(s.slice(5), 'base64url');
    raw[raw.length - 1] ^= 1;
    expect(() => openOnEdge(k.privateKey, `oes1.${raw.toString('base64url')}`)).toThrow(/another key/);
  });

  it('opens every sealed value of a workload for the driver, naming the one that fails', () => {
    const k = newSealKeyPair();
    const manifests = [
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: 'plain' } },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 's' },
        stringData: { pw: sealToEdge(k.publicKey, 'x', D), local: 'override' },
      },
    ];
    expect(openSecretsOnEdge(k.privateKey, manifests)[1]).toMatchObject({ stringData: { pw: 'x', local: 'override' } });
    expect(() => openSecretsOnEdge(newSealKeyPair().privateKey, manifests)).toThrow(
      /^Secret s stringData\.pw cannot be opened: .*decommission the edge and enroll it again/,
    );
    expect(redactSecrets(manifests)[1]).toMatchObject({ stringData: { pw: REDACTED, local: REDACTED } });
    expect(redactSecrets(manifests)[0]).toBe(manifests[0]);
  });
});
