/**
 * One hub identity for the replicas on one PostgreSQL (issue #22; hub/identity/): two real
 * `outpost hub` processes WITH TLS, separate data directories, the same identity key file, started
 * at the same moment on an empty database, end with one identity: both serve the same CA, and the
 * release key and secrets key are the same. A join token made through A enrolls a real edge
 * (process driver) against B's URL: the edge pins the CA from the token and B presents it. A
 * Secret applied through A (sealed at rest with the shared secrets key) is opened by B, which
 * serves the edge, and delivered sealed to it; the edge opens it for its workload. A wrong key, a data
 * directory holding another CA and --identity-key without --database are refused with the fix.
 */
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureHubTls } from '../hub/tls.js';
import { certFingerprint, splitPem } from '../sync/pinned-ca.js';
import { edgeLocal } from './fixtures/edge-local.js';
import { killHostWorkloads } from './fixtures/host-workloads.js';
import { TestPostgres } from './fixtures/postgres.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startEdgeProc, startHubProc, type HubProc } from './procs.js';

const server = new TestPostgres();
let dir: string;
let pids: string;
let url: string;
let keyFile: string;
let a: HubProc;
let b: HubProc;
const procs: Proc[] = [];

const MARK = `identity-${process.pid}-${Date.now()}`;

