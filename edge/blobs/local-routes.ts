/**
 * @module The blob routes of the edge's local API (DATA/agent.sock): `outpost edge local blob
 * push|pull|ls|rm`. A push copies a file of this host into the store and queues it for the hub;
 * a pull queues a blob to bring from the hub. Both happen whenever the hub is connected.
 */
import { Hono } from 'hono';
import { isDigest, isMediaType } from '../../core/blobs.js';
import { BlobBudgetError } from './store.js';
import type { EdgeTransfers } from './transfers.js';

const err = (message: string) => ({ error: { message } });

export function blobRoutes(t: EdgeTransfers): Hono {
  const app = new Hono();
  app.get('/', (c) => c.json({ items: t.store.list(), budgetBytes: t.store.budgetBytes }));
  app.post('/push', async (c) => {
    const b = (await c.req.json().catch(() => null)) as { file?: unknown; mediaType?: unknown } | null;
    if (typeof b?.file !== 'string' || !b.file.startsWith('/'))
      return c.json(err('body must be {"file": "/absolute/path"}'), 400);
    const mediaType = typeof b.mediaType === 'string' ? b.mediaType : 'application/octet-stream';
    if (!isMediaType(mediaType)) return c.json(err(`media type "${mediaType}" is not type/subtype`), 400);
    try {
      const r = await t.store.queueUpload(b.file, mediaType);
      t.kick();
      return c.json(r);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EACCES')
        return c.json(err(`cannot read ${b.file} as the agent's user: check the path and its permissions`), 400);
      if (e instanceof BlobBudgetError) return c.json(err(e.message), 507);
      throw e;
    }
  });
  app.post('/pull', async (c) => {
    const b = (await c.req.json().catch(() => null)) as { digest?: unknown } | null;
    if (!isDigest(b?.digest)) return c.json(err('body must be {"digest": "sha256:..."}'), 400);
    const have = t.store.files.has(b.digest);
    void t.fetch(b.digest).catch(() => undefined);
    return c.json({ digest: b.digest, state: have ? 'stored' : 'wanted' });
  });
  app.delete('/:digest', async (c) => {
    const d = c.req.param('digest');
    if (!isDigest(d)) return c.json(err('use sha256:...'), 400);
    await t.store.remove(d);
    return c.json({ digest: d, removed: true });
  });
  return app;
}
