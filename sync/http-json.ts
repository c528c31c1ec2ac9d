/** @module A small JSON-over-HTTPS request with a pinned CA, for the edge's calls to the hub's REST API (enrollment). */
import http from 'node:http';
import https from 'node:https';

export interface JsonResponse<T> {
  status: number;
  body: T;
}

export function requestJson<T = unknown>(
  url: string,
  opts: { method?: string; body?: unknown; token?: string; ca?: string; timeoutMs?: number } = {},
): Promise<JsonResponse<T>> {
  const u = new URL(url);
  const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
  const mod = u.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      u,
      {
        method: opts.method ?? (payload ? 'POST' : 'GET'),
        headers: {
          accept: 'application/json',
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
          ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
        },
        ...(opts.ca ? { ca: opts.ca } : {}),
        timeout: opts.timeoutMs ?? 15_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : null;
          } catch {
            /* not JSON: hand back the text */
          }
          resolve({ status: res.statusCode ?? 0, body: body as T });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${u.origin} within ${opts.timeoutMs ?? 15_000} ms`)));
    req.on('error', (err) => reject(new Error(`cannot reach the hub at ${u.origin}: ${err.message}`, { cause: err })));
    req.end(payload);
  });
}
