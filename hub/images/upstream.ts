/**
 * @module Pull-through from a Registry into the hub's image cache: a client of a registry's OCI
 * distribution API with the Registry's credentials (basic auth, or the bearer token its
 * `WWW-Authenticate: Bearer realm=...` challenge points to), its CA bundle or `insecure`. The
 * hub asks for a manifest once per tag: the digest it gets is cached with its blobs, and later
 * pulls of the tag are answered from the cache (a tag moving upstream does not move the cached one).
 */
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { OutpostError } from '../../core/errors.js';
import type { Registry } from '../../core/resources.js';
import { HUB_SEALED_PREFIX } from '../../core/secrets.js';
import type { SecretBox } from '../secrets.js';

export const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
].join(', ');
const INDEX_TYPES = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
];
const TIMEOUT_MS = 60_000;
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Readable;
}

export class UpstreamRegistry {
  private bearer: string | undefined;
  private readonly base: URL;
  private readonly auth: string | undefined;

  constructor(
    private readonly registry: Registry,
    box: SecretBox,
  ) {
    this.base = new URL(registry.spec.url);
    const c = registry.spec.credentials;
    if (c) {
      const pw = c.password.startsWith(HUB_SEALED_PREFIX) ? box.open(c.password) : c.password;
      this.auth = `Basic ${Buffer.from(`${c.username}:${pw}`, 'utf8').toString('base64')}`;
    }
  }

  private request(url: URL, headers: Record<string, string>): Promise<Answer> {
    const isTls = url.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const req = (isTls ? https : http).request(
        url,
        {
          headers,
          agent: false,
          ...(isTls
            ? {
                ...(this.registry.spec.caBundle ? { ca: this.registry.spec.caBundle } : {}),
                rejectUnauthorized: !this.registry.spec.insecure,
              }
            : {}),
        },
        (res) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res }),
      );
      req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000}s`)));
      req.on('error', (err) =>
        reject(
          new OutpostError(
            'unavailable',
            `registry ${this.registry.metadata.name} (${this.base.host}): ${err.message}`,
          ),
        ),
      );
      req.end();
    });
  }

  /** A bearer token for `challenge` (realm, service, scope), asked with the Registry's credentials. */
  private async token(challenge: string): Promise<string> {
    const params = Object.fromEntries([...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (!params.realm) throw new OutpostError('unavailable', 'the registry asked for a bearer token without a realm');
    const url = new URL(params.realm);
    if (params.service) url.searchParams.set('service', params.service);
    if (params.scope) url.searchParams.set('scope', params.scope);
    const r = await this.request(url, this.auth ? { authorization: this.auth } : {});
    const text = await readAll(r.body, 64 * 1024);
    if (r.status !== 200)
      throw new OutpostError(
        'forbidden',
        `registry ${this.registry.metadata.name} refused its credentials (${r.status})`,
      );
    const j = JSON.parse(text) as { token?: string; access_token?: string };
    const t = j.token ?? j.access_token;
    if (!t) throw new OutpostError('unavailable', "the registry's token service answered without a token");
    return t;
  }

  /** GET `path` with the Registry's authentication; follows one auth challenge and redirects. */
  private async get(path: string, headers: Record<string, string> = {}, redirects = 3): Promise<Answer> {
    const url = new URL(path, this.base);
    const auth = this.bearer ? `Bearer ${this.bearer}` : this.auth;
    let r = await this.request(url, { ...headers, ...(auth ? { authorization: auth } : {}) });
    if (r.status === 401) {
      const challenge = String(r.headers['www-authenticate'] ?? '');
      r.body.resume();
      if (/^Bearer/i.test(challenge)) {
        this.bearer = await this.token(challenge);
        r = await this.request(url, { ...headers, authorization: `Bearer ${this.bearer}` });
      }
    }
    if (r.status >= 300 && r.status < 400 && r.headers.location && redirects > 0) {
      r.body.resume();
      // Blob redirects go to storage (S3 and the like) that wants no registry credentials.
      const to = new URL(r.headers.location, url);
      return to.host === this.base.host ? this.get(to.toString(), headers, redirects - 1) : this.request(to, headers);
    }
    return r;
  }

  private fail(what: string, r: Answer): never {
    r.body.resume();
    const name = this.registry.metadata.name;
    if (r.status === 401 || r.status === 403)
      // Not 401: that would tell the client its own token is wrong.
      throw new OutpostError(
        'forbidden',
        `registry ${name} refused ${what} (${r.status}): check the Registry's credentials`,
      );
    if (r.status === 404) throw new OutpostError('not_found', `registry ${name} has no ${what}`);
    throw new OutpostError('unavailable', `registry ${name} answered ${r.status} for ${what}`);
  }

  /**
   * The image manifest `repository:ref` names, for this hub's platform when the registry answers
   * with an index: its bytes and media type.
   */
  async manifest(repository: string, ref: string): Promise<{ bytes: Buffer; mediaType: string }> {
    const r = await this.get(`/v2/${repository}/manifests/${ref}`, { accept: MANIFEST_ACCEPT });
    if (r.status !== 200) this.fail(`manifest ${repository}:${ref}`, r);
    const mediaType = String(r.headers['content-type'] ?? '')
      .split(';')[0]
      .trim();
    const bytes = Buffer.from(await readAll(r.body, MAX_MANIFEST_BYTES), 'utf8');
    if (!INDEX_TYPES.includes(mediaType)) return { bytes, mediaType };
    const arch = ({ x64: 'amd64', arm64: 'arm64', arm: 'arm' } as Record<string, string>)[process.arch] ?? process.arch;
    const index = JSON.parse(bytes.toString('utf8')) as {
      manifests?: { digest: string; platform?: { os?: string; architecture?: string } }[];
    };
    const pick = index.manifests?.find((m) => m.platform?.os === 'linux' && m.platform.architecture === arch);
    if (!pick) throw new OutpostError('not_found', `${repository}:${ref} has no linux/${arch} image`);
    return this.manifest(repository, pick.digest);
  }

  /** The bytes of one blob, streamed. */
  async blob(repository: string, digest: string): Promise<{ body: Readable; size?: number }> {
    const r = await this.get(`/v2/${repository}/blobs/${digest}`);
    if (r.status !== 200) this.fail(`blob ${digest} of ${repository}`, r);
    const len = r.headers['content-length'];
    return { body: r.body, ...(len && /^\d+$/.test(len) ? { size: Number(len) } : {}) };
  }
}

async function readAll(body: Readable, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of body as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > limit) throw new OutpostError('too_large', `the registry's answer passes ${limit} bytes`);
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('utf8');
}