/** A JSON call to a TLS hub, trusting only `ca` (the CA it was started with). */
function api(hub: HubProc, method: string, p: string, body?: unknown): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${hub.url}${p}`,
      {
        method,
        ca: hub.ca,
        headers: { authorization: `Bearer ${hub.token}`, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          let json: any = text;
          try {
            json = JSON.parse(text);
          } catch {
            /* not JSON: the text */
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** The CA a hub presents: the last certificate of the chain of its TLS handshake. */
function presentedCa(hub: HubProc): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${hub.url}/healthz`, { ca: hub.ca, agent: false }, (res) => {
      let cert = (res.socket as import('node:tls').TLSSocket).getPeerCertificate(true);
      while (cert.issuerCertificate && cert.issuerCertificate !== cert) cert = cert.issuerCertificate;
      res.resume();
      resolve(
        certFingerprint(`-----BEGIN CERTIFICATE-----\n${cert.raw.toString('base64')}\n-----END CERTIFICATE-----\n`),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** Runs a hub expected to refuse to start: its exit code and what it said. */
async function refusedStart(dataDir: string, extra: string[]): Promise<string> {
  const p = new Proc(['hub', '--data', dataDir, '--listen', '127.0.0.1:0', ...extra]);
  procs.push(p);
  const code = await new Promise<number | null>((r) => p.child.once('exit', (c) => r(c)));
  expect(code, p.err).toBe(1);
  return p.err;
}

beforeAll(async () => {
  dir = tempDir('outpost-identity-');
  pids = path.join(dir, 'pids');
  fs.mkdirSync(pids);
  await server.start();
  url = server.createDatabase('hub');
  const made = await cli(['hub', 'identity-key']);
  expect(made.code, made.stderr).toBe(0);
  keyFile = path.join(dir, 'identity.key');
  fs.writeFileSync(keyFile, made.stdout, { mode: 0o600 });
}, 90_000);

afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM').catch(() => undefined);
  killHostWorkloads(pids);
  await server.remove();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('one hub identity for the replicas on one PostgreSQL', () => {
  it('two replicas started at once on an empty database share one CA, secrets key and release key', async () => {
    const flags = ['--database', url, '--identity-key', keyFile];
    [a, b] = await Promise.all([
      startHubProc(path.join(dir, 'a'), await freePort(), flags),
      startHubProc(path.join(dir, 'b'), await freePort(), flags),
    ]);
    procs.push(a.proc, b.proc);
    expect(a.url).toMatch(/^https:/);
    expect(server.sql('SELECT part FROM hub_identity ORDER BY part', 'hub')).toBe(
      'admin-token\nca\nrelease-key\nsecrets-key',
    );
    const fingerprint = server.sql("SELECT public FROM hub_identity WHERE part = 'ca'", 'hub');
    expect(await presentedCa(a)).toBe(fingerprint);
    expect(await presentedCa(b)).toBe(fingerprint);
    expect(a.ca).toBe(b.ca);
    for (const f of [
      'secrets.key',
      'release/release-key.pem',
      'release/release.pub.pem',
      'tls/ca-key.pem',
      'admin.token',
    ])
      expect(fs.readFileSync(path.join(dir, 'b', f), 'utf8'), f).toBe(fs.readFileSync(path.join(dir, 'a', f), 'utf8'));
    // Each its own server certificate, both from the one CA.
    const leaf = (d: string) => splitPem(fs.readFileSync(path.join(dir, d, 'tls', 'server.pem'), 'utf8'))[0];
    expect(leaf('a')).not.toBe(leaf('b'));
  }, 90_000);

  it('a join token made through A enrolls an edge against B; a Secret applied through A reaches it sealed', async () => {
    const join = await api(a, 'POST', '/api/v1/tokens/join', { labels: { site: 'x' } });
    expect(join.status, JSON.stringify(join.json)).toBe(201);
    const edgeDir = path.join(dir, 'edge');
    procs.push(
      await startEdgeProc(edgeDir, [
        '--hub',
        b.url,
        '--join-token',
        join.json.token,
        '--name',
        'e1',
        '--driver',
        'process',
      ]),
    );
    await waitFor(
      async () => {
        const s = await edgeLocal(edgeDir, '/status');
        return s.connection === 'connected' && s.hub === b.url;
      },
      { timeout: 60_000, what: 'e1 connected to B' },
    );

    // The Secret is sealed at rest by A with the shared secrets key; B, which serves e1, opens it
    // to seal it to e1's key.
    const out = path.join(dir, 'secret.out');
    const workload = {
      apiVersion: 'outpost.dev/v1alpha1',
      kind: 'Workload',
      metadata: { name: 'db' },
      spec: {
        manifests: [
          { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'cred' }, stringData: { password: MARK } },
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'db' },
            spec: {
              terminationGracePeriodSeconds: 1,
              containers: [
                {
                  name: 'main',
                  image: 'localhost/outpost-busybox:latest',
                  command: ['sh', '-c', `echo $$$$ > ${pids}/db.pid && echo "$$PASSWORD" > ${out} && exec sleep 3600`],
                  env: [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'cred', key: 'password' } } }],
                },
              ],
            },
          },
        ],
      },
    };
    const applied = await api(a, 'POST', '/api/v1/apply', {
      objects: [workload, { kind: 'Placement', metadata: { name: 'db' }, spec: { edges: ['e1'], workloads: ['db'] } }],
    });
    expect(applied.status, JSON.stringify(applied.json)).toBe(200);
    expect(server.sql("SELECT spec FROM objects WHERE kind = 'Workload'", 'hub')).not.toContain(MARK);
    await waitFor(() => (fs.existsSync(out) && fs.readFileSync(out, 'utf8').trim() === MARK ? true : null), {
      timeout: 60_000,
      what: `the workload on e1 read the Secret (B: ${b.proc.err.slice(-400)})`,
    });
    await waitFor(
      async () => (await api(a, 'GET', '/api/v1/projects/default/placements/db')).json?.status?.summary?.ready === 1,
      { timeout: 60_000, what: 'placement db Ready, seen through A' },
    );
    // The edge's spec document holds the value sealed to it, never in clear.
    expect(fs.readFileSync(path.join(dir, 'b', 'hub.db')).includes(MARK)).toBe(false);
  }, 180_000);

  it('refuses a wrong key, a data directory holding another CA, and --identity-key without --database', async () => {
    const wrong = path.join(dir, 'wrong.key');
    fs.writeFileSync(wrong, (await cli(['hub', 'identity-key'])).stdout, { mode: 0o600 });
    expect(await refusedStart(path.join(dir, 'c'), ['--database', url, '--identity-key', wrong])).toMatch(
      new RegExp(
        `sealed with identity key [0-9a-f]{8}, but --identity-key ${wrong} is key [0-9a-f]{8}: give this replica the key file the other replicas were started with`,
      ),
    );

    const other = path.join(dir, 'other');
    const theirs = await ensureHubTls(other, { hosts: [] }); // a hub that ran on its own
    const shared = server.sql("SELECT public FROM hub_identity WHERE part = 'ca'", 'hub');
    const said = await refusedStart(other, ['--database', url, '--identity-key', keyFile]);
    expect(said).toContain(
      `${path.join(other, 'tls', 'ca.pem')} is CA ${theirs.caFingerprint}, but the hub identity in the database has CA ${shared}`,
    );
    expect(said).toContain(`move ${path.join(other, 'tls')} aside and start again`);
    expect(fs.readFileSync(path.join(other, 'tls', 'ca.pem'), 'utf8')).toBe(theirs.caPem); // untouched

    expect(await refusedStart(path.join(dir, 'd'), ['--identity-key', keyFile])).toContain(
      '--identity-key is for hub replicas sharing a database: give --database too, or drop --identity-key',
    );
    // Without the key, a replica whose files are not the shared identity is refused too.
    expect(await refusedStart(path.join(dir, 'e'), ['--database', url])).toContain(
      'start it with --identity-key FILE (or OUTPOST_IDENTITY_KEY_FILE), the key file the other replicas were given',
    );
  }, 120_000);
});
