/**
 * @module What the CLI says when a request to the hub fails (docs/cli.md, "Exit codes"): the hub's
 * own words for an HTTP error, then what to do; advice for a failure below HTTP (the hub down, a
 * certificate the pinned CA does not vouch for, the wrong protocol).
 */
import { CliError } from './errors.js';
import { NETWORK_CODES } from './failover.js';

/** The object a request is about, so errors can name it (`placement/eu`) and the command to run. */
export interface RequestSubject {
  /** Lower-case singular, as typed on the command line: `placement`. */
  kind: string;
  name?: string;
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

/** Turns a failure below HTTP (refused connection, bad certificate, wrong protocol) into advice. */
export function transportError(hub: string, err: NodeJS.ErrnoException): CliError {
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
