/**
 * @module The hub's TLS material: a private CA and a server certificate it signs, created on first
 * start in DATA/tls/ and renewed when needed; or a chain the user brings (--tls-cert/--tls-key).
 *
 * Tokens pin the CA by its sha256 (docs/security.md). The CA lives 10 years so pins stay valid;
 * the server certificate lives 1 year and is renewed at start when it nears expiry or lacks a
 * requested name, without touching the pin. `certPem` always carries the CA after the leaf,
 * because clients read the pinned CA from the chain the hub presents (sync/pinned-ca.ts).
 */
import { createPrivateKey, webcrypto, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import * as x509 from '@peculiar/x509';
import { createLogger } from '../core/logger.js';
import { certFingerprint, splitPem } from '../sync/pinned-ca.js';

const log = createLogger('hub:tls');

export interface HubTls {
  caPem: string;
  /** Leaf first, then the chain up to and including the CA. */
  certPem: string;
  keyPem: string;
  /** sha256 of the CA certificate's DER, lower-case hex: the pin written into tokens. */
  caFingerprint: string;
}

const DAY = 86_400_000;
const CA_LIFETIME_MS = 3650 * DAY;
const SERVER_LIFETIME_MS = 365 * DAY;
/** Renewed at start this long before expiry; a hub restarted at least monthly never serves an expired cert. */
const RENEW_BEFORE_MS = 30 * DAY;
/**
 * Certificates start a day in the past so an edge whose clock lags still accepts them: an edge
 * 2 h behind never connected with the hour this was. A clock wrong by more is the edge's to fix;
 * it says so in its log and in `outpost edge local status` (sync/client.ts).
 */
const BACKDATE_MS = DAY;
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

// @peculiar/x509 is typed against the DOM's Crypto, which this Node-only project does not load.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** sha256 of the DER of the (first) certificate in `pem`, lower-case hex, 64 characters. */
export function caFingerprint(pem: string): string {
  return certFingerprint(pem);
}

const DNS_NAME = /^(\*\.)?[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

function normalizeHost(h: string): string {
  const bare = h.trim().replace(/^\[(.*)\]$/, '$1');
  return net.isIP(bare) ? bare : bare.toLowerCase().replace(/\.$/, '');
}

/** The names a server certificate must cover: the requested ones plus every local name. */
export function serverHosts(hosts: string[]): string[] {
  const requested = hosts.map(normalizeHost);
  for (const [i, h] of requested.entries()) {
    if (!net.isIP(h) && !DNS_NAME.test(h)) {
      throw new Error(
        `"${hosts[i]}" is not a host name or IP address for the hub's certificate: give the bare name, without scheme, port or path`,
      );
    }
  }
  // The machine's host name is added only if it is usable as a DNS name.
  const local = ['localhost', '127.0.0.1', '::1', normalizeHost(os.hostname())].filter(
    (h) => net.isIP(h) || DNS_NAME.test(h),
  );
  // Listen addresses like 0.0.0.0 are not names anyone connects to.
  return [...new Set([...requested, ...local])].filter((h) => h && h !== '0.0.0.0' && h !== '::');
}

function covers(cert: X509Certificate, host: string): boolean {
  if (net.isIP(host)) return cert.checkIP(host) !== undefined;
  const names = (cert.subjectAltName ?? '')
    .split(', ')
    .filter((s) => s.startsWith('DNS:'))
    .map((s) => s.slice(4).toLowerCase());
  return names.includes(host);
}

/** Whether two SAN entries name the same host (IPv6 has many spellings: ::1 and 0:0:0:0:0:0:0:1). */
function sameHost(a: string, b: string): boolean {
  const fa = net.isIP(a);
  if (fa !== net.isIP(b)) return false;
  if (!fa) return a.toLowerCase() === b.toLowerCase();
  const list = new net.BlockList();
  list.addAddress(a, fa === 6 ? 'ipv6' : 'ipv4');
  return list.check(b, fa === 6 ? 'ipv6' : 'ipv4');
}

function sanNames(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(', ')
    .map((s) => (s.startsWith('DNS:') ? s.slice(4) : s.startsWith('IP Address:') ? s.slice(11) : ''))
    .filter(Boolean);
}

/** Writes `file` whole or not at all, with exactly `mode`. */
export function writeFileAtomic(file: string, data: string, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, data, { mode });
  // writeFileSync's mode is filtered by the umask and ignored for an existing file: set it exactly.
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, file);
}

