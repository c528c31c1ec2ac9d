/**
 * @module The hub as an OpenID Connect relying party (`outpost hub --oidc-issuer`): discovery of
 * the issuer, the authorization code flow with PKCE (the web UI), the device authorization flow
 * (the CLI: the hub runs it with its client credentials, so the CLI never holds the client
 * secret), refresh, and the check of an ID token presented to the hub. Every token check
 * (issuer, audience, expiry, signature against the issuer's JWKS, nonce, state) is openid-client's
 * and jose's; this file only says which checks to ask for and turns claims into a `Person`.
 */
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import * as oidc from 'openid-client';
import { OutpostError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import type { Person } from './memberships.js';

const log = createLogger('hub:oidc');

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The claim of the ID token that lists the person's groups (default `groups`). */
  groupsClaim: string;
  /** Asked of the provider at sign-in (default: openid email profile groups). */
  scopes: string;
}

export const DEFAULT_OIDC_SCOPES = 'openid email profile groups';

/** A code flow in progress: what the callback must find again (hub/auth/people.ts keeps it). */
export interface CodeFlowStart {
  url: string;
  state: string;
  nonce: string;
  verifier: string;
}

/** The provider's answer to a sign-in or a refresh: who, and the refresh token to use next. */
export interface SignedIn {
  person: Person;
  refreshToken: string | null;
}

/** Plain HTTP only to a provider on this machine (tests, a provider beside the hub): never across a network. */
function loopback(url: URL): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

export class OidcRelyingParty {
  private config: Promise<oidc.Configuration> | undefined;
  private jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  private readonly issuerUrl: URL;

  constructor(readonly settings: OidcSettings) {
    try {
      this.issuerUrl = new URL(settings.issuer);
    } catch {
      throw new OutpostError(
        'invalid',
        `--oidc-issuer ${settings.issuer} is not a URL: give the issuer's https:// URL`,
      );
    }
    if (this.issuerUrl.protocol !== 'https:' && !(this.issuerUrl.protocol === 'http:' && loopback(this.issuerUrl)))
      throw new OutpostError(
        'invalid',
        `--oidc-issuer ${settings.issuer}: the issuer must be https:// (plain http only on the loopback address)`,
      );
  }

  /** The issuer's configuration, discovered once (again after a failure: the provider may have been away). */
  configuration(): Promise<oidc.Configuration> {
    this.config ??= oidc
      .discovery(
        this.issuerUrl,
        this.settings.clientId,
        { client_secret: this.settings.clientSecret },
        oidc.ClientSecretBasic(this.settings.clientSecret),
        this.issuerUrl.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {},
      )
      .catch((err: unknown) => {
        this.config = undefined;
        log.warn({ err, issuer: this.settings.issuer }, 'OIDC discovery failed');
        throw new OutpostError(
          'unavailable',
          `the identity provider ${this.settings.issuer} cannot be reached or its discovery document is not valid: ${(err as Error).message}`,
        );
      });
    return this.config;
  }

  /** Where to send the browser to sign in (code flow with PKCE S256, state and nonce). */
  async startCodeFlow(redirectUri: string): Promise<CodeFlowStart> {
    const config = await this.configuration();
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: this.settings.scopes,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url: url.href, state, nonce, verifier };
  }

  /** The code flow's callback: the code traded for tokens, state, nonce and the ID token checked. */
  async finishCodeFlow(
    callbackUrl: URL,
    start: Pick<CodeFlowStart, 'state' | 'nonce' | 'verifier'>,
  ): Promise<SignedIn> {
    const config = await this.configuration();
    const tokens = await oidc
      .authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: start.verifier,
        expectedState: start.state,
        expectedNonce: start.nonce,
        idTokenExpected: true,
      })
      .catch((err: unknown) => {
        throw refused('the sign-in', err);
      });
    return this.signedIn(tokens);
  }

  async startDeviceFlow(): Promise<oidc.DeviceAuthorizationResponse> {
    const config = await this.configuration();
    return oidc.initiateDeviceAuthorization(config, { scope: this.settings.scopes }).catch((err: unknown) => {
      throw refused('the device sign-in', err);
    });
  }

  /** Polls the provider until the person approved the device sign-in (or it expired, or `signal` aborted). */
  async finishDeviceFlow(start: oidc.DeviceAuthorizationResponse, signal: AbortSignal): Promise<SignedIn> {
    const config = await this.configuration();
    const tokens = await oidc.pollDeviceAuthorizationGrant(config, start, undefined, { signal });
    return this.signedIn(tokens);
  }

  /** A refresh: the person as the provider knows them now; throws when the provider refuses. */
  async refresh(refreshToken: string, subject: string): Promise<SignedIn> {
    const config = await this.configuration();
    const tokens = await oidc.refreshTokenGrant(config, refreshToken, { scope: this.settings.scopes });
    const claims: Record<string, unknown> | undefined =
      tokens.claims() ?? (await oidc.fetchUserInfo(config, tokens.access_token, subject));
    if (claims.sub !== subject)
      throw new OutpostError('unauthorized', 'the identity provider answered the refresh for another subject');
    return { person: this.personOf(claims), refreshToken: tokens.refresh_token ?? refreshToken };
  }

  /** Asks the provider to revoke a refresh token (at logout); throws when it cannot. */
  async revoke(refreshToken: string): Promise<void> {
    const config = await this.configuration();
    await oidc.tokenRevocation(config, refreshToken, { token_type_hint: 'refresh_token' });
  }

  /**
   * The person of an ID token the caller already holds (from this provider, for this client):
   * issuer, audience, expiry and signature against the issuer's JWKS checked by jose. Throws 401
   * naming what is wrong.
   */
  async verifyIdToken(idToken: string): Promise<Person> {
    const config = await this.configuration();
    const meta = config.serverMetadata();
    if (!meta.jwks_uri)
      throw new OutpostError('unavailable', `the identity provider ${meta.issuer} publishes no jwks_uri`);
    this.jwks ??= createRemoteJWKSet(new URL(meta.jwks_uri));
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(idToken, this.jwks, {
        issuer: meta.issuer,
        audience: this.settings.clientId,
        requiredClaims: ['sub', 'exp', 'iat'],
      }));
    } catch (err) {
      throw new OutpostError(
        'unauthorized',
        `the ID token is not accepted (${(err as Error).message}): sign in again with the identity provider ${meta.issuer} for client ${this.settings.clientId}`,
      );
    }
    return this.personOf(payload);
  }

  private signedIn(tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers): SignedIn {
    const claims = tokens.claims();
    if (!claims) throw new OutpostError('unauthorized', 'the identity provider returned no ID token');
    return { person: this.personOf(claims), refreshToken: tokens.refresh_token ?? null };
  }

  personOf(claims: Record<string, unknown>): Person {
    const groups = claims[this.settings.groupsClaim];
    return {
      subject: String(claims.sub),
      email: typeof claims.email === 'string' && claims.email_verified === true ? claims.email : null,
      groups: Array.isArray(groups) ? groups.filter((g): g is string => typeof g === 'string') : [],
    };
  }
}

function refused(what: string, err: unknown): OutpostError {
  return new OutpostError('unauthorized', `${what} was refused: ${(err as Error).message}; sign in again`);
}
