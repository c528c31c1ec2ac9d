/** Who a Project's members make a person (hub/auth/memberships.ts) and what the relying party takes from claims (oidc.ts). */
import { describe, expect, it } from 'vitest';
import { membershipsOf, personName, roleOf } from './memberships.js';
import { OidcRelyingParty } from './oidc.js';

const members = [
  { group: 'shop-viewers', role: 'viewer' as const },
  { group: 'shop-devs', role: 'operator' as const },
  { user: 'Ana@Example.com', role: 'admin' as const },
  { user: 'sub-42', role: 'operator' as const },
];

describe('roleOf', () => {
  it('gives the highest role of the entries naming the person: by group, subject or email (any case)', () => {
    expect(roleOf(members, { subject: 's', email: null, groups: ['shop-viewers'] })).toBe('viewer');
    expect(roleOf(members, { subject: 's', email: null, groups: ['shop-viewers', 'shop-devs'] })).toBe('operator');
    expect(roleOf(members, { subject: 's', email: 'ana@example.com', groups: ['shop-devs'] })).toBe('admin');
    expect(roleOf(members, { subject: 'sub-42', email: null, groups: [] })).toBe('operator');
  });

  it('gives nothing to a person no entry names', () => {
    expect(roleOf(members, { subject: 'x', email: 'eve@example.com', groups: ['others'] })).toBeUndefined();
    // An entry's user is not a group, nor the other way round.
    expect(roleOf(members, { subject: 'shop-devs', email: null, groups: ['sub-42'] })).toBeUndefined();
  });

  it('lists the projects a person is a member of', () => {
    expect(
      membershipsOf(
        [
          { name: 'shop', members },
          { name: 'bank', members: [{ group: 'tellers', role: 'viewer' }] },
        ],
        { subject: 's', email: null, groups: ['shop-devs'] },
      ),
    ).toEqual([{ project: 'shop', role: 'operator' }]);
    expect(personName({ subject: 's', email: 'a@b.c' })).toBe('a@b.c');
    expect(personName({ subject: 's', email: null })).toBe('s');
  });
});

describe('OidcRelyingParty', () => {
  const rp = (issuer: string) =>
    new OidcRelyingParty({ issuer, clientId: 'c', clientSecret: 's', groupsClaim: 'roles', scopes: 'openid' });

  it('keeps an email only when the provider says it is verified, and reads the configured groups claim', () => {
    const r = rp('https://idp.example');
    expect(r.personOf({ sub: 'u1', email: 'a@b.c', email_verified: true, roles: ['x', 7, 'y'] })).toEqual({
      subject: 'u1',
      email: 'a@b.c',
      groups: ['x', 'y'],
    });
    expect(r.personOf({ sub: 'u1', email: 'a@b.c', groups: ['g'] })).toEqual({
      subject: 'u1',
      email: null,
      groups: [],
    });
  });

  it('refuses a plain-HTTP issuer off the loopback address, and a malformed one', () => {
    expect(() => rp('http://idp.example')).toThrow(/must be https:\/\/ \(plain http only on the loopback address\)/);
    expect(() => rp('not a url')).toThrow(/is not a URL/);
    expect(() => rp('http://127.0.0.1:8080')).not.toThrow();
  });
});
