/**
 * @module Sign-ins in progress with the identity provider, each ending in a hub session
 * (people.ts): the web UI's code flow (its state, nonce and PKCE verifier kept here under the
 * state, which the browser also holds in a cookie: the callback must bring both), the CLI's device
 * flow (the hub polls the provider; the CLI polls the hub with a handle only it knows), and an ID
 * token the caller already holds. Kept in this process's memory for OIDC_SIGN_IN_TTL_MS: behind a
 * load balancer over hub replicas, a sign-in must come back to the replica it started on (sticky
 * sessions), as docs/security.md says; the sessions themselves are in the database.
 */
import crypto from 'node:crypto';
import { OIDC_SIGN_IN_TTL_MS } from '../../core/durations.js';
import { OutpostError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import type { OidcRelyingParty } from './oidc.js';
import type { NewSession, PeopleSessions } from './people.js';

const log = createLogger('hub:oidc');

/**
 * Sign-ins in progress of each flow a hub keeps at most: anyone may start one (no token), and a
 * device sign-in polls the provider until it expires, so without a bound a flood would hold the
 * hub's memory and make it poll the provider on the flooder's behalf.
 */
export const MAX_SIGN_INS_IN_PROGRESS = 512;

function tooMany(what: string): OutpostError {
  return new OutpostError(
    'too_many_requests',
    `${MAX_SIGN_INS_IN_PROGRESS} ${what} sign-ins are in progress on this hub: try again in a few minutes (unfinished ones expire after 10 min)`,
  );
}

interface CodeFlow {
  nonce: string;
  verifier: string;
  project: string | undefined;
  expiresAt: number;
}

type DeviceFlow =
  | { state: 'pending'; expiresAt: number; abort: AbortController }
  | { state: 'done'; expiresAt: number; session: NewSession }
  | { state: 'failed'; expiresAt: number; error: OutpostError };

export interface DeviceStart {
  handle: string;
  verificationUri: string;
  verificationUriComplete?: string;
  userCode: string;
  expiresIn: number;
  interval: number;
}

export type DevicePoll = { status: 'pending' } | ({ status: 'done' } & NewSession);

export class OidcSignIn {
  private readonly codes = new Map<string, CodeFlow>();
  private readonly devices = new Map<string, DeviceFlow>();

  constructor(
    private readonly rp: OidcRelyingParty,
    private readonly sessions: PeopleSessions,
  ) {}

  /** Starts a browser sign-in: where to send the browser, and the state for its cookie. */
  async startCode(
    redirectUri: string,
    project: string | undefined,
    now = Date.now(),
  ): Promise<{ url: string; state: string }> {
    this.sweep(now);
    if (this.codes.size >= MAX_SIGN_INS_IN_PROGRESS) throw tooMany('browser');
    const s = await this.rp.startCodeFlow(redirectUri);
    this.codes.set(s.state, { nonce: s.nonce, verifier: s.verifier, project, expiresAt: now + OIDC_SIGN_IN_TTL_MS });
    return { url: s.url, state: s.state };
  }

  /**
   * The provider sent the browser back: `cookieState` is what the browser's cookie holds; it must
   * be the state of the URL and of a sign-in this hub started (once: it is forgotten here).
   */
  async finishCode(callbackUrl: URL, cookieState: string | undefined, now = Date.now()): Promise<NewSession> {
    const state = callbackUrl.searchParams.get('state') ?? '';
    const flow = this.codes.get(state);
    this.codes.delete(state);
    if (!flow || flow.expiresAt <= now || !cookieState || !same(cookieState, state))
      throw new OutpostError(
        'unauthorized',
        'this sign-in is unknown, expired or was started in another browser (the state does not match): sign in again',
      );
    const error = callbackUrl.searchParams.get('error');
    if (error)
      throw new OutpostError(
        'unauthorized',
        `the identity provider refused the sign-in: ${error}${callbackUrl.searchParams.get('error_description') ? ` (${callbackUrl.searchParams.get('error_description')})` : ''}`,
      );
    const signed = await this.rp.finishCodeFlow(callbackUrl, { state, nonce: flow.nonce, verifier: flow.verifier });
    return this.sessions.signIn(signed, flow.project);
  }

  /** Starts a device sign-in (the CLI's): the provider's code and URL for the person, and the CLI's handle. */
  async startDevice(project: string | undefined, now = Date.now()): Promise<DeviceStart> {
    this.sweep(now);
    if (this.devices.size >= MAX_SIGN_INS_IN_PROGRESS) throw tooMany('device');
    const d = await this.rp.startDeviceFlow();
    const handle = crypto.randomBytes(32).toString('base64url');
    const abort = new AbortController();
    const expiresAt = now + Math.min(d.expires_in * 1000, OIDC_SIGN_IN_TTL_MS);
    this.devices.set(handle, { state: 'pending', expiresAt, abort });
    const timer = setTimeout(() => abort.abort(), expiresAt - now);
    timer.unref();
    this.rp
      .finishDeviceFlow(d, abort.signal)
      .then((signed) => this.sessions.signIn(signed, project))
      .then(
        (session) => this.devices.set(handle, { state: 'done', expiresAt, session }),
        (err: unknown) => {
          const error =
            err instanceof OutpostError
              ? err
              : new OutpostError(
                  'unauthorized',
                  `the device sign-in did not complete: ${(err as Error).message}; run \`outpost login --oidc\` again`,
                );
          log.info({ err }, 'a device sign-in ended without a session');
          this.devices.set(handle, { state: 'failed', expiresAt, error });
        },
      )
      .finally(() => clearTimeout(timer));
    return {
      handle,
      verificationUri: d.verification_uri,
      ...(d.verification_uri_complete ? { verificationUriComplete: d.verification_uri_complete } : {}),
      userCode: d.user_code,
      expiresIn: d.expires_in,
      interval: d.interval ?? 5,
    };
  }

  /** The CLI asks whether the person approved: pending, or the session (handed out once). */
  pollDevice(handle: string, now = Date.now()): DevicePoll {
    const d = this.devices.get(handle);
    if (!d || d.expiresAt <= now)
      throw new OutpostError(
        'unauthorized',
        'this device sign-in is unknown or expired: run `outpost login --oidc` again',
      );
    if (d.state === 'pending') return { status: 'pending' };
    this.devices.delete(handle);
    if (d.state === 'failed') throw d.error;
    return { status: 'done', ...d.session };
  }

  /** A session for the person of an ID token the caller holds (checked: oidc.ts verifyIdToken). */
  async exchangeIdToken(idToken: string, project: string | undefined): Promise<NewSession> {
    const person = await this.rp.verifyIdToken(idToken);
    return this.sessions.signIn({ person, refreshToken: null }, project);
  }

  /** Aborts the device polls in progress (the hub stops). */
  close(): void {
    for (const d of this.devices.values()) if (d.state === 'pending') d.abort.abort();
    this.devices.clear();
    this.codes.clear();
  }

  private sweep(now: number): void {
    for (const [k, v] of this.codes) if (v.expiresAt <= now) this.codes.delete(k);
    for (const [k, v] of this.devices)
      if (v.expiresAt <= now) {
        if (v.state === 'pending') v.abort.abort();
        this.devices.delete(k);
      }
  }
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}
