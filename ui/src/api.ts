/**
 * The hub's REST API as the UI uses it (docs/api.md, docs/ui.md). Every call carries the session's
 * bearer token; failures become ApiError (the hub answered with an error) or NetworkError (it did
 * not answer at all), which the shell turns into the "connection lost" banner.
 */

export interface FieldError {
  path: string;
  message: string;
  index?: number;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: FieldError[],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export class NetworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NetworkError';
  }
}

export interface ApiHooks {
  /** Called with false when a request could not reach the hub, true when one did. */
  reachable?(ok: boolean): void;
  /** The token was refused (expired or revoked). */
  unauthorized?(): void;
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  /** Send `body` as this content type (a string body), e.g. application/yaml. */
  contentType?: string;
  signal?: AbortSignal;
  /** Read the answer as text, not JSON. */
  text?: boolean;
}

/** Turns an error answer into an ApiError; tolerates bodies that are not the API's JSON shape. */
export async function errorFrom(res: Response): Promise<ApiError> {
  let code = 'http_' + res.status;
  let message = `${res.status} ${res.statusText}`.trim();
  let details: FieldError[] | undefined;
  try {
    const j = (await res.json()) as { error?: { code?: string; message?: string; details?: unknown } };
    if (j.error) {
      code = j.error.code ?? code;
      message = j.error.message ?? message;
      if (Array.isArray(j.error.details)) details = j.error.details as FieldError[];
    }
  } catch {
    /* not JSON: keep the status line */
  }
  return new ApiError(res.status, code, message, details);
}

export class ApiClient {
  constructor(
    private readonly token: () => string | undefined,
    private readonly hooks: ApiHooks = {},
    private readonly base = '',
  ) {}

  async request<T>(path: string, o: RequestOptions = {}): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    const t = this.token();
    if (t) headers.authorization = `Bearer ${t}`;
    let body: string | undefined;
    if (o.body !== undefined) {
      headers['content-type'] = o.contentType ?? 'application/json';
      body = typeof o.body === 'string' && o.contentType ? o.body : JSON.stringify(o.body);
    }
    let res: Response;
    try {
      res = await fetch(this.base + path, {
        method: o.method ?? (body === undefined ? 'GET' : 'POST'),
        headers,
        body,
        signal: o.signal,
      });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      this.hooks.reachable?.(false);
      throw new NetworkError('cannot reach the hub: check that it is running and that this machine can reach it', {
        cause: err,
      });
    }
    // A proxy in front of a stopped hub answers 502/503/504 itself: that is the hub being away too.
    this.hooks.reachable?.(!(res.status === 502 || res.status === 504));
    if (res.status === 401) this.hooks.unauthorized?.();
    if (!res.ok) throw await errorFrom(res);
    return (o.text ? await res.text() : await res.json()) as T;
  }

  /** A plain-text answer (workload logs). */
  text(path: string, signal?: AbortSignal): Promise<string> {
    return this.request<string>(path, { signal, text: true });
  }

  delete<T>(path: string): Promise<T> {
    return this.request<T>(path, { method: 'DELETE' });
  }

  get<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.request<T>(path, { signal });
  }

  post<T>(path: string, body: unknown = {}, contentType?: string): Promise<T> {
    return this.request<T>(path, { method: 'POST', body, contentType });
  }
}

/** `?a=1&b=x` from the defined, non-empty values. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

export const enc = encodeURIComponent;
