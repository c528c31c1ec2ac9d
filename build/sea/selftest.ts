/**
 * @module Self-test entry, not part of the product: build/build.test.ts packages it with the same
 * pipeline as main.ts and runs it from an empty, read-only directory with no network. It proves
 * the pieces that only break once bundled: the SQLite addon and the Automerge wasm loaded from SEA
 * assets (sync/native.ts), ws without its optional native modules, pino's default stdout
 * destination, @kubernetes/client-node's HTTP stack, @peculiar/x509 (decorators and reflect-metadata,
 * used by the hub's CA), and the embedded web UI manifest.
 *
 * Usage: selftest <writable work dir>. Prints one pino line, then one JSON result line; exits 1
 * with the error on stderr when a check fails.
 */
import { createHash, webcrypto, X509Certificate } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import * as A from '@automerge/automerge/slim';
import * as k8s from '@kubernetes/client-node';
import * as x509 from '@peculiar/x509';
import { WebSocket, WebSocketServer } from 'ws';
import { createLogger } from '../../core/logger.js';
import { initAutomerge, isPackaged, openSqlite, packagedAsset } from '../../sync/native.js';
import { UI_MANIFEST_KEY, UI_PREFIX, type UiManifest } from './assets.js';

// A type alias, not an interface: Automerge wants a Record-compatible document type.
type Spec = {
  workloads: Record<string, { image: string; replicas: number }>;
};

function check(cond: boolean, what: string): asserts cond {
  if (!cond) throw new Error(`selftest: ${what}`);
}

const sameHeads = (a: A.Heads, b: A.Heads): boolean => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());

/** Syncs a hub-side doc into an empty edge-side one with the low-level protocol the product uses. */
function automergeSync(): { hub: A.Doc<Spec>; edge: A.Doc<Spec>; rounds: number; lastMessage: Uint8Array } {
  let hub = A.from<Spec>({ workloads: { web: { image: 'nginx:1.27', replicas: 2 } } });
  hub = A.change(hub, (d) => {
    d.workloads.web!.replicas = 3;
  });
  let edge = A.init<Spec>();
  let hubState = A.initSyncState();
  let edgeState = A.initSyncState();
  let lastMessage: Uint8Array = new Uint8Array();
  for (let rounds = 1; rounds <= 10; rounds++) {
    let toEdge: Uint8Array | null;
    let toHub: Uint8Array | null;
    [hubState, toEdge] = A.generateSyncMessage(hub, hubState);
    if (toEdge) {
      lastMessage = toEdge;
      [edge, edgeState] = A.receiveSyncMessage(edge, edgeState, toEdge);
    }
    [edgeState, toHub] = A.generateSyncMessage(edge, edgeState);
    if (toHub) [hub, hubState] = A.receiveSyncMessage(hub, hubState, toHub);
    if (!toEdge && !toHub) return { hub, edge, rounds, lastMessage };
  }
  throw new Error('selftest: automerge sync did not settle in 10 rounds');
}

function sqliteRoundTrip(dir: string, saved: Uint8Array): { version: string; journalMode: string; loaded: Uint8Array } {
  const file = path.join(dir, 'replica.db');
  const db = openSqlite(file);
  const journalMode = db.pragma('journal_mode = WAL', { simple: true }) as string;
  db.exec('CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY, bytes BLOB NOT NULL)');
  db.prepare('INSERT OR REPLACE INTO docs (id, bytes) VALUES (?, ?)').run('spec', Buffer.from(saved));
  const version = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
  db.close();
  const ro = openSqlite(file, { readonly: true });
  const row = ro.prepare('SELECT bytes FROM docs WHERE id = ?').get('spec') as { bytes: Buffer } | undefined;
  ro.close();
  check(row !== undefined, 'the row written to SQLite is not there after reopening');
  return { version, journalMode, loaded: new Uint8Array(row.bytes) };
}

