import { sign } from 'node:crypto';
import type { BlobDigest } from './blobs.js';
import { describe, expect, it } from 'vitest';
import {
  downgradeRefusal,
  newReleaseKeyPair,
  newerInstalled,
  releaseScopeRefusal,
  signRelease,
  verifyRelease,
} from './release.js';

const digest = `sha256:${'a'.repeat(64)}` as BlobDigest;
const key = newReleaseKeyPair();

describe('verifyRelease', () => {
  it('the scope is signed: changing it breaks the signature', () => {
    const r = signRelease(key.privateKeyPem, { scope: 'shop', version: '0.2.0', digest, size: 10 });
    expect(verifyRelease(key.publicKeyPem, r)).toEqual(r);
    expect(() => verifyRelease(key.publicKeyPem, { ...r, scope: '*' })).toThrow(
      /signature of release 0\.2\.0 .*for every project\) does not verify/,
    );
  });

  it('refuses a release signed before releases had a scope, even with a valid signature over the old payload', () => {
    const payload = JSON.stringify({ kind: 'outpost-agent', version: '0.2.0', digest, size: 10 });
    const old = {
      version: '0.2.0',
      digest,
      size: 10,
      signature: sign(null, Buffer.from(payload), key.privateKeyPem).toString('base64'),
    };
    expect(() => verifyRelease(key.publicKeyPem, old)).toThrow(/has no scope: .*refused/);
  });
});

describe('releaseScopeRefusal', () => {
  const r = (scope: string) => signRelease(key.privateKeyPem, { scope, version: '0.2.0', digest, size: 10 });
  it('a release for project p runs in p, one for * anywhere, nothing else', () => {
    expect(releaseScopeRefusal(r('shop'), 'shop')).toBeUndefined();
    expect(releaseScopeRefusal(r('*'), 'factory')).toBeUndefined();
    expect(releaseScopeRefusal(r('shop'), 'factory')).toMatch(
      /^release 0\.2\.0 is signed for project shop, and this edge is in project factory: refused/,
    );
  });
});

describe('downgradeRefusal', () => {
  const committed = { version: '0.3.0', what: 'the release committed on this edge' };
  const running = { version: '0.3.0-rc.1', what: 'the version this agent runs' };
  const fix = 'pass --allow-downgrade';

  it('refuses a release older than any installed version, naming the newest and the fix', () => {
    expect(downgradeRefusal('0.2.9', [running, committed], false, fix)).toBe(
      'release 0.2.9 is older than 0.3.0, the release committed on this edge: refused as a downgrade; to go back on purpose pass --allow-downgrade',
    );
    // A pre-release is older than its release (semver), not newer by string order.
    expect(downgradeRefusal('0.3.0-rc.1', [committed], false, fix)).toMatch(/older than 0\.3\.0/);
    expect(downgradeRefusal('0.10.0', [committed], false, fix)).toBeUndefined();
    expect(downgradeRefusal('0.3.0', [committed], false, fix)).toBeUndefined();
  });

  it('allowDowngrade lets it through; newerInstalled still says what it replaces', () => {
    expect(downgradeRefusal('0.2.0', [committed], true, fix)).toBeUndefined();
    expect(newerInstalled('0.2.0', [running, committed])).toEqual(committed);
  });

  it('a release version that is not semver cannot be ordered: refused unless allowed; an installed one bounds nothing', () => {
    expect(downgradeRefusal('nightly', [committed], false, fix)).toMatch(
      /^release version nightly is not a semantic version/,
    );
    expect(downgradeRefusal('nightly', [committed], true, fix)).toBeUndefined();
    expect(downgradeRefusal('0.1.0', [{ version: 'dev', what: 'x' }], false, fix)).toBeUndefined();
  });
});
