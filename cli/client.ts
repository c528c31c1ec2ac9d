/**
 * @module The CLI's HTTP client of the hub's REST API (docs/api.md): node's http/https, the hub's
 * CA passed as `ca` (pinned by the token, docs/security.md) and normal certificate verification.
 * Every failure becomes a CliError whose message says what happened and what to do next.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { pipeline } from 'node:stream/promises';
import { CliError } from './errors.js';

/** What a command needs to talk to the hub. */
export interface HubConnection {
  /** `https://HOST:PORT` (or `http://` for a hub started with --insecure-http). */
  hub: string;
  token: string;
  /** PEM of the CA that signed the hub's certificate; absent: the system's trust store. */
  ca?: string;
}

/** The object a request is about, so errors can name it (`placement/eu`) and the command to run. */
export interface RequestSubject {
  /** Lower-case singular, as typed on the command line: `placement`. */
  kind: string;
  name?: string;
}

export interface RequestOptions {
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  subject?: RequestSubject;
}

/** The hub's answer to a failed request: `{"error": {"code", "message", "details"}}`. */
export class HubError extends CliError {
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;

  constructor(status: number, code: string, message: string, details?: unknown) {
    super(message);
    this.name = 'HubError';
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** A request gets no answer within this time: long enough for a hub under load, short enough for a person waiting. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Answers beyond this are refused: a list of 1,000 edges with status is a few MB. */
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
]);

/** Turns a failure below HTTP (refused connection, bad certificate, wrong protocol) into advice. */
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

function transportError(hub: string, err: NodeJS.ErrnoException): CliError {
  const code = err.code ?? '';
  if (NETWORK_CODES.has(code)) {
    return new CliError(`cannot reach the hub at ${hub}: is it running? (outpost hub --data DIR) [${code}]`, {
      cause: err,
    });
  }
  if (/CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS|HOSTNAME|ALTNAME/.test(code) || /certificate/i.test(err.message)) {
    return new CliError(
      `the hub at ${hub} presented a certificate the pinned CA does not vouch for (${err.message}): ` +
        'check the URL, or run `outpost login --hub URL --token T` again with a token of this hub',
      { cause: err },
    );
  }
  if (code === 'EPROTO' || /wrong version number|packet length/i.test(err.message)) {
    return new CliError(
      `the hub at ${hub} did not speak the expected protocol (${err.message}): use https:// for a TLS hub and http:// only for one started with --insecure-http`,
      { cause: err },
    );
  }
  return new CliError(`request to the hub at ${hub} failed: ${err.message}`, { cause: err });
}

function subjectText(s: RequestSubject | undefined): string {
  if (!s) return 'the object';
  return s.name ? `${s.kind}/${s.name}` : `${s.kind}s`;
}

/** The message a user sees for an HTTP error: the hub's own words, then what to do. */
export function describeHttpError(status: number, body: unknown, hub: string, subject?: RequestSubject): HubError {
  const e = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
  const code = typeof e?.code === 'string' ? e.code : `http_${status}`;
  const serverMsg = typeof e?.message === 'string' && e.message ? e.message : `HTTP ${status}`;
  let msg: string;
  switch (status) {
    case 401:
      msg = `the hub refused the token (${serverMsg}): run \`outpost login --hub ${hub} --token T\` again with a valid API token`;
      break;
    case 403:
      msg = `${serverMsg}`;
      break;
    case 404:
      msg = subject?.name
        ? `${serverMsg}: check the name and project (--project), or list them with \`outpost get ${subject.kind}s\``
        : serverMsg;
      break;
    case 409:
      // The hub's message says what conflicts and what to do; for a stale version the CLI names the command.
      msg =
        subject?.name && /stale/.test(serverMsg)
          ? `${serverMsg.replace(/: get it again[^]*$/, '')}: run \`outpost get ${subject.kind} ${subject.name} -o yaml\`, reapply your change and retry`
          : serverMsg;
      break;
    case 413:
      // The hub's message names what is too big and what to do about it.
      msg = serverMsg;
      break;
    case 422:
      msg = `the hub rejected ${subjectText(subject)}: ${serverMsg}`;
      break;
    case 503:
      msg = `${serverMsg} (the hub is up but cannot do this now; retry later)`;
      break;
    default:
      msg =
        status >= 500
          ? `the hub failed (HTTP ${status}): ${serverMsg}; check the hub's log`
          : `the hub answered HTTP ${status}: ${serverMsg}`;
  }
  return new HubError(status, code, msg, e?.details);
}

export class HubClient {
  readonly hub: string;
  private readonly base: URL;

