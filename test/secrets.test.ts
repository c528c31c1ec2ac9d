/**
 * Secrets stay secret (issue 14, item 10), on a real `outpost hub` process with TLS, the real CLI
 * and a real edge agent running the workload on the host: values are redacted for every reader
 * unless an operator asks, sealed at rest with the hub's key (tables, WAL, backups) and sealed to
 * the edge in its spec document (the CRDT history included), opened only for the driver; a backup
 * restores only with the key file; decommissioning forgets the edge's key, and a re-enrolled edge
 * gets its Secrets sealed to a new one.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as A from '@automerge/automerge/slim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initAutomerge, openSqlite } from '../sync/native.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startHubProc, type HubProc } from './procs.js';

let dir: string;
let hub: HubProc;
let env: Record<string, string>;
const procs: Proc[] = [];
const pidFiles: string[] = [];

async function runEdge(dataDir: string, name: string, joinToken: string): Promise<Proc> {
  const edge = new Proc(['edge', '--data', dataDir, '--hub', hub.url, '--name', name], {
    OUTPOST_JOIN_TOKEN: joinToken,
  });
  procs.push(edge);
  await waitFor(
    () =>
      new RegExp(`outpost edge ${name} running`).test(edge.err)
        ? true
        : edge.alive
          ? null
          : Promise.reject(new Error(edge.err)),
    { timeout: 30_000, what: `edge ${name} to run` },
  );
  return edge;
}

/** Workloads outlive their agents by design: the test ends the one it started. */
function killWorkload(pidFile: string): void {
  const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone already */
  }
}

const MARK = `pw-${process.pid}-${Date.now()}-plain`;
const DATA_MARK = `api-${process.pid}-${Date.now()}-bytes`;
const DATA_B64 = Buffer.from(DATA_MARK).toString('base64');

const as = (token: string) => ({
  OUTPOST_CONFIG: path.join(dir, 'none.json'),
  OUTPOST_HUB: hub.url,
  OUTPOST_TOKEN: token,
});

function workloadYaml(out: string, pid: string): string {
  return `apiVersion: outpost.dev/v1alpha1
kind: Workload
metadata: { name: db }
spec:
  manifests:
    - apiVersion: v1
      kind: Secret
      metadata: { name: db-cred }
      stringData: { password: ${MARK} }
      data: { api: ${DATA_B64} }
    - apiVersion: v1
      kind: Pod
      metadata: { name: db }
      spec:
        terminationGracePeriodSeconds: 1
        containers:
          - name: main
            image: localhost/outpost-busybox:latest
            command: [sh, -c, 'echo $$$$ > ${pid} && echo "$$PASSWORD $$API" > ${out} && exec sleep 3600']
            env:
              - { name: PASSWORD, valueFrom: { secretKeyRef: { name: db-cred, key: password } } }
              - { name: API, valueFrom: { secretKeyRef: { name: db-cred, key: api } } }
---
apiVersion: outpost.dev/v1alpha1
kind: Placement
metadata: { name: db }
spec:
  edgeSelector: { matchLabels: { site: a } }
  workloads: [db]
`;
}

/** Every value any change of a document ever wrote, decoded from the stored snapshot and chunks. */
function historyText(dbFile: string, docSuffix: string): string {
  const db = openSqlite(dbFile, { readonly: true });
  try {
    const row = db.prepare('SELECT id, snapshot FROM docs WHERE id LIKE ?').get(`%${docSuffix}`) as
      { id: string; snapshot: Buffer } | undefined;
    if (!row) throw new Error(`no document *${docSuffix} in ${dbFile}`);
    let doc = A.load(new Uint8Array(row.snapshot));
    for (const c of db.prepare('SELECT data FROM doc_chunks WHERE doc_id = ? ORDER BY seq').all(row.id) as {
      data: Buffer;
    }[])
      doc = A.loadIncremental(doc, new Uint8Array(c.data));
    return JSON.stringify(A.getAllChanges(doc).map((ch) => A.decodeChange(ch).ops));
  } finally {
    db.close();
  }
}