/** A file's text, or undefined when it does not exist (any other failure names the file). */
export function readIfExists(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read ${file}: check its permissions`, { cause: err });
  }
}

async function exportKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

async function importSigningKey(pem: string): Promise<webcrypto.CryptoKey> {
  const der = createPrivateKey(pem).export({ type: 'pkcs8', format: 'der' });
  return webcrypto.subtle.importKey('pkcs8', der, ALG, false, ['sign']);
}

/** A new hub CA: a self-signed P-256 certificate for 10 years and its key (PKCS#8), both PEM. */
export async function createCa(now = Date.now()): Promise<{ caPem: string; caKeyPem: string }> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    // A timestamp in the name, like k3s, tells CAs of successive installs apart at a glance.
    name: `CN=outpost-hub-ca@${Math.floor(now / 1000)}`,
    keys,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + CA_LIFETIME_MS),
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { caPem: cert.toString('pem') + '\n', caKeyPem: await exportKeyPem(keys.privateKey) };
}

async function createServerCert(
  caPem: string,
  caKeyPem: string,
  hosts: string[],
  now: number,
): Promise<{ certPem: string; keyPem: string }> {
  const ca = new x509.X509Certificate(caPem);
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.create({
    subject: 'CN=outpost-hub',
    issuer: ca.subject,
    notBefore: new Date(now - BACKDATE_MS),
    // Never beyond the CA: a leaf outliving its issuer fails verification anyway.
    notAfter: new Date(Math.min(now + SERVER_LIFETIME_MS, ca.notAfter.getTime())),
    publicKey: keys.publicKey,
    signingKey: await importSigningKey(caKeyPem),
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(
        hosts.map((h) => ({ type: net.isIP(h) ? ('ip' as const) : ('dns' as const), value: h })),
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
    ],
  });
  return { certPem: cert.toString('pem') + '\n' + caPem, keyPem: await exportKeyPem(keys.privateKey) };
}

/** Why the stored server certificate cannot be reused, or null if it can. */
function renewalReason(
  certPem: string | undefined,
  keyPem: string | undefined,
  ca: X509Certificate,
  hosts: string[],
  now: number,
): string | null {
  if (!certPem || !keyPem) return 'no server certificate yet';
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(certPem);
    if (!leaf.checkPrivateKey(createPrivateKey(keyPem))) return 'server.pem and server-key.pem do not match';
  } catch (err) {
    return `server.pem or server-key.pem is unreadable (${(err as Error).message})`;
  }
  if (!leaf.checkIssued(ca) || !leaf.verify(ca.publicKey)) return 'server certificate was not issued by the current CA';
  const expires = Date.parse(leaf.validTo);
  if (expires - now < RENEW_BEFORE_MS) return `server certificate expires ${new Date(expires).toISOString()}`;
  // Issued with a shorter backdate (an older hub): edges whose clock lags would refuse it for a day.
  if (now - Date.parse(leaf.validFrom) < BACKDATE_MS - 60_000)
    return `server certificate starts at ${new Date(leaf.validFrom).toISOString()}, less than a day ago`;
  const missing = hosts.filter((h) => !covers(leaf, h));
  if (missing.length) return `server certificate does not cover ${missing.join(', ')}`;
  return null;
}

/** Where the hub keeps its TLS material in its data directory. */
export function hubTlsFiles(dataDir: string) {
  const dir = path.join(dataDir, 'tls');
  return {
    dir,
    ca: path.join(dir, 'ca.pem'),
    caKey: path.join(dir, 'ca-key.pem'),
    cert: path.join(dir, 'server.pem'),
    key: path.join(dir, 'server-key.pem'),
  };
}

/**
 * Creates or reuses DATA/tls/{ca.pem, ca-key.pem, server.pem, server-key.pem}. A renewed server
 * certificate keeps the names of the previous one, so edges that dial an old name keep working.
 *
 * @example
 * const tls = await ensureHubTls(dataDir, { hosts: ['hub.example.com'] });
 * https.createServer({ cert: tls.certPem, key: tls.keyPem });
 */
export async function ensureHubTls(dataDir: string, opts: { hosts: string[]; now?: number }): Promise<HubTls> {
  const now = opts.now ?? Date.now();
  const hosts = serverHosts(opts.hosts);
  const files = hubTlsFiles(dataDir);
  const dir = files.dir;
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new Error(`cannot create ${dir}: check the data directory and its permissions`, { cause: err });
  }

  // ca.pem is written last, so its presence means the CA is complete; a lone ca-key.pem is
  // the remains of an interrupted first start and is replaced.
  let caPem = readIfExists(files.ca);
  let caKeyPem = caPem === undefined ? undefined : readIfExists(files.caKey);
  if (caPem === undefined) {
    ({ caPem, caKeyPem } = await createCa(now));
    writeFileAtomic(files.caKey, caKeyPem, 0o600);
    writeFileAtomic(files.ca, caPem, 0o644);
    log.info({ fingerprint: caFingerprint(caPem) }, 'created the hub CA');
  }
  let ca: X509Certificate;
  try {
    ca = new X509Certificate(caPem);
  } catch (err) {
    throw new Error(
      `${files.ca} is not a certificate: restore it from a backup, or delete ${dir} to create a new CA (every edge and token then needs re-enrolling)`,
      { cause: err },
    );
  }
  if (Date.parse(ca.validTo) <= now) {
    throw new Error(
      `the hub CA in ${files.ca} expired on ${new Date(ca.validTo).toISOString()}: delete ${dir} to create a new CA, then issue new tokens and re-enroll the edges`,
    );
  }

  let certPem = readIfExists(files.cert);
  let keyPem = readIfExists(files.key);
  const previous = certPem ? safeSans(certPem) : [];
  const reason = renewalReason(certPem, keyPem, ca, hosts, now);
  if (reason) {
    if (caKeyPem === undefined) {
      throw new Error(
        `the server certificate must be renewed (${reason}) but the CA key ${files.caKey} is missing: restore it from a backup, or delete ${dir} to create a new CA (every edge and token then needs re-enrolling)`,
      );
    }
    const names = [...hosts, ...previous.filter((p) => !hosts.some((h) => sameHost(h, p)))];
    ({ certPem, keyPem } = await createServerCert(caPem, caKeyPem, names, now));
    writeFileAtomic(files.key, keyPem, 0o600);
    writeFileAtomic(files.cert, certPem, 0o644);
    log.info({ reason, hosts: names }, 'issued a new server certificate');
  }
  return { caPem, certPem: certPem!, keyPem: keyPem!, caFingerprint: caFingerprint(caPem) };
}

function safeSans(pem: string): string[] {
  try {
    return sanNames(new X509Certificate(pem));
  } catch {
    return [];
  }
}

function readRequired(file: string, flag: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${flag} ${file}: check the path and its permissions`, { cause: err });
  }
}

