/**
 * @module The CLI's HTTP client of the hub's REST API (docs/api.md): node's http/https, the hub's
 * CA passed as `ca` (pinned by the token, docs/security.md) and normal certificate verification.
 * Every failure becomes a CliError whose message says what happened and what to do next. Given
 * the URLs of several hub replicas, a request that cannot reach one goes to the next
 * (cli/failover.ts says when), and the client stays with the one that answered.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { pipeline } from 'node:stream/promises';
import { CliError } from './errors.js';
import { AttemptFailed, CONNECT_TIMEOUT_MS, withFailover } from './failover.js';
import { describeHttpError, HubError, transportError, type RequestSubject } from './hub-errors.js';

export { describeHttpError, HubError, type RequestSubject };

/** What a command needs to talk to the hub. */
export interface HubConnection {
  /** `https://HOST:PORT` (or `http://` for a hub started with --insecure-http); the first of `hubs`. */
  hub: string;
  /** The URLs of the hub's replicas, in the order to try them; absent: `hub` alone. */
  hubs?: string[];
  token: string;
  /** PEM of the CA that signed the hub's certificate; absent: the system's trust store. */
  ca?: string;
}

export interface RequestOptions {
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  subject?: RequestSubject;
}

/** A request gets no answer within this time: long enough for a hub under load, short enough for a person waiting. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Answers beyond this are refused: a list of 1,000 edges with status is a few MB. */
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** A response body read whole and parsed as JSON; undefined when it is not JSON (or the read fails). */
function jsonBody(res: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('error', () => resolve(undefined));
    res.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        resolve(undefined);
      }
    });
  });
}

