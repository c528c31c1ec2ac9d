/** @module One error class carrying an HTTP-like status, a stable code and a hint for the user. */

/**
 * Every error code the hub and the edge answer with, its HTTP status and what it means: the one
 * list (docs/api.md shows it as a table, kept equal by core/errors.test.ts).
 */
export const ERROR_CODES = {
  bad_request: [400, 'the request is malformed (not JSON, a bad query parameter, a path that decodes ambiguously)'],
  invalid: [422, 'the body or object fails validation; details list each field and the fix'],
  unauthorized: [401, 'no bearer token, or one that is unknown, expired or revoked'],
  decommissioned: [401, "the edge's credential belongs to a decommissioned edge (the edge stops dialling)"],
  forbidden: [403, "the token's role does not allow the action in this project"],
  over_quota: [
    403,
    'the request would pass a quota of its project (spec.quotas): the message names it, its use and the fix',
  ],
  not_found: [404, "no such route or object (also another project's object: a token never learns it exists)"],
  conflict: [409, 'a stale metadata.resourceVersion, or a name already taken'],
  too_large: [413, 'a body, object or stream over its bound'],
  unsupported_media: [415, 'a body in a content type the route does not take'],
  too_many_requests: [
    429,
    'an edge reconnects too often (Retry-After says when to come back), or too many sign-ins are in progress',
  ],
  internal: [500, "a bug or unexpected failure on the hub: see the hub's log"],
  bad_gateway: [502, 'the edge could not serve a tunnelled request (its driver or workload refused)'],
  edge_disconnected: [502, 'the edge disconnected while a tunnelled request was under way'],
  offline: [503, 'the edge is not connected now'],
  unavailable: [
    503,
    'the hub cannot serve this now (busy admitting edges: Retry-After says when; no release key; no malware scanner; its database unreachable)',
  ],
  deadline: [504, 'a tunnelled stream passed its deadline or stalled'],
  disk_full: [507, 'a write found the disk full: free space on it (reads go on)'],
} as const satisfies Record<string, readonly [number, string]>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class OutpostError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Machine-readable details, e.g. the list of invalid fields. */
  readonly details?: unknown;

  constructor(code: ErrorCode, message: string, opts: { cause?: unknown; details?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'OutpostError';
    this.code = code;
    this.status = ERROR_CODES[code][0];
    this.details = opts.details;
  }

  toJSON(): { error: { code: ErrorCode; message: string; details?: unknown } } {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.details === undefined ? {} : { details: this.details }),
      },
    };
  }
}

/**
 * An error of a lower layer that knows which OutpostError it means to a client (sync's
 * TunnelError): core cannot import it, so it converts itself.
 */
export interface ConvertsToOutpostError {
  toOutpostError(): OutpostError;
}

/**
 * The one mapping from anything thrown to the error a client is told, and so to its HTTP status
 * and body (`err.status`, `err.toJSON()`): used by the hub API's onError, the tunnel's raw
 * responses, the blob routes and the sync server's upgrade refusals. Anything unknown is
 * `internal`, its details left for the log.
 */
export function toOutpostError(err: unknown): OutpostError {
  if (err instanceof OutpostError) return err;
  if (err !== null && typeof err === 'object' && typeof (err as ConvertsToOutpostError).toOutpostError === 'function')
    return (err as ConvertsToOutpostError).toOutpostError();
  return new OutpostError('internal', 'internal error on the hub; see its log', { cause: err });
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return err.message + cause;
  }
  return String(err);
}

/** The error (or one of its causes) says the disk is full: SQLite's SQLITE_FULL or the system's ENOSPC. */
export function isDiskFull(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (code === 'SQLITE_FULL' || code === 'ENOSPC') return true;
  }
  return false;
}

/**
 * The one answer to a write that failed for want of disk space (507 Insufficient Storage), naming
 * the file (or directory) whose disk is full and the fix, on the hub's API, its blob uploads and
 * an edge's local API; `alsoFix`: what else frees room there (the blob uploads: remove blobs).
 */
export function diskFullError(file: string, err: unknown, alsoFix?: string): OutpostError {
  return new OutpostError(
    'disk_full',
    `the disk holding ${file} is full, so nothing could be written: free space on it${alsoFix ? `, or ${alsoFix}` : ''} (reads still work; writes succeed again once there is room)`,
    { cause: err },
  );
}
