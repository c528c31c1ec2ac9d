/** Serving the built UI: content types, cache headers, ETags, the SPA fallback, and paths it must not take. */
import fs from 'node:fs';
import path from 'node:path';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers.js';
import { diskSource, uiRoutes } from './ui.js';

let dir: string;
let app: Hono;

beforeAll(() => {
  dir = tempDir('outpost-ui-serve-');
  fs.mkdirSync(path.join(dir, 'assets'));
  fs.writeFileSync(
    path.join(dir, 'index.html'),
    '<!doctype html><title>Outpost</title><script type="module" src="/assets/index-abc123.js"></script>',
  );
  fs.writeFileSync(path.join(dir, 'assets', 'index-abc123.js'), 'console.log("ui")');
  fs.writeFileSync(path.join(dir, 'assets', 'index-abc123.css'), 'body{}');
  fs.writeFileSync(path.join(dir, 'secret.txt'), 'outside assets but inside dist');
  fs.writeFileSync(path.join(path.dirname(dir), 'outside.txt'), 'must never be served');
  // As in app.ts: API routes first (here one that answers and the JSON 404), the UI last.
  app = new Hono();
  app.get('/api/v1/whoami', (c) => c.json({ role: 'admin' }));
  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route ${c.req.path}` } }, 404));
  app.route('/', uiRoutes({ source: diskSource(dir) }));
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(path.join(path.dirname(dir), 'outside.txt'), { force: true });
});

describe('web UI serving', () => {
  it('serves index.html at / and for any UI route (reload on /edges/NAME works), revalidated on every load', async () => {
    for (const p of ['/', '/edges', '/edges/shop-1', '/placements/web?x=1']) {
      const r = await app.request(p);
      expect(r.status, p).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(r.headers.get('cache-control')).toBe('no-cache');
      expect(r.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(r.headers.get('x-frame-options')).toBe('DENY');
      expect(await r.text()).toContain('<title>Outpost</title>');
    }
  });

  it('serves hashed assets with their type and a year of immutable caching, and answers 304 to a matching ETag', async () => {
    const js = await app.request('/assets/index-abc123.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await js.text()).toBe('console.log("ui")');
    expect((await app.request('/assets/index-abc123.css')).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const etag = js.headers.get('etag')!;
    const again = await app.request('/assets/index-abc123.js', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const index = await app.request('/');
    expect((await app.request('/', { headers: { 'if-none-match': index.headers.get('etag')! } })).status).toBe(304);
  });

  it('answers a missing asset with 404, not with index.html that a browser would run as a script', async () => {
    const r = await app.request('/assets/index-old999.js');
    expect(r.status).toBe(404);
    expect(await r.text()).not.toContain('<title>');
    expect((await app.request('/favicon.ico')).status).toBe(404);
  });

  it('never serves files outside the UI directory', async () => {
    for (const p of ['/../outside.txt', '/assets/..%2F..%2Foutside.txt', '/%2e%2e/outside.txt']) {
      const r = await app.request(p);
      expect(await r.text(), p).not.toContain('must never be served');
    }
  });

  it('leaves API paths to the API: known routes answer, unknown ones keep the JSON 404', async () => {
    expect(await (await app.request('/api/v1/whoami')).json()).toEqual({ role: 'admin' });
    const r = await app.request('/api/v1/nope');
    expect(r.status).toBe(404);
    expect(await r.json()).toMatchObject({ error: { code: 'not_found' } });
    expect((await app.request('/metrics/x')).headers.get('content-type')).toContain('application/json');
  });

  it('says how to build the UI when there is none', async () => {
    const bare = new Hono();
    const prev = process.env.OUTPOST_UI_DIR;
    process.env.OUTPOST_UI_DIR = path.join(dir, 'does-not-exist');
    try {
      bare.route('/', uiRoutes({ source: undefined }));
      const r = await bare.request('/');
      // OUTPOST_UI_DIR names a directory: it is used as is, and its missing index.html is named.
      expect(r.status).toBe(500);
      expect(await r.text()).toMatch(/index\.html is missing.*npm run build:ui/);
    } finally {
      if (prev === undefined) delete process.env.OUTPOST_UI_DIR;
      else process.env.OUTPOST_UI_DIR = prev;
    }
  });
});
