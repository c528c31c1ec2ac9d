import { describe, expect, it } from 'vitest';
import { OutpostError } from '../../core/errors.js';
import { principalFromHeader, type ApiPrincipal } from './principal.js';

const alice: ApiPrincipal = { tokenId: 't1', role: 'operator', project: 'shop' };
const verify = (token: string): ApiPrincipal | null => (token === 'good' ? alice : null);

function refusal(header: string | undefined): OutpostError {
  try {
    principalFromHeader(verify, header);
  } catch (err) {
    return err as OutpostError;
  }
  throw new Error('expected a refusal');
}

describe('principalFromHeader', () => {
  it("gives the bearer token's principal", () => {
    expect(principalFromHeader(verify, 'Bearer good')).toBe(alice);
  });

  it('refuses a missing or non-bearer header with 401 saying how to pass a token', () => {
    for (const h of [undefined, 'Basic good']) {
      const e = refusal(h);
      expect(e.status).toBe(401);
      expect(e.message).toMatch(/^missing bearer token: pass --token/);
    }
  });

  it('refuses an unknown, expired or revoked token with 401 saying to get a new one', () => {
    const e = refusal('Bearer bad');
    expect(e.status).toBe(401);
    expect(e.message).toMatch(/not valid .*ask an admin for a new one/);
  });
});
