/**
 * @module The blob routes of the edge's local API (DATA/agent.sock): `outpost edge local blob
 * push|pull|ls|rm`. A push copies a file of this host into the store and queues it for the hub;
 * a pull queues a blob to bring from the hub. Both happen whenever the hub is connected.
 */
import { isDigest, isMediaType } from '../../core/blobs.js';
import { BlobBudgetError } from './store.js';
import type { EdgeTransfers } from './transfers.js';

const err = (status: number, message: string) => ({ status, body: { error: { message } } });

/** `sub` is the path after `/blobs`; undefined when no route matches. */
export async function blobRoute(
  t: EdgeTransfers,
  method: string,
  sub: string,
  body: unknown,
): Promise<{ status: number; body: unknown } | undefined> {
  const b = (body ?? {}) as Record<string, unknown>;
  if (method === 'GET' && (sub === '' || sub === '/'))
    return { status: 200, body: { items: t.store.list(), budgetBytes: t.store.budgetBytes } };
  if (method === 'POST' && sub === '/push') {
    if (typeof b.file !== 'string' || !b.file.startsWith('/'))
      return err(400, 'body must be {"file": "/absolute/path"}');
    const mediaType = typeof b.mediaType === 'string' ? b.mediaType : 'application/octet-stream';
    if (!isMediaType(mediaType)) return err(400, `media type "${mediaType}" is not type/subtype`);
    try {
      const r = await t.store.queueUpload(b.file, mediaType);
      t.kick();
      return { status: 200, body: r };
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EACCES')
        return err(400, `cannot read ${b.file} as the agent's user: check the path and its permissions`);
      if (e instanceof BlobBudgetError) return err(507, e.message);
      throw e;
    }
  }
  if (method === 'POST' && sub === '/pull') {
    if (!isDigest(b.digest)) return err(400, 'body must be {"digest": "sha256:..."}');
    const have = t.store.files.has(b.digest);
    void t.fetch(b.digest).catch(() => undefined);
    return { status: 200, body: { digest: b.digest, state: have ? 'stored' : 'wanted' } };
  }
  if (method === 'DELETE' && sub.startsWith('/')) {
    const d = decodeURIComponent(sub.slice(1));
    if (!isDigest(d)) return err(400, 'use DELETE /blobs/sha256:...');
    await t.store.remove(d);
    return { status: 200, body: { digest: d, removed: true } };
  }
  return undefined;
}