/** The raw bytes of a SQLite file and its WAL, as a thief of the disk would read them. */
function rawBytes(file: string): string {
  return [file, `${file}-wal`]
    .filter((f) => fs.existsSync(f))
    .map((f) => fs.readFileSync(f).toString('latin1'))
    .join('');
}

function expectNoPlaintext(text: string, where: string): void {
  for (const m of [MARK, DATA_MARK, DATA_B64]) expect(text.includes(m), `${m} in ${where}`).toBe(false);
}

beforeAll(() => initAutomerge());

beforeAll(async () => {
  dir = tempDir('outpost-secrets-');
  hub = await startHubProc(path.join(dir, 'hub'), await freePort());
  procs.push(hub.proc);
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  expect((await cli(['login', '--hub', hub.url, '--token', hub.token], env)).code).toBe(0);
});

afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM');
  for (const f of pidFiles) if (fs.existsSync(f)) killWorkload(f);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('Secrets (item 10)', () => {
  it('are redacted unless an operator asks, sealed at rest and to the edge, opened only for the driver', async () => {
    const join = (await cli(['token', 'create', '--labels', 'site=a'], env)).stdout.trim();
    const edgeDir = path.join(dir, 'edge');
    const edge = await runEdge(edgeDir, 'e1', join);

    const out = path.join(dir, 'seen-by-workload');
    const pid = path.join(dir, 'db.pid');
    pidFiles.push(pid);
    const file = path.join(dir, 'db.yaml');
    fs.writeFileSync(file, workloadYaml(out, pid));
    const applied = await cli(['apply', '-f', file], env);
    expect(applied.stderr).toBe('');
    // The driver got the values in clear: the edge opened what the hub sealed to it.
    await waitFor(() => (fs.existsSync(out) && fs.readFileSync(out, 'utf8').includes(MARK) ? true : null), {
      timeout: 60_000,
      what: 'the workload to see its Secret',
    });
    expect(fs.readFileSync(out, 'utf8').trim()).toBe(`${MARK} ${DATA_MARK}`);

    // Output: redacted for everyone by default; revealed to operators who ask, never to viewers.
    const viewer = (await cli(['token', 'create', '--api', '--role', 'viewer'], env)).stdout.trim();
    const operator = (await cli(['token', 'create', '--api', '--role', 'operator'], env)).stdout.trim();
    for (const token of [viewer, operator, hub.token]) {
      const y = await cli(['get', 'workload', 'db', '-o', 'yaml'], as(token));
      expect(y.code).toBe(0);
      expect(y.stdout).toContain('password: <redacted>');
      expect(y.stdout).toContain('api: <redacted>');
      expectNoPlaintext(y.stdout, 'get -o yaml');
      expectNoPlaintext((await cli(['get', 'workloads', '-o', 'json'], as(token))).stdout, 'get workloads -o json');
      expectNoPlaintext((await cli(['rollout', 'history', 'workload', 'db'], as(token))).stdout, 'rollout history');
    }
    const denied = await cli(['get', 'workload', 'db', '-o', 'yaml', '--show-secrets'], as(viewer));
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/viewer token may not reveal Secret values in project default/);
    const shown = await cli(['get', 'workload', 'db', '-o', 'yaml', '--show-secrets'], as(operator));
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`password: ${MARK}`);
    expect(shown.stdout).toContain(`api: ${DATA_B64}`);

    // What get printed applies back unchanged: <redacted> keeps the stored value.
    const redactedFile = path.join(dir, 'redacted.yaml');
    fs.writeFileSync(
      redactedFile,
      (await cli(['get', 'workload', 'db', '-o', 'yaml'], as(operator))).stdout.replace(
        /^\s*resourceVersion:.*\n/m,
        '',
      ),
    );
    const again = await cli(['apply', '-f', redactedFile], as(operator));
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/unchanged/);
    // A dry run and a diff of the file holding the values: unchanged, and no value printed.
    const dry = await cli(['apply', '--dry-run=server', '-f', file], as(operator));
    expect(dry.stdout).toMatch(/workload\/db unchanged/i);
    expectNoPlaintext(dry.stdout + dry.stderr, 'apply --dry-run=server');
    const diff = await cli(['diff', '-f', file], as(operator));
    expectNoPlaintext(diff.stdout + diff.stderr, 'diff');

    // At rest on the hub: no table, WAL page or CRDT change holds a value; the key file is private.
    const hubDb = path.join(dir, 'hub', 'hub.db');
    expectNoPlaintext(rawBytes(hubDb), 'hub.db and its WAL');
    const specHistory = historyText(hubDb, 'e1/spec');
    expect(specHistory).toContain('oes1.');
    expectNoPlaintext(specHistory, "the hub's copy of the spec document's history");
    expect(fs.statSync(path.join(dir, 'hub', 'secrets.key')).mode & 0o777).toBe(0o600);
    // The edge's replica holds only what the hub sealed to it.
    expectNoPlaintext(historyText(path.join(edgeDir, 'edge.db'), 'e1/spec'), "the edge's spec document history");

    // Backups hold ciphertext, and restore only with the key file.
    const backup = path.join(dir, 'backup.db');
    expect((await cli(['hub', 'backup', '--data', path.join(dir, 'hub'), '--to', backup])).code).toBe(0);
    expectNoPlaintext(rawBytes(backup), 'the backup');
    const restored = path.join(dir, 'restored');
    fs.mkdirSync(restored);
    fs.copyFileSync(backup, path.join(restored, 'hub.db'));
    fs.cpSync(path.join(dir, 'hub', 'tls'), path.join(restored, 'tls'), { recursive: true });
    fs.copyFileSync(path.join(dir, 'hub', 'admin.token'), path.join(restored, 'admin.token'));
    const keyless = await cli(['hub', '--data', restored, '--listen', `127.0.0.1:${await freePort()}`]);
    expect(keyless.code).toBe(1);
    expect(keyless.stderr).toMatch(
      /secrets\.key is missing but the database holds Secrets sealed with key [0-9a-f]{8}/,
    );
    fs.copyFileSync(path.join(dir, 'hub', 'secrets.key'), path.join(restored, 'secrets.key'));
    const second = await startHubProc(restored, await freePort());
    procs.push(second.proc);
    const back = await cli(['get', 'workload', 'db', '-o', 'yaml', '--show-secrets'], {
      OUTPOST_CONFIG: path.join(dir, 'none.json'),
      OUTPOST_HUB: second.url,
      OUTPOST_TOKEN: second.token,
    });
    expect(back.stdout).toContain(`password: ${MARK}`);
    await second.proc.kill('SIGTERM');

    // Decommission forgets the edge's key; enrolled again, the edge has a new one.
    const sealedBefore = historyText(path.join(edgeDir, 'edge.db'), 'e1/spec').match(/oes1\.[A-Za-z0-9_-]+/g)!;
    await edge.kill('SIGTERM');
    killWorkload(pid);
    expect((await cli(['edge', 'decommission', 'e1', '--yes'], env)).code).toBe(0);
    const db = openSqlite(hubDb, { readonly: true });
    expect(db.prepare("SELECT count(*) n FROM edge_credentials WHERE edge = 'e1'").get()).toEqual({ n: 0 });
    db.close();
    fs.rmSync(out);
    const edgeDir2 = path.join(dir, 'edge2');
    await runEdge(edgeDir2, 'e1', (await cli(['token', 'create', '--labels', 'site=a'], env)).stdout.trim());
    await waitFor(() => (fs.existsSync(out) && fs.readFileSync(out, 'utf8').includes(MARK) ? true : null), {
      timeout: 60_000,
      what: 'the re-enrolled edge to run the workload with its Secret',
    });
    const sealedAfter = historyText(path.join(edgeDir2, 'edge.db'), 'e1/spec').match(/oes1\.[A-Za-z0-9_-]+/g)!;
    expect(sealedAfter.length).toBeGreaterThan(0);
    for (const s of sealedAfter) expect(sealedBefore).not.toContain(s);
  }, 180_000);
});
