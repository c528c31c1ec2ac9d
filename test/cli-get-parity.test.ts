/**
 * Issue 42, item 10 (CLI parity with kubectl), against a real hub in-process (real SQLite, real
 * HTTP; `--scanner none`, so versions are Clean at once) and the CLI in-process: `describe package`,
 * several names in one `get` (a missing one named after the others, exit 1), `-o jsonpath` errors
 * in kubectl 1.33's words, and packages as apiVersion/kind objects in `-o yaml|json`.
 *
 * The two edges are enrolled and never connect: a rollout of maxUnavailable 100% writes its
 * assignments to both at once, which is all the catalog counts (hub/catalog/runs.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import type { PackageVersionView } from '../core/api/types.js';
import { buildPackage } from '../cli/cmd-package.js';
import { startHub, type Hub } from '../hub/hub.js';
import { HubClient } from '../cli/client.js';
import { runCli } from './fixtures/cli.js';
import { adminApi } from './fixtures/in-process-fleet.js';
import { tempDir, waitFor } from './helpers.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;

const cli = (args: string[]) => runCli(args, { env });

/** A value only a secret parameter holds: it must never reach describe's output. */
const SECRET_DEFAULT = `pw-default-${process.pid}`;
const SECRET_PROFILE = `pw-profile-${process.pid}`;

async function publish(name: string, version: string, extra = ''): Promise<void> {
  const d = path.join(dir, `${name}-${version}`);
  fs.mkdirSync(d);
  fs.writeFileSync(
    path.join(d, 'package.yaml'),
    `kind: Package
metadata: { name: ${name} }
spec:
  version: ${version}
  description: ${name} for every shop
${extra}  workloads:
    - name: app
      manifests:
        - apiVersion: v1
          kind: Pod
          metadata: { name: app }
          spec: { containers: [{ name: main, image: "busybox:1" }] }
`,
  );
  const { file } = await buildPackage(d, path.join(dir, `${name}-${version}.tgz`));
  const r = await cli(['package', 'push', file]);
  expect(r.code, r.stderr).toBe(0);
}

const WEB_PARAMETERS = `  parameters:
    - { name: size, type: string, enum: [small, large], default: large, description: how big }
    - { name: workers, type: integer, default: 1, minimum: 1, maximum: 8 }
    - { name: password, type: string, secret: true, default: ${SECRET_DEFAULT} }
  profiles:
    small: { size: small, password: ${SECRET_PROFILE} }
`;

const packagePlacement = (name: string, version: string, profile?: string) => ({
  kind: 'Placement',
  metadata: { name },
  spec: {
    edgeSelector: { matchLabels: { site: 'shop' } },
    package: { name: 'web', version, ...(profile ? { profile } : {}) },
    rollout: { maxUnavailable: '100%' },
  },
});

beforeAll(async () => {
  dir = tempDir('outpost-cli-get-parity-');
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    insecureHttp: true,
    scanner: { kind: 'none' },
  });
  env = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.adminToken, OUTPOST_CONFIG: path.join(dir, 'cli.json') };
  const join = (await cli(['token', 'create', '--labels', 'site=shop', '--uses', '2'])).stdout.trim();
  const enroll = new HubClient({ hub: hub.url, token: 'none' });
  for (const name of ['e1', 'e2']) await enroll.post('/api/v1/enroll', { joinToken: join, name });

  await publish('db', '1.0.0');
  await publish('web', '1.0.0', WEB_PARAMETERS);
  await publish('web', '1.1.0', `${WEB_PARAMETERS}  dependsOn: [{ name: db, version: "^1.0" }]\n`);
  // web-old runs 1.0.0 on both edges; web-new resolves ^1.0 to 1.1.0, which waits on e1 and e2
  // for db (deployed nowhere), so no edge has it yet.
  await adminApi(hub, 'POST', '/api/v1/apply', {
    objects: [packagePlacement('web-old', '1.0.0', 'small'), packagePlacement('web-new', '^1.0')],
  });
  await waitFor(
    async () => {
      const { items } = await adminApi<{ items: PackageVersionView[] }>(
        hub,
        'GET',
        '/api/v1/projects/default/packages/web',
      );
      const runs = items.flatMap((v) => (v.placements ?? []).map((p) => `${p.placement}@${v.version}:${p.edgeCount}`));
      return runs.sort().join(' ') === 'web-new@1.1.0:0 web-old@1.0.0:2' || undefined;
    },
    { what: 'web 1.0.0 on both edges through web-old, 1.1.0 resolved for web-new', timeout: 30_000 },
  );
}, 60_000);