/** A binary ws round trip over a unix socket (the test runs without a network namespace). */
async function wsEcho(dir: string, payload: Uint8Array): Promise<number> {
  const sock = path.join(dir, 'ws.sock');
  const server = http.createServer();
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  wss.on('connection', (peer) => peer.on('message', (data, isBinary) => peer.send(data, { binary: isBinary })));
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(sock, resolve));
  try {
    return await new Promise<number>((resolve, reject) => {
      const client = new WebSocket(`ws+unix:${sock}:/sync`);
      client.once('error', reject);
      client.once('open', () => client.send(payload));
      client.once('message', (data: Buffer) => {
        client.close();
        if (!Buffer.from(payload).equals(data)) reject(new Error('selftest: ws echoed different bytes'));
        else resolve(data.length);
      });
    });
  } finally {
    wss.close();
    server.close();
  }
}

/** The Kubernetes client must load its whole HTTP stack; nothing listens, so a connection error is the pass. */
async function kubernetesClient(): Promise<string> {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'none', server: 'https://127.0.0.1:9', skipTLSVerify: true }],
    users: [{ name: 'nobody', token: 'x' }],
    contexts: [{ name: 'none', cluster: 'none', user: 'nobody' }],
    currentContext: 'none',
  });
  const api = kc.makeApiClient(k8s.CoreV1Api);
  try {
    await api.listNamespace();
  } catch (err) {
    const e = err as { code?: string; cause?: { code?: string }; message?: string };
    return e.code ?? e.cause?.code ?? String(e.message);
  }
  throw new Error('selftest: the Kubernetes client reached an API server at 127.0.0.1:9');
}

/** A self-signed certificate made by @peculiar/x509 must parse with Node's own X509Certificate. */
async function selfSignedCertificate(): Promise<string> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=outpost selftest',
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 3_600_000),
    keys,
    signingAlgorithm: alg,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
  });
  const parsed = new X509Certificate(cert.toString('pem'));
  check(parsed.checkIssued(parsed), 'the x509 self-signed certificate is not self-issued');
  return parsed.subject;
}

function verifyUi(): { files: number } | null {
  const raw = packagedAsset(UI_MANIFEST_KEY);
  if (!raw) return null;
  const manifest = JSON.parse(raw.toString('utf8')) as UiManifest;
  for (const f of manifest.files) {
    const bytes = packagedAsset(UI_PREFIX + f.path);
    check(bytes !== null, `ui asset ${f.path} listed in the manifest is missing`);
    check(
      createHash('sha256').update(bytes).digest('hex') === f.sha256,
      `ui asset ${f.path} does not match its manifest hash`,
    );
  }
  return { files: manifest.files.length };
}

async function main(): Promise<void> {
  const dir = process.argv[2];
  check(dir !== undefined, 'usage: selftest <writable work dir>');
  await initAutomerge();
  const synced = automergeSync();
  check(sameHeads(A.getHeads(synced.hub), A.getHeads(synced.edge)), 'hub and edge heads differ after sync');
  const sqlite = sqliteRoundTrip(dir, A.save(synced.edge));
  const reloaded = A.load<Spec>(sqlite.loaded);
  check(sameHeads(A.getHeads(reloaded), A.getHeads(synced.hub)), 'the doc loaded back from SQLite has different heads');
  const echoed = await wsEcho(dir, synced.lastMessage);
  const k8sError = await kubernetesClient();
  const certSubject = await selfSignedCertificate();
  const ui = verifyUi();
  createLogger('build:selftest').info({ sqlite: sqlite.version }, 'selftest passed');
  const result = {
    packaged: isPackaged(),
    sqlite: { version: sqlite.version, journalMode: sqlite.journalMode },
    automerge: { rounds: synced.rounds, replicas: reloaded.workloads.web?.replicas, heads: A.getHeads(reloaded) },
    ws: { echoedBytes: echoed },
    kubernetes: { error: k8sError },
    x509: { subject: certSubject },
    ui,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
