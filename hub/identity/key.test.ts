/** The identity key file and the sealing of identity parts (hub/identity/key.ts). */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers.js';
import { IdentityKey, loadIdentityKey, newIdentityKey } from './key.js';

const dir = tempDir('outpost-identity-key-');
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function keyFile(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text, { mode: 0o600 });
  return file;
}

describe('identity key', () => {
  it('a new key is 32 random bytes in base64url; the file loads and seals and opens a part', () => {
    const text = newIdentityKey();
    expect(text).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
    expect(newIdentityKey()).not.toBe(text);
    const key = loadIdentityKey(keyFile('k', text));
    const sealed = key.seal('ca', 'the CA');
    expect(sealed).toMatch(new RegExp(`^oid1\\.${key.keyId}\\.`));
    expect(sealed).not.toContain('the CA');
    expect(key.seal('ca', 'the CA')).not.toBe(sealed); // a random nonce each time
    expect(key.open('ca', sealed)).toBe('the CA');
  });

  it('takes standard base64 too (openssl rand -base64 32)', () => {
    const raw = crypto.randomBytes(32);
    const a = loadIdentityKey(keyFile('std', `${raw.toString('base64')}\n`));
    const b = new IdentityKey(raw, 'b');
    expect(a.open('x', b.seal('x', 'v'))).toBe('v');
  });

  it('names the fix for a missing, short or malformed file', () => {
    const missing = path.join(dir, 'nope');
    expect(() => loadIdentityKey(missing)).toThrow(
      `--identity-key ${missing} does not exist: make one with \`outpost hub identity-key > FILE\` and give the same file to every replica`,
    );
    const short = keyFile('short', crypto.randomBytes(16).toString('base64url'));
    expect(() => loadIdentityKey(short)).toThrow(
      `--identity-key ${short} is not an identity key (32 random bytes in base64, 22 characters found, 16 bytes): make one with`,
    );
    const junk = keyFile('junk', 'not a key at all!');
    expect(() => loadIdentityKey(junk)).toThrow(`--identity-key ${junk} is not an identity key`);
  });

  it('a wrong key, an altered row and a row of another part do not open', () => {
    const a = new IdentityKey(Buffer.alloc(32, 1), '--identity-key a');
    const b = new IdentityKey(Buffer.alloc(32, 2), '--identity-key b');
    const sealed = a.seal('secrets-key', 'k');
    expect(() => b.open('secrets-key', sealed)).toThrow(
      `the hub identity in the database is sealed with identity key ${a.keyId}, but --identity-key b is key ${b.keyId}`,
    );
    // The second-to-last character changed (the last may carry only padding bits): to another
    // letter than the one it is, whatever the random nonce made it (it once was 'A' already).
    const flipped = sealed.slice(0, -2) + (sealed.at(-2) === 'A' ? 'B' : 'A') + sealed.slice(-1);
    expect(flipped).not.toBe(sealed);
    expect(() => a.open('secrets-key', flipped)).toThrow('cannot open the hub identity part "secrets-key"');
    expect(() => a.open('ca', sealed)).toThrow('cannot open the hub identity part "ca"');
    expect(() => a.open('ca', 'plain text')).toThrow('is not sealed by a hub');
  });
});