  constructor(
    private readonly conn: HubConnection,
    private readonly opts: { timeoutMs?: number } = {},
  ) {
    let u: URL;
    try {
      u = new URL(conn.hub);
    } catch (err) {
      throw new CliError(`invalid hub URL "${conn.hub}": use https://HOST:PORT`, { cause: err });
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:')
      throw new CliError(`invalid hub URL "${conn.hub}": use https://HOST:PORT`);
    this.base = u;
    this.hub = conn.hub.replace(/\/+$/, '');
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
    const url = new URL(this.base.pathname.replace(/\/+$/, '') + path, this.base);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
    const headers: Record<string, string> = { authorization: `Bearer ${this.conn.token}`, accept: 'application/json' };
    if (payload) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const isTls = url.protocol === 'https:';
    const timeoutMs = this.opts.timeoutMs ?? REQUEST_TIMEOUT_MS;
    return new Promise<T>((resolve, reject) => {
      const reqOpts: https.RequestOptions = {
        method,
        headers,
        // One connection per request: a CLI makes few requests, and no pooled socket keeps the process alive.
        agent: false,
        ...(isTls && this.conn.ca ? { ca: this.conn.ca } : {}),
      };
      const req = (isTls ? https : http).request(url, reqOpts, (res) => {
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
        res.on('error', (err) => reject(transportError(this.hub, err)));
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
                  `the hub at ${this.hub} answered ${method} ${path} with something that is not JSON: is ${this.hub} an Outpost hub?`,
                ),
              );
            } else resolve(body as T);
            return;
          }
          reject(describeHttpError(status, body, this.hub, opts.subject));
        });
      });
      req.setTimeout(timeoutMs, () =>
        req.destroy(Object.assign(new Error(`no answer within ${timeoutMs / 1000}s`), { code: 'ETIMEDOUT' })),
      );
      req.on('error', (err: NodeJS.ErrnoException) => reject(transportError(this.hub, err)));
      req.end(payload);
    });
  }

  /**
   * Streams a file as the body of a POST (never the whole file in memory): what `blob push` does.
   * No overall deadline (a large file on a slow link takes long); a stall of `timeoutMs` fails.
   */
  upload<T>(path: string, file: string, headers: Record<string, string>): Promise<T> {
    const url = new URL(this.base.pathname.replace(/\/+$/, '') + path, this.base);
    const size = fs.statSync(file).size;
    const isTls = url.protocol === 'https:';
    const timeoutMs = this.opts.timeoutMs ?? REQUEST_TIMEOUT_MS;
    return new Promise<T>((resolve, reject) => {
      const req = (isTls ? https : http).request(
        url,
        {
          method: 'POST',
          agent: false,
          headers: {
            authorization: `Bearer ${this.conn.token}`,
            accept: 'application/json',
            'content-length': String(size),
            expect: '100-continue',
            ...headers,
          },
          ...(isTls && this.conn.ca ? { ca: this.conn.ca } : {}),
        },
        (res) => {
          res.on('error', (err) => reject(transportError(this.hub, err)));
          void jsonBody(res).then((body) => {
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) resolve(body as T);
            else reject(describeHttpError(status, body, this.hub));
          });
        },
      );
      req.setTimeout(timeoutMs, () =>
        req.destroy(Object.assign(new Error(`no progress within ${timeoutMs / 1000}s`), { code: 'ETIMEDOUT' })),
      );
      req.on('error', (err: NodeJS.ErrnoException) => reject(transportError(this.hub, err)));
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
  }

  /** Streams a GET answer into `out` (a file or stdout); resolves with the response headers. */
  download(path: string, out: NodeJS.WritableStream): Promise<http.IncomingHttpHeaders> {
    const url = new URL(this.base.pathname.replace(/\/+$/, '') + path, this.base);
    const isTls = url.protocol === 'https:';
    const timeoutMs = this.opts.timeoutMs ?? REQUEST_TIMEOUT_MS;
    return new Promise((resolve, reject) => {
      const req = (isTls ? https : http).request(
        url,
        {
          method: 'GET',
          agent: false,
          headers: { authorization: `Bearer ${this.conn.token}` },
          ...(isTls && this.conn.ca ? { ca: this.conn.ca } : {}),
        },
        (res) => {
          const status = res.statusCode ?? 0;
          if (status < 200 || status >= 300) {
            void jsonBody(res).then((body) => reject(describeHttpError(status, body, this.hub)));
            return;
          }
          pipeline(res, out).then(
            () => resolve(res.headers),
            (err: NodeJS.ErrnoException) => reject(transportError(this.hub, err)),
          );
        },
      );
      req.setTimeout(timeoutMs, () =>
        req.destroy(Object.assign(new Error(`no progress within ${timeoutMs / 1000}s`), { code: 'ETIMEDOUT' })),
      );
      req.on('error', (err: NodeJS.ErrnoException) => reject(transportError(this.hub, err)));
      req.end();
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
}