afterAll(async () => {
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('describe package', () => {
  it('shows the versions, what they depend on, parameters and profiles without secret values, where each runs, and the events', async () => {
    const r = await cli(['describe', 'package', 'web']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = r.stdout;
    expect(out).toMatch(
      /^Name: +web\nKind: +Package\nProject: +default\nLatest: +1\.1\.0\nDescription: +web for every shop\n/,
    );
    expect(out).toMatch(
      /\nVersions:\n +VERSION +SCAN +SIGNATURE DB +DEPENDS ON +AGE\n +1\.1\.0 +Clean +none \(--scanner none: not scanned\) +db \^1\.0 +\S+\n +1\.0\.0 +Clean +none \(--scanner none: not scanned\) +- +\S+\n/,
    );
    expect(out).toMatch(
      /\nParameters of 1\.1\.0:\n +NAME +TYPE +REQUIRED +SECRET +DEFAULT +ALLOWED +DESCRIPTION\n +size +string +no +no +large +small\|large +how big\n +workers +integer +no +no +1 +1\.\.8\n +password +string +no +yes +<redacted> +-\n/,
    );
    expect(out).toMatch(/\nProfiles of 1\.1\.0:\n +small: +size=small, password=<redacted>\n/);
    expect(out).toMatch(
      /\nPlacements:\n +PLACEMENT +VERSION +RANGE +PROFILE +EDGES\n +web-new +1\.1\.0 +\^1\.0 +- +0 \(no edge yet\)\n +web-old +1\.0\.0 +1\.0\.0 +small +2 \(e1, e2\)\n/,
    );
    expect(out).toMatch(/\nEvents:\n +AGE +REASON +MESSAGE\n(.*\n)* +\S+ +Published +package web 1\.0\.0 published/);
    expect(out).toMatch(/ScanClean +package web 1\.1\.0 is Clean/);
    expect(out).not.toContain(SECRET_DEFAULT);
    expect(out).not.toContain(SECRET_PROFILE);

    expect((await cli(['describe', 'pkg/db'])).stdout).toMatch(/\nPlacements:\n +<none>\n/);
    const missing = await cli(['describe', 'package', 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      'error: package nope not found in project default: check the name and project (--project), or list them with `outpost get packages`\n',
    );
  });
});

describe('get with several names', () => {
  it('prints each object found, then names each missing one, exit code 1', async () => {
    const r = await cli(['get', 'placements', 'web-old', 'nope', 'web-new']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^NAME +READY +WORST +ROLLOUT +EDGES +AGE\nweb-old +.*\nweb-new +.*\n$/);
    expect(r.stderr).toBe(
      'error: Placement nope not found in project default: check the name and project (--project), or list them with `outpost get placements`\n',
    );

    const edges = await cli(['get', 'edges', 'e2', 'e1', '-o', 'name']);
    expect(edges).toMatchObject({ code: 0, stdout: 'edge/e2\nedge/e1\n', stderr: '' });
    const pkgs = await cli(['get', 'packages', 'web', 'gone', 'db', '-o', 'name']);
    expect(pkgs.code).toBe(1);
    expect(pkgs.stdout).toBe('package/web\npackage/db\n');
    expect(pkgs.stderr).toMatch(/^error: package gone not found in project default: /);
    const table = await cli(['get', 'pkg', 'db', 'web']);
    expect(table.stdout).toMatch(
      /^NAME +LATEST +VERSIONS +SCAN +DESCRIPTION\ndb +1\.0\.0 +1 +Clean +db for every shop\nweb +1\.1\.0 +2 +Clean +web for every shop\n$/,
    );

    // yaml of several names is a List of those found, of one name the object itself (kubectl).
    const list = YAML.parse((await cli(['get', 'wl', 'web-old-app', 'web-new-app', '-o', 'yaml'])).stdout);
    expect(list.kind).toBe('List');
    expect(list.items.map((x: { metadata: { name: string } }) => x.metadata.name)).toEqual([
      'web-old-app',
      'web-new-app',
    ]);
    expect(YAML.parse((await cli(['get', 'wl', 'web-old-app', '-o', 'yaml'])).stdout).kind).toBe('Workload');

    const none = await cli(['get', 'edges', 'x1', 'x2']);
    expect(none).toMatchObject({ code: 1, stdout: '' });
    expect(none.stderr).toMatch(
      /^error: Edge x1 not found in project default: .*\nerror: Edge x2 not found in project default: .*\n$/,
    );
  });

  it('takes KIND/NAME of several kinds: a table per kind, names as KIND/NAME', async () => {
    const r = await cli(['get', 'placement/web-old', 'edge/e1', 'package/web', 'placement/web-new']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(
      /^NAME +READY +WORST +ROLLOUT +EDGES +AGE\nplacement\/web-old +.*\nplacement\/web-new +.*\n\nNAME +STATE +READY +LAST-SEEN +LABELS\nedge\/e1 +.*\n\nNAME +LATEST +VERSIONS +SCAN +DESCRIPTION\npackage\/web +1\.1\.0 +2 +Clean +web for every shop\n$/,
    );
    const kinds = await cli(['get', 'edge/e1', 'pl/web-old', 'pl/gone', '-o', 'jsonpath={.items[*].kind}']);
    expect(kinds.code).toBe(1);
    expect(kinds.stdout).toBe('Edge Placement\n');
    expect(kinds.stderr).toMatch(/^error: Placement gone not found in project default: /);
    const mixed = await cli(['get', 'placement/web-old', 'web-new']);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toMatch(/"web-new" has no kind: once one object is given as KIND\/NAME, give each so/);
    expect((await cli(['get', 'edges', 'e1', 'e2', '-w'])).code).toBe(2);
  });
});

describe('-o jsonpath errors as kubectl 1.33 prints them', () => {
  it('a missing field prints nothing, or is an error with --allow-missing-template-keys=false; an index past the end is one always', async () => {
    const quiet = await cli(['get', 'placement', 'web-old', '-o', 'jsonpath={.spec.nope}']);
    expect(quiet).toMatchObject({ code: 0, stdout: '', stderr: '' });

    const strict = await cli([
      'get',
      'placement',
      'web-old',
      '-o',
      'jsonpath={.metadata.name}{.spec.nope}',
      '--allow-missing-template-keys=false',
    ]);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toBe('');
    expect(strict.stderr).toBe(
      'error: error executing jsonpath "{.metadata.name}{.spec.nope}": Error executing template: nope is not found. `-o yaml` shows the fields the object has\n',
    );
    const inRange = await cli([
      'get',
      'edges',
      '-o',
      'jsonpath={range .items[*]}{.metadata.name}{.status.nope.deeper}{end}',
      '--allow-missing-template-keys=false',
    ]);
    expect(inRange.code).toBe(1);
    expect(inRange.stderr).toMatch(/Error executing template: nope is not found\./);

    // Present but empty: printed as it is, no error (kubectl: `{.spec.l}` of [] prints [], "" prints nothing).
    const empty = await cli([
      'get',
      'placement',
      'web-new',
      '-o',
      'jsonpath={.spec.package.name}|{.status.rollout.reason}|{.spec.customization}',
      '--allow-missing-template-keys=false',
    ]);
    expect(empty.stderr).toBe('');
    expect(empty.stdout).toMatch(/^web\|[^|]*\|\[\]\n$/);

    const past = await cli(['get', 'package', 'web', '-o', 'jsonpath={.status.versions[5].version}']);
    expect(past.code).toBe(1);
    expect(past.stderr).toBe(
      'error: error executing jsonpath "{.status.versions[5].version}": Error executing template: array index out of bounds: index 5, length 2. `-o yaml` shows the fields the object has\n',
    );
    const bad = await cli(['get', 'edges', '--allow-missing-template-keys=maybe', '-o', 'jsonpath={.items}']);
    expect(bad.code).toBe(2);
  });
});

describe('packages as objects', () => {
  it('get packages -o yaml|json prints a List of apiVersion/kind objects; one named, the object', async () => {
    const list = YAML.parse((await cli(['get', 'packages', '-o', 'yaml'])).stdout);
    expect(list).toMatchObject({ apiVersion: 'outpost.dev/v1alpha1', kind: 'List' });
    expect(list.items.map((p: { metadata: { name: string } }) => p.metadata.name).sort()).toEqual(['db', 'web']);
    const web = list.items.find((p: { metadata: { name: string } }) => p.metadata.name === 'web');
    expect(web).toMatchObject({
      apiVersion: 'outpost.dev/v1alpha1',
      kind: 'Package',
      metadata: { name: 'web', project: 'default' },
      status: { latest: '1.1.0' },
    });
    expect(web.status.versions.map((v: { version: string }) => v.version)).toEqual(['1.1.0', '1.0.0']);
    expect(web.status.versions[0]).toMatchObject({
      scan: { state: 'Clean' },
      dependsOn: [{ name: 'db', version: '^1.0' }],
      placements: [{ placement: 'web-new', versionRange: '^1.0', edgeCount: 0 }],
    });

    const one = JSON.parse((await cli(['get', 'package', 'web', '-o', 'json'])).stdout);
    expect(one).toEqual(web);
    expect(YAML.parse((await cli(['get', 'package/web', '-o', 'yaml'])).stdout)).toEqual(web);
    expect((await cli(['get', 'packages', '-o', 'jsonpath={.items[*].status.latest}'])).stdout).toMatch(
      /^(1\.0\.0 1\.1\.0|1\.1\.0 1\.0\.0)\n$/,
    );
  });
});
