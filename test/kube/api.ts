/**
 * @module A small JSON client for the test API server (test support): one HTTPS request with
 * the CA and bearer token from the harness, the status and the parsed body back. The node double
 * uses it for what client libraries make awkward (status subresources, bindings, namespace
 * finalization, deletecollection).
 */
import { request } from 'node:https';

export type Obj = Record<string, any>;

export interface ApiResponse {
  status: number;
  body: Obj;
}

export class KubeApi {
  constructor(
    readonly url: string,
    private readonly caPem: string,
    private readonly token: string,
  ) {}

  /** Any status comes back; `ok` throws on anything but 2xx. */
  req(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<ApiResponse> {
    const data = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const r = request(
        `${this.url}${path}`,
        {
          method,
          ca: this.caPem,
          timeout: 30_000,
          headers: {
            authorization: `Bearer ${this.token}`,
            accept: 'application/json',
            ...(data !== undefined ? { 'content-type': contentType, 'content-length': Buffer.byteLength(data) } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: Obj;
            try {
              parsed = text ? (JSON.parse(text) as Obj) : {};
            } catch {
              parsed = { message: text };
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      r.on('timeout', () => r.destroy(new Error(`${method} ${path}: timeout`)));
      r.on('error', reject);
      r.end(data);
    });
  }

  async ok(method: string, path: string, body?: unknown, contentType?: string): Promise<Obj> {
    const r = await this.req(method, path, body, contentType);
    if (r.status < 200 || r.status > 299)
      throw new Error(`${method} ${path}: HTTP ${r.status}: ${String(r.body.message ?? JSON.stringify(r.body))}`);
    return r.body;
  }

  async items(path: string): Promise<Obj[]> {
    return ((await this.ok('GET', path)).items ?? []) as Obj[];
  }

  /** Merge patch of an object's status subresource (replaces lists such as conditions whole). */
  async patchStatus(path: string, status: Obj): Promise<ApiResponse> {
    return this.req('PATCH', `${path}/status`, { status }, 'application/merge-patch+json');
  }
}
