/**
 * @module Errors as Kubernetes `Status` objects (metav1.Status), which kubectl and client-go read
 * for their messages and retry decisions: the same OutpostError codes the REST API maps
 * (core/errors.ts), each given the Kubernetes `reason` of its HTTP status.
 */
import { ERROR_CODES, OutpostError, toOutpostError, type ErrorCode } from '../../core/errors.js';

/** A Kubernetes StatusReason per HTTP status (k8s.io/apimachinery/pkg/apis/meta/v1 types.go). */
const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  502: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
  507: 'InternalError',
};

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: { reason?: string; message: string; field?: string }[];
  /** The managers an apply conflicted with, for 409 Conflict on server-side apply. */
  retryAfterSeconds?: number;
}

export interface KubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message: string;
  reason: string;
  details?: StatusDetails;
  code: number;
}

/**
 * An error the Kubernetes API answers with a reason of its own (AlreadyExists, Gone, Conflict with
 * field causes, MethodNotAllowed): carries the Status it becomes.
 */
export class KubeError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
    this.name = 'KubeError';
  }
}

export function statusOf(code: number, reason: string, message: string, details?: StatusDetails): KubeStatus {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

/** The one mapping from anything thrown in the Kubernetes API to its Status. */
export function toKubeStatus(err: unknown, what?: { kind?: string; name?: string; group?: string }): KubeStatus {
  if (err instanceof KubeError) return statusOf(err.code, err.reason, err.message, err.details ?? what);
  const e: OutpostError = toOutpostError(err);
  const code = ERROR_CODES[e.code as ErrorCode][0];
  const details: StatusDetails | undefined =
    e.code === 'invalid' && Array.isArray(e.details)
      ? {
          ...what,
          causes: (e.details as { path: string; message: string }[]).map((d) => ({
            reason: 'FieldValueInvalid',
            message: d.message,
            field: d.path,
          })),
        }
      : what;
  return statusOf(code, REASONS[code] ?? 'Unknown', e.message, details);
}

export const notFound = (resource: string, name: string): KubeError =>
  new KubeError(404, 'NotFound', `${resource}.outpost.dev "${name}" not found`, {
    name,
    group: 'outpost.dev',
    kind: resource,
  });

export const methodNotAllowed = (message: string): KubeError => new KubeError(405, 'MethodNotAllowed', message);
