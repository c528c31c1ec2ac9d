/**
 * @module Client side of the hub's trust model (docs/security.md), shared by the edge agent and
 * the CLI: the token formats, and fetching the hub's CA certificate pinned by a token.
 *
 * Like k3s, every token carries the sha256 of the hub's CA certificate. A client that has nothing
 * but the token and the hub's URL reads the certificates the hub presents WITHOUT verifying them,
 * keeps the one whose fingerprint equals the pin, and from then on connects with `{ ca: pem }` and
 * normal verification. The unverified read is safe: it only yields a public certificate that is
 * fully determined by the pin; a man in the middle can present it too, but cannot complete the
 * verified handshake that follows without the hub's key.
 *
 * @example
 * const t = parseToken(joinToken);
 * const ca = t?.caFingerprint ? await fetchPinnedCa('https://hub.example:8443', t.caFingerprint) : undefined;
 * new SyncClient({ url: 'wss://hub.example:8443/api/v1/sync', ca, ... });
 */
import { createHash, X509Certificate } from 'node:crypto';
import net from 'node:net';
import tls, { type DetailedPeerCertificate, type PeerCertificate } from 'node:tls';
import { isValidName } from '../core/ids.js';

export type TokenKind = 'api' | 'join' | 'edge';

/** Version prefixes of the three token kinds; the digit lets a later format coexist. */
export const TOKEN_PREFIX: Record<TokenKind, string> = { api: 'opt1', join: 'opj1', edge: 'ope1' };
/** Written in place of the fingerprint when the hub serves plain HTTP (--insecure-http). */
export const NO_FINGERPRINT = 'none';

export interface ParsedToken {
  kind: TokenKind;
  /** sha256 of the hub's CA (api and join tokens of a TLS hub). */
  caFingerprint?: string;
  /** The edge an edge credential belongs to. */
  edge?: string;
  id: string;
  secret: string;
}

const ID = /^[0-9a-f]{16}$/;
/** 32 random bytes in base64url without padding. */
const SECRET = /^[A-Za-z0-9_-]{43}$/;
const FINGERPRINT = /^[0-9a-f]{64}$/;

/** Reads a token's parts (surrounding whitespace allowed, e.g. from a file); null if it is not one. */
export function parseToken(token: string): ParsedToken | null {
  const parts = token.trim().split('.');
  if (parts.length !== 4) return null;
  const [prefix, middle, id, secret] = parts;
  const kind = (Object.keys(TOKEN_PREFIX) as TokenKind[]).find((k) => TOKEN_PREFIX[k] === prefix);
  if (!kind || !ID.test(id) || !SECRET.test(secret)) return null;
  if (kind === 'edge') return isValidName(middle) ? { kind, edge: middle, id, secret } : null;
  if (middle === NO_FINGERPRINT) return { kind, id, secret };
  return FINGERPRINT.test(middle) ? { kind, caFingerprint: middle, id, secret } : null;
}

/** Builds `<prefix>.<middle>.<id>.<secret>`; `middle` is the CA pin (or `none`) or the edge name. */
export function formatToken(kind: TokenKind, middle: string, id: string, secret: string): string {
  const token = `${TOKEN_PREFIX[kind]}.${middle}.${id}.${secret}`;
  if (!parseToken(token))
    throw new Error(
      `cannot build the ${kind} token from "${middle}": expected a sha256 fingerprint, "none" or an edge name`,
    );
  return token;
}

/** sha256 of the DER of the first certificate in `pem`, lower-case hex. */
export function certFingerprint(pem: string | Buffer): string {
  let der: Buffer;
  try {
    der = new X509Certificate(pem).raw;
  } catch (err) {
    throw new Error('not a PEM or DER certificate', { cause: err });
  }
  return createHash('sha256').update(der).digest('hex');
}

/** The certificates of one PEM bundle, each as its own PEM block, in file order. */
export function splitPem(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)?.map((b) => `${b}\n`) ?? [];
}

function normalizeFingerprint(fp: string): string {
  const n = fp.trim().toLowerCase().replace(/:/g, '');
  if (!FINGERPRINT.test(n))
    throw new Error(`invalid CA fingerprint "${fp}": expected 64 hex characters (sha256), as in the token`);
  return n;
}

/** Host and port of an https:// or wss:// hub URL (the CA can only be read over TLS). */
export function tlsEndpoint(hubUrl: string): { host: string; port: number } {
  let u: URL;
  try {
    u = new URL(hubUrl);
  } catch (err) {
    throw new Error(`invalid hub URL "${hubUrl}": use https://HOST:PORT`, { cause: err });
  }
  if (u.protocol !== 'https:' && u.protocol !== 'wss:') {
    throw new Error(
      `the hub URL ${hubUrl} is not https://: a pinned CA can only be checked over TLS (use https://HOST:PORT)`,
    );
  }
  // URL keeps IPv6 literals in brackets; tls.connect wants the bare address.
  return { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: u.port ? Number(u.port) : 443 };
}

/** Reads the chain the server presents, leaf first, with verification off (see the module header). */
async function presentedChain(host: string, port: number, timeoutMs: number): Promise<Buffer[]> {
  const socket = tls.connect({
    host,
    port,
    // SNI must not carry an IP address (RFC 6066); a hub reached by IP gets no SNI.
    servername: net.isIP(host) ? undefined : host,
    rejectUnauthorized: false,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no TLS handshake within ${timeoutMs} ms`)), timeoutMs);
      socket.once('secureConnect', () => (clearTimeout(timer), resolve()));
      socket.once('error', (err) => (clearTimeout(timer), reject(err)));
    });
    const chain: Buffer[] = [];
    let cert: PeerCertificate | undefined = socket.getPeerCertificate(true);
    // Node links each certificate to its issuer among those presented; a self-signed root links
    // to itself, hence the guard against revisiting.
    const seen = new Set<PeerCertificate>();
    while (cert?.raw && !seen.has(cert)) {
      seen.add(cert);
      chain.push(cert.raw);
      cert = (cert as DetailedPeerCertificate).issuerCertificate;
    }
    return chain;
  } finally {
    socket.destroy();
  }
}

/**
 * Connects to the hub, finds the presented certificate whose sha256 equals `fingerprint` and
 * returns it as PEM, to be passed as `ca` to every later (verified) connection.
 */
export async function fetchPinnedCa(
  hubUrl: string,
  fingerprint: string,
  opts: { timeoutMs?: number } = {},
): Promise<string> {
  const pin = normalizeFingerprint(fingerprint);
  const { host, port } = tlsEndpoint(hubUrl);
  let chain: Buffer[];
  try {
    chain = await presentedChain(host, port, opts.timeoutMs ?? 10_000);
  } catch (err) {
    throw new Error(
      `cannot read the TLS certificates of the hub at ${hubUrl}: check the URL and that the hub is running with TLS`,
      { cause: err },
    );
  }
  const match = chain.find((der) => createHash('sha256').update(der).digest('hex') === pin);
  if (!match) {
    const top = chain.length
      ? createHash('sha256')
          .update(chain[chain.length - 1])
          .digest('hex')
      : '(no certificate)';
    throw new Error(
      `the hub at ${hubUrl} presented a CA with fingerprint ${top}, but the token pins ${pin}: ` +
        'the token is for another hub, or someone is intercepting the connection',
    );
  }
  return new X509Certificate(match).toString();
}
