/**
 * @module HTTP over a tunnel stream, on the edge: one request to a workload port or to the cluster
 * API, its response head as META and its body as DATA; an upgrade (WebSocket, SPDY for kubectl)
 * turns the stream into a raw byte pipe after the 101.
 */
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { HOP_BY_HOP_HEADERS } from '../../core/http.js';
import { TunnelError, type TunnelRequest, type TunnelStream } from '../../sync/tunnel.js';
import type { KubeTarget } from './kube-target.js';

/** Hop-by-hop headers (core/http.ts), and `host`: this proxy dials the workload or cluster API itself. */
const HOP_HEADERS = new Set([...HOP_BY_HOP_HEADERS, 'host']);

/** The cluster API of `kubeconfig`, with the credential the driver uses. */
export async function kubeTarget(kubeconfig: string): Promise<KubeTarget> {
  // Loaded on first use: edges without the kubernetes driver never pay for the client. The module
  // imports the client statically: a dynamic import() of the package itself would make esbuild
  // keep all of it (14 MB) in the executable instead of the part we use (docs/packaging.md).
  const { readKubeTarget } = await import('./kube-target.js');
  return readKubeTarget(kubeconfig);
}

function filtered(
  h: Record<string, string | string[] | undefined>,
  keepUpgrade: boolean,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) {
    const lk = k.toLowerCase();
    if (v === undefined) continue;
    if (HOP_HEADERS.has(lk) && !(keepUpgrade && (lk === 'upgrade' || lk === 'connection'))) continue;
    out[lk] = v;
  }
  return out;
}

/** Forwards one HTTP request (or upgrade) arriving on `s`; resolves when the exchange is over. */
export async function forwardHttp(
  s: TunnelStream,
  r: Extract<TunnelRequest, { type: 'http' }>,
  resolveTarget: () => Promise<KubeTarget>,
): Promise<void> {
  const t = await resolveTarget();
  const base = t.url.pathname.replace(/\/+$/, '');
  const headers: Record<string, string | string[]> = {
    ...filtered(r.headers, !!r.upgrade),
    ...t.headers,
    host: t.url.host,
  };
  if (!t.headers.authorization && !t.headers.Authorization) delete headers.authorization;
  const mod = t.url.protocol === 'https:' ? https : http;
  const req = mod.request({
    ...t.options,
    protocol: t.url.protocol,
    hostname: t.url.hostname.replace(/^\[|\]$/g, ''),
    port: t.url.port || (t.url.protocol === 'https:' ? 443 : 80),
    method: r.method,
    path: base + r.path,
    headers,
    agent: false,
  });
  await new Promise<void>((resolve, reject) => {
    const fail = (err: Error): void =>
      reject(
        err instanceof TunnelError
          ? err
          : new TunnelError(
              'unavailable',
              `${r.target === 'kube' ? 'the cluster API' : `workload ${r.target.workload} port ${r.target.port}`} did not answer: ${err.message}`,
            ),
      );
    req.on('error', fail);
    s.on('close', () => {
      req.destroy();
      resolve();
    });
    req.on('response', (res) => {
      s.sendMeta({ status: res.statusCode ?? 502, headers: filtered(res.headers, false) });
      res.on('error', fail);
      res.pipe(s);
      res.on('end', resolve);
    });
    req.on('upgrade', (res, socket: Duplex, head: Buffer) => {
      s.sendMeta({ status: res.statusCode ?? 101, headers: filtered(res.headers, true) });
      if (head.length) s.write(head);
      socket.on('error', () => s.destroy());
      s.on('error', () => socket.destroy());
      socket.pipe(s);
      s.pipe(socket);
      socket.on('close', () => {
        s.end();
        resolve();
      });
    });
    if (r.upgrade) req.end();
    else s.pipe(req);
  });
}
