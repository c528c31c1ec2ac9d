import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, OutpostError, toOutpostError } from './errors.js';
import { bearerToken, rawErrorResponse } from './http.js';

describe('error codes', () => {
  it('docs/api.md lists every code with its status and meaning, and no other', () => {
    const doc = fs.readFileSync(path.join(import.meta.dirname, '..', 'docs', 'api.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| (.+) \|$/gm)].map((m) => [m[1], Number(m[2]), m[3]]);
    expect(rows).toEqual(Object.entries(ERROR_CODES).map(([code, [status, meaning]]) => [code, status, meaning]));
  });

  it('an OutpostError answers with its own status and body', () => {
    const e = new OutpostError('not_found', 'edge e1 not found');
    expect(toOutpostError(e)).toBe(e);
    expect(e.status).toBe(404);
    expect(e.toJSON()).toEqual({ error: { code: 'not_found', message: 'edge e1 not found' } });
  });

  it('an error that converts itself is converted; anything else is internal, its details kept from the client', () => {
    const lower = Object.assign(new Error('workload gone'), {
      toOutpostError: () => new OutpostError('bad_gateway', 'workload gone'),
    });
    expect(toOutpostError(lower).status).toBe(502);
    const unknown = toOutpostError(new Error('SQLITE_BUSY at /secret/path'));
    expect(unknown.code).toBe('internal');
    expect(unknown.status).toBe(500);
    expect(unknown.message).not.toContain('/secret/path');
  });

  it('a raw answer carries the same status and body, with WWW-Authenticate on 401', () => {
    const text = rawErrorResponse(new OutpostError('unauthorized', 'missing bearer credential'), { 'Retry-After': 3 });
    const [head, body] = text.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
    expect(head).toContain('WWW-Authenticate: Bearer');
    expect(head).toContain('Retry-After: 3');
    expect(head).toContain(`Content-Length: ${Buffer.byteLength(body)}`);
    expect(JSON.parse(body)).toEqual({ error: { code: 'unauthorized', message: 'missing bearer credential' } });
    expect(rawErrorResponse(new Error('boom')).split('\r\n')[0]).toBe('HTTP/1.1 500 Internal Server Error');
  });
});

describe('bearerToken', () => {
  it('reads the token of a Bearer header, in any case of the scheme, and nothing else', () => {
    expect(bearerToken('Bearer abc.def')).toBe('abc.def');
    expect(bearerToken('bearer   abc')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeNull();
    expect(bearerToken('Bearer a b')).toBeNull();
    expect(bearerToken('')).toBeNull();
    expect(bearerToken(undefined)).toBeNull();
  });
});
