/**
 * @module The CLI's failover between the URLs of a hub's replicas (`outpost login --hub A,B`;
 * docs/cli.md, "Several hub URLs"): a request that cannot reach one URL goes to the next, and the
 * CLI says which one answered. What may go again: a request that never reached a hub (no
 * connection could be made: refused, unreachable, no name, no connection in time), whatever its
 * method; one that may have reached it (a connection reset, no answer in time, a 503 answer) only
 * when sending it twice does no harm (GET, HEAD, PUT, DELETE). A POST that may have been carried
 * out is never sent again: the user is told to check and retry. A certificate or protocol error
 * is no reason to move on: it says the URL or the CA is wrong, and the user fixes it.
 */
import { CliError } from './errors.js';

/** With several URLs, a hub that gives no connection within this long is taken for down. */
export const CONNECT_TIMEOUT_MS = 10_000;

/** Errors of the network below TLS and HTTP: the hub is down, or unreachable from here. */
export const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
]);

/** Requests that do the same once or twice. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);

/** One attempt at one URL failed: the error to show, and what decides whether the next URL may be tried. */
export class AttemptFailed extends Error {
  constructor(
    readonly error: CliError,
    /** A connection was made: the request may have reached the hub. */
    readonly reached: boolean,
    /** The errno code of a failure below HTTP. */
    readonly code?: string,
    /** The HTTP status, when the hub answered. */
    readonly status?: number,
  ) {
    super(error.message);
    this.name = 'AttemptFailed';
  }

  /** In a few words, for the note that names the URLs tried. */
  get short(): string {
    return this.status !== undefined ? `answered ${this.status}` : `did not answer (${this.code ?? 'error'})`;
  }
}

/** Whether the request may go to the next URL after `f` (module comment). */
export function mayTryNext(method: string, f: AttemptFailed): boolean {
  if (f.status !== undefined) return f.status === 503 && IDEMPOTENT.has(method);
  if (!f.code || !NETWORK_CODES.has(f.code)) return false;
  return !f.reached || IDEMPOTENT.has(method);
}

/**
 * Runs `attempt` on the URLs from `start` on, in order, until one answers or the failure may not
 * go further. Resolves with the answer and the index of the URL that gave it; `note` is told which
 * URLs failed and which one answered when it was not the first tried.
 */
export async function withFailover<T>(
  hubs: readonly string[],
  start: number,
  method: string,
  attempt: (index: number) => Promise<T>,
  note: (message: string) => void,
): Promise<{ value: T; index: number }> {
  const failed: { hub: string; f: AttemptFailed }[] = [];
  for (let i = 0; i < hubs.length; i++) {
    const index = (start + i) % hubs.length;
    try {
      const value = await attempt(index);
      if (failed.length)
        note(`${failed.map((x) => `hub ${x.hub} ${x.f.short}`).join('; ')}: answered by ${hubs[index]}`);
      return { value, index };
    } catch (err) {
      if (!(err instanceof AttemptFailed)) throw err;
      failed.push({ hub: hubs[index]!, f: err });
      if (!mayTryNext(method, err)) throw hubs.length > 1 ? notRetried(method, err, failed.length) : err.error;
    }
  }
  // Every URL failed in a way that may go on: one URL, or a hub that answered busy, says so itself.
  const busy = failed.find((x) => x.f.status !== undefined);
  if (hubs.length === 1 || busy) throw (busy ?? failed[0]!).f.error;
  throw new CliError(
    `cannot reach the hub at any of its ${hubs.length} URLs (${failed.map((x) => `${x.hub}: ${x.f.short}`).join('; ')}): are they running? (outpost get replicas, once one answers)`,
    { cause: failed[failed.length - 1]?.f.error },
  );
}

/** The error of an attempt after which the next URL was not tried, saying why when that matters. */
function notRetried(method: string, f: AttemptFailed, tried: number): CliError {
  const mayHaveActed =
    (f.status === 503 || (f.reached && f.code && NETWORK_CODES.has(f.code))) && !IDEMPOTENT.has(method);
  if (!mayHaveActed) return f.error;
  return new CliError(
    `${f.error.message}; not sent to the next hub URL${tried > 1 ? ' either' : ''}: a ${method} that may have reached a hub is never sent twice (check whether it took effect, then retry)`,
    { cause: f.error },
  );
}
