// Uses the hub's real certificates (hub/tls.ts) against a real HTTPS server: the pin is only worth
// something if it works with exactly what the hub serves.
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureHubTls, type HubTls } from '../hub/tls.js';
import { tempDir } from '../test/helpers.js';
import { certFingerprint, fetchPinnedCa, parseToken } from './pinned-ca.js';

const SECRET = 'A'.repeat(42) + 'w';
const FP = 'ab'.repeat(32);

describe('parseToken', () => {
  it('reads the three kinds', () => {
    expect(parseToken(`opt1.${FP}.0123456789abcdef.${SECRET}`)).toEqual({
      kind: 'api',
      caFingerprint: FP,
      id: '0123456789abcdef',
      secret: SECRET,
    });
    expect(parseToken(`opj1.none.0123456789abcdef.${SECRET}\n`)).toEqual({
      kind: 'join',
      id: '0123456789abcdef',
      secret: SECRET,
    });
    expect(parseToken(`ope1.edge-7.0123456789abcdef.${SECRET}`)).toEqual({
      kind: 'edge',
      edge: 'edge-7',
      id: '0123456789abcdef',
      secret: SECRET,
    });
  });

  it('rejects anything else', () => {
    for (const bad of [
      '',
      'garbage',
      `opx1.${FP}.0123456789abcdef.${SECRET}`,
      `opt1.${FP.slice(2)}.0123456789abcdef.${SECRET}`,
      `opt1.${FP.toUpperCase()}.0123456789abcdef.${SECRET}`,
      `opt1.${FP}.0123456789ABCDEF.${SECRET}`,
      `opt1.${FP}.0123456789abcdef.${SECRET.slice(1)}`,
      `opt1.${FP}.0123456789abcdef.${SECRET}.x`,
      `ope1.Edge_7.0123456789abcdef.${SECRET}`,
    ]) {
      expect(parseToken(bad), bad).toBeNull();
    }
  });
});

function get(url: string, ca?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

describe('fetchPinnedCa against a hub certificate', () => {
  let dir: string;
  let tls: HubTls;
  let server: https.Server;
  let port: number;

  beforeAll(async () => {
    dir = tempDir('outpost-pin-');
    tls = await ensureHubTls(dir, { hosts: [] });
    server = https.createServer({ cert: tls.certPem, key: tls.keyPem }, (_req, res) => res.end('hello from the hub'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  for (const host of ['127.0.0.1', 'localhost']) {
    it(`returns the pinned CA, with which a verified request to https://${host} succeeds`, async () => {
      const ca = await fetchPinnedCa(`https://${host}:${port}`, tls.caFingerprint);
      expect(certFingerprint(ca)).toBe(tls.caFingerprint);
      await expect(get(`https://${host}:${port}/`, ca)).resolves.toEqual({ status: 200, body: 'hello from the hub' });
    });
  }

  it('accepts a wss:// sync URL with a path and an upper-case, colon-separated pin', async () => {
    const pin = tls.caFingerprint.toUpperCase().match(/../g)!.join(':');
    const ca = await fetchPinnedCa(`wss://localhost:${port}/api/v1/sync`, pin);
    expect(certFingerprint(ca)).toBe(tls.caFingerprint);
  });

  it('the hub is not trusted without the pinned CA (verification really is on)', async () => {
    await expect(get(`https://127.0.0.1:${port}/`)).rejects.toThrow(/self.signed|local issuer/);
  });

  it('refuses a pin for another hub, naming both fingerprints', async () => {
    const other = 'cd'.repeat(32);
    const err = await fetchPinnedCa(`https://127.0.0.1:${port}`, other).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe(
      `the hub at https://127.0.0.1:${port} presented a CA with fingerprint ${tls.caFingerprint}, but the token pins ${other}: ` +
        'the token is for another hub, or someone is intercepting the connection',
    );
  });

  it('a certificate from another CA is refused by the verified request even with a fetched pin', async () => {
    const otherDir = tempDir('outpost-pin-other-');
    try {
      const other = await ensureHubTls(otherDir, { hosts: [] });
      await expect(get(`https://127.0.0.1:${port}/`, other.caPem)).rejects.toThrow(
        /self.signed|local issuer|signature/,
      );
    } finally {
      fs.rmSync(otherDir, { recursive: true, force: true });
    }
  });

  it('explains plain http, a bad pin and an unreachable hub', async () => {
    await expect(fetchPinnedCa(`http://127.0.0.1:${port}`, tls.caFingerprint)).rejects.toThrow(/is not https/);
    await expect(fetchPinnedCa(`https://127.0.0.1:${port}`, 'abc')).rejects.toThrow(/invalid CA fingerprint/);
    const closed = https.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await expect(fetchPinnedCa(`https://127.0.0.1:${freePort}`, tls.caFingerprint)).rejects.toThrow(
      /cannot read the TLS certificates of the hub/,
    );
  });
});