/**
 * A certificate chain and key brought by the user. The pin is the CA file's certificate if one is
 * given (and it is appended to the presented chain so clients can find it), else the top
 * certificate of the chain file.
 */
export function loadUserTls(certFile: string, keyFile: string, caFile?: string): HubTls {
  const chain = splitPem(readRequired(certFile, '--tls-cert'));
  if (!chain.length) throw new Error(`--tls-cert ${certFile} holds no PEM certificate`);
  const keyPem = readRequired(keyFile, '--tls-key');
  try {
    if (!new X509Certificate(chain[0]).checkPrivateKey(createPrivateKey(keyPem))) {
      throw new Error('the key does not belong to the first certificate');
    }
  } catch (err) {
    throw new Error(
      `--tls-key ${keyFile} does not match the first certificate of --tls-cert ${certFile}: the leaf certificate must come first`,
      { cause: err },
    );
  }
  let caPem = chain[chain.length - 1];
  let certPem = chain.join('');
  if (caFile) {
    const caChain = splitPem(readRequired(caFile, '--tls-ca'));
    if (!caChain.length) throw new Error(`--tls-ca ${caFile} holds no PEM certificate`);
    caPem = caChain[0];
    const ca = new X509Certificate(caPem);
    const top = new X509Certificate(chain[chain.length - 1]);
    const fp = caFingerprint(caPem);
    if (!chain.some((c) => caFingerprint(c) === fp)) {
      if (!top.checkIssued(ca) || !top.verify(ca.publicKey)) {
        throw new Error(
          `--tls-cert ${certFile} does not chain to --tls-ca ${caFile}: its last certificate (${top.subject}) was not issued by ${ca.subject}`,
        );
      }
      certPem += caPem;
    }
  }
  const pinned = new X509Certificate(caPem);
  if (!pinned.checkIssued(pinned) || !pinned.verify(pinned.publicKey)) {
    // Node 20 accepts a trust anchor only if it is a self-signed root (no partial chains).
    log.warn(
      { subject: pinned.subject },
      `the pinned certificate (${pinned.subject}) is not a self-signed root: edges and the CLI will fail to verify the hub with it; pass the root CA with --tls-ca`,
    );
  }
  return { caPem, certPem, keyPem, caFingerprint: caFingerprint(caPem) };
}

/**
 * The TLS the hub serves with: none with `--insecure-http`, the user's chain with `--tls-cert` and
 * `--tls-key`, else its own CA's certificate, naming the `--host` names and the address it listens
 * on unless that is every interface.
 */
export async function hubTls(o: {
  dataDir: string;
  insecureHttp?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  hosts?: string[];
  listenHost: string;
}): Promise<HubTls | undefined> {
  if (o.insecureHttp) return undefined;
  const host = o.listenHost;
  return o.tlsCert && o.tlsKey
    ? loadUserTls(o.tlsCert, o.tlsKey, o.tlsCa)
    : await ensureHubTls(o.dataDir, {
        hosts: [...(o.hosts ?? []), ...(host !== '0.0.0.0' && host !== '::' ? [host] : [])],
      });
}
