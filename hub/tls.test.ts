import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { captureLogs } from '../core/logger.js';
import { tempDir } from '../test/helpers.js';
import { splitPem } from '../sync/pinned-ca.js';
import { caFingerprint, ensureHubTls, loadUserTls } from './tls.js';

const DAY = 86_400_000;
const dirs: string[] = [];
function dir(): string {
  const d = tempDir('outpost-tls-');
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function mode(file: string): number {
  return fs.statSync(file).mode & 0o777;
}
function read(d: string, name: string): string {
  return fs.readFileSync(path.join(d, 'tls', name), 'utf8');
}
function leafOf(certPem: string): X509Certificate {
  return new X509Certificate(splitPem(certPem)[0]);
}

describe('ensureHubTls', () => {
  it('creates a CA and a server certificate covering every local name, keys readable by the owner only', async () => {
    const d = dir();
    const t = await ensureHubTls(d, { hosts: ['Hub.Example.com', '10.1.2.3', '0.0.0.0'] });
    expect(mode(path.join(d, 'tls', 'ca-key.pem'))).toBe(0o600);
    expect(mode(path.join(d, 'tls', 'server-key.pem'))).toBe(0o600);
    expect(read(d, 'ca.pem')).toBe(t.caPem);
    expect(read(d, 'server.pem')).toBe(t.certPem);

    const ca = new X509Certificate(t.caPem);
    const leaf = leafOf(t.certPem);
    expect(ca.ca).toBe(true);
    expect(leaf.ca).toBe(false);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.checkPrivateKey(createPrivateKey(t.keyPem))).toBe(true);
    // The presented chain carries the CA so clients can read the pinned CA from the handshake.
    expect(splitPem(t.certPem).map((c) => new X509Certificate(c).fingerprint256)).toContain(ca.fingerprint256);

    for (const h of ['hub.example.com', 'localhost', os.hostname().toLowerCase()])
      expect(leaf.checkHost(h, { subject: 'never' })).toBe(h);
    for (const ip of ['10.1.2.3', '127.0.0.1', '::1']) expect(leaf.checkIP(ip)).toBe(ip);
    expect(leaf.checkIP('0.0.0.0')).toBeUndefined();

    const caYears = (Date.parse(ca.validTo) - Date.now()) / (365 * DAY);
    expect(caYears).toBeGreaterThan(9.9);
    const leafDays = (Date.parse(leaf.validTo) - Date.now()) / DAY;
    expect(leafDays).toBeGreaterThan(360);
    expect(leafDays).toBeLessThan(367);
  });

  it('refuses a host given as a URL or with a port', async () => {
    await expect(ensureHubTls(dir(), { hosts: ['https://hub.example.com'] })).rejects.toThrow(
      /"https:\/\/hub.example.com" is not a host name or IP address/,
    );
    await expect(ensureHubTls(dir(), { hosts: ['hub.example.com:8443'] })).rejects.toThrow(
      /without scheme, port or path/,
    );
  });

  it('fingerprint is the sha256 of the CA DER in lower-case hex', async () => {
    const t = await ensureHubTls(dir(), { hosts: [] });
    const viaNode = new X509Certificate(t.caPem).fingerprint256.replace(/:/g, '').toLowerCase();
    expect(t.caFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(t.caFingerprint).toBe(viaNode);
    expect(caFingerprint(t.caPem)).toBe(createHash('sha256').update(new X509Certificate(t.caPem).raw).digest('hex'));
  });

  it('reuses everything on a later start', async () => {
    const d = dir();
    const first = await ensureHubTls(d, { hosts: ['hub.example.com'] });
    const caKey = read(d, 'ca-key.pem');
    const second = await ensureHubTls(d, { hosts: ['hub.example.com'] });
    expect(second).toEqual(first);
    expect(read(d, 'ca-key.pem')).toBe(caKey);
  });

  it('renews the server certificate within 30 days of expiry, keeping the CA and its pin', async () => {
    const d = dir();
    const first = await ensureHubTls(d, { hosts: ['hub.example.com'] });
    const notYet = await ensureHubTls(d, { hosts: ['hub.example.com'], now: Date.now() + 300 * DAY });
    expect(notYet.certPem).toBe(first.certPem);

    const later = Date.now() + 340 * DAY;
    const renewed = await ensureHubTls(d, { hosts: ['hub.example.com'], now: later });
    expect(renewed.caPem).toBe(first.caPem);
    expect(renewed.caFingerprint).toBe(first.caFingerprint);
    expect(renewed.certPem).not.toBe(first.certPem);
    expect(renewed.keyPem).not.toBe(first.keyPem);
    expect(Date.parse(leafOf(renewed.certPem).validTo)).toBeGreaterThan(later + 360 * DAY);
    expect(mode(path.join(d, 'tls', 'server-key.pem'))).toBe(0o600);
  });

  it('renews when a requested name is missing, and keeps the names of the previous certificate', async () => {
    const d = dir();
    const first = await ensureHubTls(d, { hosts: ['old.example.com'] });
    const renewed = await ensureHubTls(d, { hosts: ['new.example.com', '192.168.7.7'] });
    expect(renewed.certPem).not.toBe(first.certPem);
    const leaf = leafOf(renewed.certPem);
    expect(leaf.checkHost('new.example.com', { subject: 'never' })).toBe('new.example.com');
    expect(leaf.checkHost('old.example.com', { subject: 'never' })).toBe('old.example.com');
    expect(leaf.checkIP('192.168.7.7')).toBe('192.168.7.7');
    // ::1 and its long spelling from the previous certificate are one entry, not two.
    expect(leaf.subjectAltName!.split(', ').filter((s) => s.startsWith('IP Address:0:0:0:0:0:0:0:1'))).toHaveLength(1);
  });

  it('re-issues the server certificate when the CA was replaced', async () => {
    const d = dir();
    const first = await ensureHubTls(d, { hosts: [] });
    fs.rmSync(path.join(d, 'tls', 'ca.pem'));
    const next = await ensureHubTls(d, { hosts: [] });
    expect(next.caFingerprint).not.toBe(first.caFingerprint);
    expect(leafOf(next.certPem).verify(new X509Certificate(next.caPem).publicKey)).toBe(true);
  });

  it('refuses to renew without the CA key, naming the file', async () => {
    const d = dir();
    await ensureHubTls(d, { hosts: [] });
    fs.rmSync(path.join(d, 'tls', 'ca-key.pem'));
    // Reusing a valid server certificate does not need the CA key.
    await expect(ensureHubTls(d, { hosts: [] })).resolves.toBeTruthy();
    await expect(ensureHubTls(d, { hosts: ['new.example.com'] })).rejects.toThrow(/CA key .*ca-key\.pem is missing/);
  });
});

describe('loadUserTls', () => {
  async function userFiles(): Promise<{
    d: string;
    hub: Awaited<ReturnType<typeof ensureHubTls>>;
    leafFile: string;
    chainFile: string;
    keyFile: string;
    caFile: string;
  }> {
    const d = dir();
    const hub = await ensureHubTls(d, { hosts: ['user.example.com'] });
    const leafFile = path.join(d, 'leaf.pem');
    fs.writeFileSync(leafFile, splitPem(hub.certPem)[0]);
    return {
      d,
      hub,
      leafFile,
      chainFile: path.join(d, 'tls', 'server.pem'),
      keyFile: path.join(d, 'tls', 'server-key.pem'),
      caFile: path.join(d, 'tls', 'ca.pem'),
    };
  }

  it('pins the top certificate of a full chain', async () => {
    const f = await userFiles();
    const t = loadUserTls(f.chainFile, f.keyFile);
    expect(t.caFingerprint).toBe(f.hub.caFingerprint);
    expect(t.certPem).toBe(f.hub.certPem);
  });

  it('pins the CA file and appends it to a chain that lacks it', async () => {
    const f = await userFiles();
    const t = loadUserTls(f.leafFile, f.keyFile, f.caFile);
    expect(t.caFingerprint).toBe(f.hub.caFingerprint);
    expect(splitPem(t.certPem)).toHaveLength(2);
    expect(caFingerprint(splitPem(t.certPem)[1])).toBe(f.hub.caFingerprint);
    // Without a CA file, the top of the chain (here the leaf itself) is the pin, which clients
    // cannot use as a trust anchor: the hub says so.
    const logs = captureLogs();
    try {
      expect(loadUserTls(f.leafFile, f.keyFile).caFingerprint).toBe(caFingerprint(splitPem(f.hub.certPem)[0]));
      expect(
        logs
          .parsed()
          .filter((l) => l.level === 40)
          .map((l) => l.msg),
      ).toEqual([expect.stringMatching(/is not a self-signed root.*--tls-ca/)]);
    } finally {
      logs.stop();
    }
  });

  it('refuses a key that does not match, a CA that did not issue the chain, and an empty file', async () => {
    const f = await userFiles();
    const other = await userFiles();
    expect(() => loadUserTls(f.chainFile, other.keyFile)).toThrow(/does not match the first certificate/);
    expect(() => loadUserTls(f.leafFile, f.keyFile, other.caFile)).toThrow(/does not chain to --tls-ca/);
    const empty = path.join(f.d, 'empty.pem');
    fs.writeFileSync(empty, '');
    expect(() => loadUserTls(empty, f.keyFile)).toThrow(/holds no PEM certificate/);
    expect(() => loadUserTls(path.join(f.d, 'missing.pem'), f.keyFile)).toThrow(/cannot read --tls-cert/);
  });
});