/** The URLs of a connection, each checked, without a trailing slash. */
export function hubUrls(conn: HubConnection): string[] {
  const list = conn.hubs?.length ? conn.hubs : [conn.hub];
  return list.map((h) => {
    let u: URL;
    try {
      u = new URL(h);
    } catch (err) {
      throw new CliError(`invalid hub URL "${h}": use https://HOST:PORT`, { cause: err });
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:')
      throw new CliError(`invalid hub URL "${h}": use https://HOST:PORT`);
    return h.replace(/\/+$/, '');
  });
}

/** Where an attempt goes: the hub's URL and the connection options for it. */
interface Target {
  hub: string;
  base: URL;
  options: https.RequestOptions;
}

/** `path` (starting with `/api/v1/` or `/healthz`) on the hub of `t`. */
const urlOf = (t: Target, path: string): URL => new URL(t.base.pathname.replace(/\/+$/, '') + path, t.base);

export class HubClient {
  /** Every URL of the hub, in the order tried. */
  readonly hubs: string[];
  /** The URL that answered last (the first, until one did not answer). */
  private current = 0;

  constructor(
    private readonly conn: HubConnection,
    private readonly opts: {
      timeoutMs?: number;
      /** Told which URLs did not answer and which one did, when the first tried did not. */
      onFailover?: (note: string) => void;
    } = {},
  ) {
    this.hubs = hubUrls(conn);
  }

  /** The hub URL this client talks to now: the one that answered last. */
  get hub(): string {
    return this.hubs[this.current]!;
  }

  get<T>(path: string, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('GET', path, opts);
  }

  post<T>(path: string, body?: unknown, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('POST', path, { ...opts, body: body ?? {} });
  }

  delete<T>(path: string, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('DELETE', path, opts);
  }

  /** One request; `path` starts with `/api/v1/`. Resolves with the parsed JSON body of a 2xx answer. */
  request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
    const headers: Record<string, string> = { authorization: `Bearer ${this.conn.token}`, accept: 'application/json' };
    if (payload) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const timeoutMs = this.opts.timeoutMs ?? REQUEST_TIMEOUT_MS;
    return this.failover(method, (t) => {
      const url = urlOf(t, path);
      for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
      return new Promise<T>((resolve, reject) => {
        const req = (url.protocol === 'https:' ? https : http).request(
          url,
          { ...t.options, method, headers },
          (res) => {
            const chunks: Buffer[] = [];
            let size = 0;
            res.on('data', (c: Buffer) => {
              size += c.length;
              if (size > MAX_RESPONSE_BYTES) {
                req.destroy(new Error(`the hub's answer exceeds ${MAX_RESPONSE_BYTES} bytes`));
                return;
              }
              chunks.push(c);
            });
            res.on('error', (err) => reject(transportError(t.hub, err)));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let body: unknown;
              try {
                body = text === '' ? undefined : JSON.parse(text);
              } catch {
                body = undefined;
              }
              const status = res.statusCode ?? 0;
              if (status >= 200 && status < 300) {
                if (text !== '' && body === undefined) {
                  reject(
                    new CliError(
                      `the hub at ${t.hub} answered ${method} ${path} with something that is not JSON: is ${t.hub} an Outpost hub?`,
                    ),
                  );
                } else resolve(body as T);
                return;
              }
              reject(answered(status, describeHttpError(status, body, t.hub, opts.subject)));
            });
          },
        );
        req.setTimeout(timeoutMs, () =>
          req.destroy(Object.assign(new Error(`no answer within ${timeoutMs / 1000}s`), { code: 'ETIMEDOUT' })),
        );
        this.watchConnect(req, t.hub, reject);
        req.end(payload);
      });
    });
  }

  /**
   * Streams a file as the body of a POST (never the whole file in memory): what `blob push` does.
   * No overall deadline (a large file on a slow link takes long); a stall of `timeoutMs` fails.
   */
  upload<T>(path: string, file: string, headers: Record<string, string>): Promise<T> {
    const size = fs.statSync(file).size;
    const timeoutMs = this.opts.timeoutMs ?? REQUEST_TIMEOUT_MS;
    return this.failover('POST', (t) => {
      const url = urlOf(t, path);
      return new Promise<T>((resolve, reject) => {
        const req = (url.protocol === 'https:' ? https : http).request(
          url,
          {
            ...t.options,
            method: 'POST',
            headers: {
              authorization: `Bearer ${this.conn.token}`,
              accept: 'application/json',
              'content-length': String(size),
              expect: '100-continue',
              ...headers,
            },
          },
          (res) => {
            res.on('error', (err) => reject(transportError(t.hub, err)));
            void jsonBody(res).then((body) => {
              const status = res.statusCode ?? 0;
              if (status >= 200 && status < 300) resolve(body as T);
              else reject(answered(status, describeHttpError(status, body, t.hub)));
            });
          },
        );
        req.setTimeout(timeoutMs, () =>
          req.destroy(Object.assign(new Error(`no progress within ${timeoutMs / 1000}s`), { code: 'ETIMEDOUT' })),
        );
        this.watchConnect(req, t.hub, reject);
        // `Expect: 100-continue`: the hub says no (quota, rights) or "already have it" before a byte
        // of the body is sent.
        req.on('continue', () =>
          fs
            .createReadStream(file, { highWaterMark: 1024 * 1024 })
            .on('error', (err) => req.destroy(err))
            .pipe(req),
        );
        req.flushHeaders();
      });
    });
  }

  /** Streams a GET answer into `out` (a file or stdout); resolves with the response headers. */
  download(path: string, out: NodeJS.WritableStream): Promise<http.IncomingHttpHeaders> {
    const timeoutMs = this.opts.timeoutMs ?? REQUEST_TIMEOUT_MS;
    return this.failover('GET', (t) => {
      const url = urlOf(t, path);
      return new Promise<http.IncomingHttpHeaders>((resolve, reject) => {
        const req = (url.protocol === 'https:' ? https : http).request(
          url,
          { ...t.options, method: 'GET', headers: { authorization: `Bearer ${this.conn.token}` } },
          (res) => {
            const status = res.statusCode ?? 0;
            if (status < 200 || status >= 300) {
              void jsonBody(res).then((body) => reject(answered(status, describeHttpError(status, body, t.hub))));
              return;
            }
            // Once bytes went to `out`, a failure is final: another URL would write them again.
            pipeline(res, out).then(
              () => resolve(res.headers),
              (err: NodeJS.ErrnoException) => reject(transportError(t.hub, err)),
            );
          },
        );
        req.setTimeout(timeoutMs, () =>
          req.destroy(Object.assign(new Error(`no progress within ${timeoutMs / 1000}s`), { code: 'ETIMEDOUT' })),
        );
        this.watchConnect(req, t.hub, reject);
        req.end();
      });
    });
  }

  /** Every item of a list, following `continue` until the hub has no more. */
  async list<T>(path: string, query: Record<string, string | undefined> = {}, subject?: RequestSubject): Promise<T[]> {
    const items: T[] = [];
    let cont: string | undefined;
    // A bound on pages guards against a hub that keeps answering the same `continue`.
    for (let page = 0; page < 10_000; page++) {
      const r = await this.get<{ items?: T[]; continue?: string }>(path, {
        query: { ...query, continue: cont },
        subject,
      });
      items.push(...(r?.items ?? []));
      if (!r?.continue || r.continue === cont) return items;
      cont = r.continue;
    }
    return items;
  }

  /** Runs one attempt per URL as cli/failover.ts allows, from the one that answered last. */
  private async failover<T>(method: string, attempt: (t: Target) => Promise<T>): Promise<T> {
    const { value, index } = await withFailover(
      this.hubs,
      this.current,
      method,
      (i) => attempt(this.target(i)),
      (note) => this.opts.onFailover?.(`note: ${note}`),
    );
    this.current = index;
    return value;
  }

  private target(i: number): Target {
    const hub = this.hubs[i]!;
    return {
      hub,
      base: new URL(hub),
      // One connection per request: a CLI makes few requests, and no pooled socket keeps the process alive.
      options: { agent: false, ...(hub.startsWith('https:') && this.conn.ca ? { ca: this.conn.ca } : {}) },
    };
  }

  /**
   * Notes when the request's connection is made (before it, nothing was sent: any request may go to
   * the next URL), turns a failure of the request into an AttemptFailed, and with several URLs gives
   * a connection CONNECT_TIMEOUT_MS to come.
   */
  private watchConnect(req: http.ClientRequest, hub: string, reject: (err: unknown) => void): void {
    let reached = false;
    const timer =
      this.hubs.length > 1
        ? setTimeout(() => {
            if (!reached)
              req.destroy(
                Object.assign(new Error(`no connection within ${CONNECT_TIMEOUT_MS / 1000}s`), { code: 'ETIMEDOUT' }),
              );
          }, CONNECT_TIMEOUT_MS)
        : undefined;
    timer?.unref();
    req.on('socket', (s) => {
      if (!s.connecting) reached = true;
      else s.once('connect', () => (reached = true));
    });
    req.on('close', () => clearTimeout(timer));
    req.on('error', (err: NodeJS.ErrnoException) =>
      reject(new AttemptFailed(transportError(hub, err), reached, err.code)),
    );
  }
}

/** A hub's HTTP error answer as a failed attempt (a 503 may go to another URL: cli/failover.ts). */
function answered(status: number, error: HubError): AttemptFailed | HubError {
  return status === 503 ? new AttemptFailed(error, true, undefined, status) : error;
}
