/** @module One error class carrying an HTTP-like status, a stable code and a hint for the user. */

export type ErrorCode =
  | 'bad_request'
  | 'invalid'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'offline'
  | 'too_large'
  | 'unsupported_media'
  | 'internal'
  | 'disk_full'
  | 'unavailable';

const STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  invalid: 422,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unsupported_media: 415,
  offline: 503,
  unavailable: 503,
  internal: 500,
  disk_full: 507,
};

export class OutpostError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Machine-readable details, e.g. the list of invalid fields. */
  readonly details?: unknown;

  constructor(code: ErrorCode, message: string, opts: { cause?: unknown; details?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'OutpostError';
    this.code = code;
    this.status = STATUS[code];
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
 * the file whose disk is full and the fix, on the hub's API and on an edge's local API.
 */
export function diskFullError(file: string, err: unknown): OutpostError {
  return new OutpostError(
    'disk_full',
    `the disk holding ${file} is full, so nothing could be written: free space on it (reads still work; writes succeed again once there is room)`,
    { cause: err },
  );
}
