/**
 * The catalog (issue #21) on a real `outpost hub` process scanning with a real clamd (private
 * signature database made here), the real CLI, and three real edge agents running workloads as
 * host processes: publish, resolve a version range once per rollout, profiles and parameters,
 * secret parameters kept out of describe, logs and the stored bytes, quarantine and fail-closed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePlacementFile } from './fixtures/catalog.js';
import { TestClamd, TEST_SIGNATURE } from './fixtures/clamd.js';
import { killHostWorkloads } from './fixtures/host-workloads.js';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startEdgeProc, startHubProc, type HubProc } from './procs.js';

let dir: string;
let hub: HubProc;
let clamd: TestClamd;
let env: Record<string, string>;
const procs: Proc[] = [];
const out = () => path.join(dir, 'out');

const SECRET = `pw-${process.pid}-${Date.now()}-plain`;
const MALWARE = Buffer.from(`outpost catalog test malware ${process.pid} ${Date.now()}\n`);

/** A package directory for `web` at `version`: one workload writing what it was rendered with. */
function webPackage(version: string): string {
  const d = path.join(dir, `web-${version}`);
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'README.md'), `# web ${version}\n\nSays hello.\n`);
  fs.writeFileSync(
    path.join(d, 'package.yaml'),
    `apiVersion: outpost.dev/v1alpha1
kind: Package
metadata: { name: web }
spec:
  version: ${version}
  description: a greeting on every site
  parameters:
    - { name: greeting, type: string, required: true }
    - { name: size, type: string, enum: [small, large], default: large }
    - { name: workers, type: integer, default: 1, minimum: 1 }
    - { name: password, type: string, secret: true, required: true }
  profiles:
    small: { size: small, workers: 2 }
  workloads:
    - name: app
      manifests:
        - apiVersion: v1
          kind: Pod
          metadata: { name: app }
          spec:
            terminationGracePeriodSeconds: 1
            containers:
              - name: main
                image: localhost/outpost-busybox:latest
                command:
                  - sh
                  - -c
                  - 'echo $$$$ > ${out()}/{{ edge.name }}.pid && echo "${version} {{ params.greeting }} {{ params.size }} {{ params.workers }} {{ edge.labels.site }} $$PASSWORD" > ${out()}/{{ edge.name }}.out && exec sleep 3600'
                env:
                  - { name: PASSWORD, valueFrom: { secretKeyRef: { name: web-params, key: password } } }
`,
  );
  return d;
}

/** A one-workload package; `payload` goes into the archive as a data file. */
function plainPackage(name: string, payload?: Buffer, dependsOn = ''): string {
  const d = path.join(dir, `pkg-${name}`);
  fs.mkdirSync(d, { recursive: true });
  if (payload) fs.writeFileSync(path.join(d, 'payload.bin'), payload);
  fs.writeFileSync(
    path.join(d, 'package.yaml'),
    `kind: Package
metadata: { name: ${name} }
spec:
  version: 1.0.0
${dependsOn}  workloads:
    - name: app
      manifests:
        - { apiVersion: v1, kind: ConfigMap, metadata: { name: ${name} }, data: { a: b } }
`,
  );
  return d;
}

async function buildAndPush(pkgDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = path.join(dir, `${path.basename(pkgDir)}.tgz`);
  const b = await cli(['package', 'build', pkgDir, '-o', file], env);
  expect(b.stderr).toBe('');
  expect(b.code).toBe(0);
  return cli(['package', 'push', file], env);
}

