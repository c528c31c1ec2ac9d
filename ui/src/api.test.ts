/** The API client against a real HTTP server: error bodies, field details, an unreachable hub. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, ApiError, NetworkError, query } from './api.js';

let server: http.Server;
let base: string;
const seen: { method?: string; auth?: string; type?: string; body: string }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method, auth: req.headers.authorization, type: req.headers['content-type'], body });
      if (req.url === '/ok') return res.end('{"items":[]}');
      if (req.url === '/invalid') {
        res.writeHead(422, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({
            error: {
              code: 'invalid',
              message: 'object 1: spec.workloads: required',
              details: [{ index: 0, path: 'spec.workloads', message: 'required' }],
            },
          }),
        );
      }
      if (req.url === '/401') {
        res.writeHead(401, { 'content-type': 'application/json' });
        return res.end('{"error":{"code":"unauthorized","message":"the token is not valid"}}');
      }
      res.writeHead(502);
      res.end('<html>bad gateway</html>');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));

describe('ApiClient', () => {
  it('sends the bearer token, JSON or YAML bodies, and reports the hub reachable', async () => {
    const reach: boolean[] = [];
    const c = new ApiClient(() => 'tok', { reachable: (ok) => reach.push(ok) }, base);
    expect(await c.get('/ok')).toEqual({ items: [] });
    await c.post('/ok', { a: 1 });
    await c.post('/ok', 'kind: Workload\n', 'application/yaml');
    expect(seen.slice(-3)).toEqual([
      { method: 'GET', auth: 'Bearer tok', type: undefined, body: '' },
      { method: 'POST', auth: 'Bearer tok', type: 'application/json', body: '{"a":1}' },
      { method: 'POST', auth: 'Bearer tok', type: 'application/yaml', body: 'kind: Workload\n' },
    ]);
    expect(reach).toEqual([true, true, true]);
  });

  it('turns a 422 into an ApiError with the field details, and a 401 into a sign-out', async () => {
    let unauthorized = 0;
    const c = new ApiClient(() => 'tok', { unauthorized: () => unauthorized++ }, base);
    const e = await c.post('/invalid', {}).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({
      status: 422,
      code: 'invalid',
      details: [{ index: 0, path: 'spec.workloads', message: 'required' }],
    });
    await expect(c.get('/401')).rejects.toMatchObject({ status: 401, message: 'the token is not valid' });
    expect(unauthorized).toBe(1);
  });

  it('treats a proxy error page and a refused connection as the hub being unreachable', async () => {
    const reach: boolean[] = [];
    const c = new ApiClient(() => undefined, { reachable: (ok) => reach.push(ok) }, base);
    await expect(c.get('/gateway')).rejects.toMatchObject({ status: 502, code: 'http_502' });
    const down = new ApiClient(() => undefined, { reachable: (ok) => reach.push(ok) }, 'http://127.0.0.1:9');
    await expect(down.get('/x')).rejects.toBeInstanceOf(NetworkError);
    expect(reach).toEqual([false, false]);
  });

  it('builds query strings from the set values only', () => {
    expect(query({ q: 'a b', labelSelector: 'region=eu,tier!=x', state: '', limit: 50, continue: undefined })).toBe(
      '?q=a+b&labelSelector=region%3Deu%2Ctier%21%3Dx&limit=50',
    );
    expect(query({})).toBe('');
  });
});
