/**
 * @module How a tunnel stream fails (sync/tunnel.ts): `TunnelError`, with a code both ends
 * understand (the body of a RESET frame carries it across), and what each code means to the hub's
 * HTTP client.
 */
import { OutpostError, type ConvertsToOutpostError, type ErrorCode } from '../core/errors.js';

export type TunnelErrorCode =
  | 'refused'
  | 'not_found'
  | 'forbidden'
  | 'unavailable'
  | 'deadline'
  | 'budget'
  | 'disconnected'
  | 'protocol'
  | 'aborted'
  | 'internal';

/** What each tunnel code means to the hub's HTTP client (core/errors.ts ERROR_CODES). */
const CLIENT_CODES: Partial<Record<TunnelErrorCode, ErrorCode>> = {
  not_found: 'not_found',
  forbidden: 'forbidden',
  refused: 'bad_request',
  unavailable: 'bad_gateway',
  disconnected: 'edge_disconnected',
  deadline: 'deadline',
  budget: 'too_large',
};

/** A stream that ended abnormally, with a code both ends understand. */
export class TunnelError extends Error implements ConvertsToOutpostError {
  constructor(
    readonly code: TunnelErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'TunnelError';
  }

  /** The error a client of the tunnel is told (protocol, aborted and internal: bad_gateway). */
  toOutpostError(): OutpostError {
    return new OutpostError(CLIENT_CODES[this.code] ?? 'bad_gateway', this.message, { cause: this });
  }
}