async function versions(
  name: string,
): Promise<{ version: string; scan: { state: string; signature?: string; engine?: string; error?: string } }[]> {
  const r = await cli(['package', 'versions', name, '-o', 'json'], env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { version: string; scan: { state: string; signature?: string; engine?: string } }[];
}

async function scanState(name: string, version: string): Promise<string | undefined> {
  return (await versions(name)).find((v) => v.version === version)?.scan.state;
}

const placementYaml = (name: string, pkg: Record<string, unknown>) => packagePlacementFile(dir, name, 'cat', pkg);

function outputs(): Record<string, string> {
  const r: Record<string, string> = {};
  for (const e of ['e1', 'e2', 'e3']) {
    const f = path.join(out(), `${e}.out`);
    // The workload's `echo > FILE` makes the file empty before it writes the line: not written yet.
    const text = fs.existsSync(f) ? fs.readFileSync(f, 'utf8').trim() : '';
    if (text) r[e] = text;
  }
  return r;
}

beforeAll(async () => {
  dir = tempDir('outpost-catalog-');
  fs.mkdirSync(out());
  clamd = new TestClamd(path.join(dir, 'clamd'), MALWARE);
  await clamd.start();
  hub = await startHubProc(path.join(dir, 'hub'), await freePort(), ['--scanner', `clamd:unix:${clamd.socket}`]);
  procs.push(hub.proc);
  env = { OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  expect((await cli(['login', '--hub', hub.url, '--token', hub.token], env)).code).toBe(0);
  const join = (await cli(['token', 'create', '--labels', 'fleet=cat', '--uses', '3'], env)).stdout.trim();
  for (const [i, site] of ['lyon', 'oslo', 'rome'].entries()) {
    const name = `e${i + 1}`;
    procs.push(
      await startEdgeProc(path.join(dir, name), [
        '--hub',
        hub.url,
        '--join-token',
        join,
        '--name',
        name,
        '--driver',
        'process',
        '--labels',
        `site=${site}`,
      ]),
    );
  }
}, 120_000);

afterAll(async () => {
  for (const p of procs) await p.kill('SIGTERM');
  // Workloads outlive their agents by design: end the ones this test started.
  killHostWorkloads(out());
  await clamd?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('catalog (issue 21)', () => {
  it('publishes versions once, scans them Clean, and refuses a second publish of a version (409)', async () => {
    for (const v of ['1.0.0', '1.1.0']) {
      const r = await buildAndPush(webPackage(v));
      expect(r.stderr).toBe('');
      expect(r.stdout).toMatch(new RegExp(`package web ${v.replace(/\./g, '\\.')} published \\(Pending\\)`));
    }
    await waitFor(async () => ((await versions('web')).every((v) => v.scan.state === 'Clean') ? true : null), {
      timeout: 30_000,
      what: 'web 1.0.0 and 1.1.0 to be scanned Clean',
    });
    const vs = await versions('web');
    expect(vs.map((v) => v.version)).toEqual(['1.1.0', '1.0.0']);
    // The signature database version is recorded with the verdict (clamd's VERSION answer).
    expect(vs[0].scan.engine).toMatch(/^ClamAV \d/);
    const again = await buildAndPush(webPackage('1.0.0'));
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/package web 1\.0\.0 is already published in project default.*versions are immutable/);
    const list = await cli(['get', 'packages'], env);
    expect(list.stdout).toMatch(/web\s+1\.1\.0\s+2\s+Clean\s+a greeting on every site/);
  }, 120_000);

  it('refuses a missing required parameter or a wrong type, naming the parameter', async () => {
    const missing = await cli(
      ['apply', '-f', placementYaml('web', { name: 'web', version: '^1.0', values: { password: SECRET } })],
      env,
    );
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /values\.greeting: the string parameter greeting is required by package web 1\.1\.0/,
    );
    const wrong = await cli(
      [
        'apply',
        '-f',
        placementYaml('web', {
          name: 'web',
          version: '^1.0',
          values: { greeting: 'hi', password: SECRET, workers: 'two' },
        }),
      ],
      env,
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/values\.workers: must be an integer, got "two"/);
    const badEnum = await cli(
      [
        'apply',
        '-f',
        placementYaml('web', {
          name: 'web',
          version: '^1.0',
          values: { greeting: 'hi', password: SECRET, size: 'huge' },
        }),
      ],
      env,
    );
    expect(badEnum.stderr).toMatch(/values\.size: must be one of "small", "large"/);
    const profile = await cli(
      [
        'apply',
        '-f',
        placementYaml('web', {
          name: 'web',
          version: '^1.0',
          profile: 'tiny',
          values: { greeting: 'hi', password: SECRET },
        }),
      ],
      env,
    );
    expect(profile.stderr).toMatch(/profile: package web 1\.1\.0 has no profile "tiny" \(its profiles: small\)/);
    for (const r of [missing, wrong, badEnum, profile]) expect(r.stderr).not.toContain(SECRET);
  }, 60_000);

  it('deploys ^1.0 with profile small as 1.1.0 on three edges; a version published meanwhile is not mixed in; restart re-resolves', async () => {
    const file = placementYaml('web', {
      name: 'web',
      version: '^1.0',
      profile: 'small',
      values: { greeting: 'hello', password: SECRET },
    });
    const applied = await cli(['apply', '-f', file], env);
    expect(applied.stderr).toBe('');
    // 1.2.0 published while the rollout runs: the placement keeps the version it resolved.
    expect((await buildAndPush(webPackage('1.2.0'))).code).toBe(0);
    await waitFor(async () => ((await scanState('web', '1.2.0')) === 'Clean' ? true : null), {
      timeout: 30_000,
      what: 'web 1.2.0 to be Clean',
    });
    await waitFor(() => (Object.keys(outputs()).length === 3 ? true : null), {
      timeout: 60_000,
      what: 'the workload to run on three edges',
    });
    // Profile values (size small, workers 2), the placement's value, per-edge labels, the secret from the generated Secret.
    expect(outputs()).toEqual({
      e1: `1.1.0 hello small 2 lyon ${SECRET}`,
      e2: `1.1.0 hello small 2 oslo ${SECRET}`,
      e3: `1.1.0 hello small 2 rome ${SECRET}`,
    });
    await waitFor(async () => (/web\s+3\/3/.test((await cli(['get', 'placements'], env)).stdout) ? true : null), {
      timeout: 60_000,
      what: 'READY 3/3',
    });
    // Applying the same file again resolves nothing again: still 1.1.0, nothing changed.
    const again = await cli(['apply', '-f', file], env);
    expect(again.stdout).toMatch(/placement\/web unchanged/);
    const status = JSON.parse((await cli(['get', 'placement', 'web', '-o', 'json'], env)).stdout) as {
      spec: { workloads: string[] };
      status: { package: { version: string; versionRange: string } };
    };
    expect(status.status.package).toMatchObject({ version: '1.1.0', versionRange: '^1.0' });
    expect(status.spec.workloads).toEqual(['web-app']);

    // Secret parameter: nowhere in describe, get -o yaml, the hub's log or its database bytes.
    const seen = [
      (await cli(['describe', 'placement', 'web'], env)).stdout,
      (await cli(['describe', 'workload', 'web-app'], env)).stdout,
      (await cli(['get', 'placement', 'web', '-o', 'yaml'], env)).stdout,
      (await cli(['get', 'workload', 'web-app', '-o', 'yaml'], env)).stdout,
      (await cli(['rollout', 'history', 'workload', 'web-app'], env)).stdout,
      hub.proc.err,
      hub.proc.out,
      ...['hub.db', 'hub.db-wal']
        .map((f) => path.join(dir, 'hub', f))
        .filter((f) => fs.existsSync(f))
        .map((f) => fs.readFileSync(f).toString('latin1')),
    ];
    for (const [i, text] of seen.entries()) expect(text.includes(SECRET), `secret in output ${i}`).toBe(false);
    expect(seen[3]).toContain('password: <redacted>');

    const restart = await cli(['rollout', 'restart', 'placement', 'web'], env);
    expect(restart.stderr).toBe('');
    expect(restart.stdout).toMatch(/placement\/web restarted: web 1\.2\.0/);
    await waitFor(() => (Object.values(outputs()).filter((o) => o.startsWith('1.2.0 ')).length === 3 ? true : null), {
      timeout: 60_000,
      what: 'every edge to run 1.2.0 after the restart',
    });
    const events = (await cli(['get', 'events', '--for', 'placement/web'], env)).stdout;
    expect(events).toMatch(/resolves to 1\.2\.0 \(was 1\.1\.0\)/);
  }, 180_000);

  it('quarantines a package carrying the test signature, and keeps pushes Pending (not deployable) while clamd is down', async () => {
    const evil = await buildAndPush(plainPackage('evil', MALWARE));
    expect(evil.code, evil.stderr).toBe(0);
    await waitFor(async () => ((await scanState('evil', '1.0.0')) === 'Quarantined' ? true : null), {
      timeout: 30_000,
      what: 'evil to be Quarantined',
    });
    const [v] = await versions('evil');
    expect(v.scan.signature).toBe(`${TEST_SIGNATURE}.UNOFFICIAL`);
    expect((await cli(['package', 'versions', 'evil'], env)).stdout).toMatch(
      new RegExp(`1\\.0\\.0\\s+Quarantined\\(${TEST_SIGNATURE}\\.UNOFFICIAL\\)\\s+ClamAV`),
    );
    const deploy = await cli(['apply', '-f', placementYaml('evil', { name: 'evil', version: '1.0.0' })], env);
    expect(deploy.code).toBe(1);
    // Named like every other refusal of apply: the file, the document and its line (issue #42, item 10).
    expect(deploy.stderr).toMatch(
      /evil\.json, document 1 \(line 1\)(?: \(Placement evil\))?: spec\.package: placement evil: /,
    );
    expect(deploy.stderr).toMatch(
      new RegExp(
        `placement evil: package evil 1\\.0\\.0 is Quarantined: the malware scanner found ${TEST_SIGNATURE}\\.UNOFFICIAL`,
      ),
    );

    // A package depending on it is not deployable either.
    expect(
      (await buildAndPush(plainPackage('needs', undefined, '  dependsOn: [{ name: evil, version: "^1" }]\n'))).code,
    ).toBe(0);
    await waitFor(async () => ((await scanState('needs', '1.0.0')) === 'Clean' ? true : null), {
      timeout: 30_000,
      what: 'needs to be Clean',
    });
    const needs = await cli(['apply', '-f', placementYaml('needs', { name: 'needs', version: '1.0.0' })], env);
    expect(needs.code).toBe(1);
    expect(needs.stderr).toMatch(
      /package needs 1\.0\.0 depends on evil \^1, and project default has no Clean version of evil matching it \(its versions: 1\.0\.0 Quarantined\)/,
    );

    await clamd.stop();
    expect((await buildAndPush(plainPackage('later'))).code).toBe(0);
    await waitFor(async () => ((await versions('later'))[0].scan.error?.includes('unreachable') ? true : null), {
      timeout: 30_000,
      what: 'the scan of later to fail',
    });
    expect(await scanState('later', '1.0.0')).toBe('Pending');
    const pending = await cli(['apply', '-f', placementYaml('later', { name: 'later', version: '^1' })], env);
    expect(pending.code).toBe(1);
    expect(pending.stderr).toMatch(
      /placement later: package later 1\.0\.0 is Pending: it has not been scanned for malware yet \(clamd at .* is unreachable/,
    );
    expect((await cli(['get', 'events', '--reason', 'ScanPending'], env)).stdout).toMatch(
      /later 1\.0\.0 stays Pending/,
    );

    // The scanner back: the retry gives the verdict, and the package deploys.
    await clamd.start();
    await waitFor(async () => ((await scanState('later', '1.0.0')) === 'Clean' ? true : null), {
      timeout: 40_000,
      what: 'later to be scanned Clean once clamd is back',
    });
    const ok = await cli(['apply', '-f', placementYaml('later', { name: 'later', version: '^1' })], env);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
  }, 180_000);
});
