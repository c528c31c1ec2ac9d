/**
 * Issue 45, part 2: Helm charts as packages (docs/catalog.md, "Helm charts"), in-process: a hub
 * (`--scanner none`, `--helm` the outpost-helm that build/helm/build.sh builds from Helm's Go
 * module), two edge agents on the process driver labelled with their site, the CLI in-process.
 *
 * - test/fixtures/charts/shop (a subchart, a test hook, a pre-install hook behind a value) is built
 *   and pushed with the CLI, placed on both edges with the profile `small` and a value naming
 *   `{{ edge.labels.site }}`: each edge gets the chart rendered by Helm for its own site, with the
 *   subchart's workload at the profile's size and the test hook dropped, and runs it; the
 *   generated workload records the chart's digest and its subchart's version.
 * - the same chart with the migration hook turned on: each edge is told the hook cannot run.
 * - test/fixtures/charts/probe (`tpl` and `lookup`) is pushed to a private OCI registry as
 *   `helm push` lays it out, pulled by the hub through a Registry object with its credentials
 *   and CA, and placed: `tpl` renders the value per edge, `lookup` answers empty.
 * - refusals at publish: a chart over MAX_CHART_BYTES, a chart whose own values render a
 *   pre-install hook, an OCI pull with wrong credentials, and a hub started without a renderer.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import type { ChartRelease } from '../core/chart.js';
import { edgeName, mailboxDocId } from '../core/ids.js';
import { readSpec, type SpecDoc } from '../core/mailbox.js';
import type { Manifest, Workload } from '../core/resources.js';
import type { EdgeAgent } from '../edge/agent.js';
import { startHub, type Hub } from '../hub/hub.js';
import { runCli } from './fixtures/cli.js';
import { CHARTS_DIR, helmBinary, pushChartToRegistry } from './fixtures/helm.js';
import {
  adminApi,
  startInProcessHub,
  startProcessAgents,
  stopAgents,
  stopInProcess,
  untilOnline,
} from './fixtures/in-process-fleet.js';
import { registryObject, startTestRegistry, type TestRegistry } from './fixtures/registry.js';
import { waitFor } from './helpers.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
let registry: TestRegistry;
const agents: EdgeAgent[] = [];

const cli = (args: string[]) => runCli(args, { env });

/** What edge `name` was given for workload `workload`: its manifests, or the error it was told. */
function onEdge(name: string, workload: string): { manifests: Manifest[]; error?: string } | undefined {
  const agent = agents.find((a) => a.config.name === name)!;
  const doc = agent.store.get<SpecDoc>(mailboxDocId(edgeName(name), 'spec'));
  const w = doc ? readSpec(doc).workloads[workload] : undefined;
  return w ? { manifests: w.manifests, ...(w.error ? { error: w.error } : {}) } : undefined;
}

function find(ms: Manifest[], kind: string, name: string): Record<string, any> {
  const m = ms.find((x) => x.kind === kind && x.metadata.name === name);
  if (!m) throw new Error(`no ${kind}/${name} in ${ms.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return m as Record<string, any>;
}

/** The versions of package `name` once its newest is Clean (`--scanner none` says so at once, after the push answers). */
async function clean(name: string): Promise<any[]> {
  return waitFor(async () => {
    const { items } = await adminApi(hub, 'GET', `/api/v1/projects/default/packages/${name}`);
    return items[0]?.scan.state === 'Clean' ? items : undefined;
  });
}

const command = (d: Record<string, any>): string => d.spec.template.spec.containers[0].command.join(' ');

async function build(chart: string): Promise<string> {
  const out = path.join(dir, `${chart}.tgz`);
  const r = await cli(['package', 'build', path.join(CHARTS_DIR, chart), '-o', out]);
  expect(r.code, r.stderr).toBe(0);
  return out;
}

function placement(name: string, pkg: Record<string, unknown>, site?: string) {
  return {
    kind: 'Placement',
    metadata: { name },
    spec: { edgeSelector: { matchLabels: site ? { fleet: 'shops', site } : { fleet: 'shops' } }, package: pkg },
  };
}

beforeAll(async () => {
  ({ dir, hub, env } = await startInProcessHub('outpost-charts-', { scanner: { kind: 'none' }, helm: helmBinary() }));
  await startProcessAgents(hub, dir, ['lyon'], { fleet: 'shops', site: 'lyon' }, agents);
  await startProcessAgents(hub, dir, ['oslo'], { fleet: 'shops', site: 'oslo' }, agents);
  await untilOnline(hub, 2);
  registry = await startTestRegistry(path.join(dir, 'registry'));
}, 120_000);

afterAll(async () => {
  await registry?.stop();
  await stopInProcess({ agents, hub, dir });
}, 60_000);

describe('Helm charts as packages', () => {
  it('renders a chart with a subchart per edge with the profile and edge values, drops its test hook, and runs it', async () => {
    const file = await build('shop');
    const push = await cli(['package', 'push', file]);
    expect(push.code, push.stderr).toBe(0);
    expect(push.stdout).toMatch(/^chart shop 1\.0\.0 published \((Pending|Clean)\): sha256:/);
    const items = await clean('shop');
    expect(items[0].chart).toEqual({
      version: '1.0.0',
      appVersion: '2.4',
      dependencies: [{ name: 'cache', version: '0.3.0' }],
    });
    expect(items[0].profiles).toEqual({ small: { replicas: 1, 'cache.size': 4 } });

    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [
        placement('web', {
          name: 'shop',
          version: '^1.0',
          profile: 'small',
          values: { greeting: 'bonjour', site: '{{ edge.labels.site }}' },
        }),
      ],
    });

    // The generated workload holds the chart to render, its digest and subchart versions, the values.
    const w = await adminApi<Workload>(hub, 'GET', '/api/v1/projects/default/workloads/web-shop');
    const release = w.spec.manifests[0] as unknown as ChartRelease;
    expect(release.kind).toBe('ChartRelease');
    expect(release.spec.chart).toMatchObject({
      name: 'shop',
      version: '1.0.0',
      digest: items[0].digest,
      dependencies: [{ name: 'cache', version: '0.3.0', path: 'shop/charts/cache' }],
    });
    expect(release.spec.values).toEqual({
      cache: { size: 4 },
      replicas: 1,
      greeting: 'bonjour',
      site: '{{ edge.labels.site }}',
    });

    for (const site of ['lyon', 'oslo']) {
      const got = await waitFor(
        () => (onEdge(site, 'web-shop')?.manifests.length ? onEdge(site, 'web-shop') : undefined),
        {
          what: `the shop chart rendered for ${site}`,
        },
      );
      expect(got.error).toBeUndefined();
      const ms = got.manifests;
      expect(ms.map((m) => `${m.kind}/${m.metadata.name}`).sort()).toEqual([
        'ConfigMap/web-config',
        'Deployment/web-cache',
        'Deployment/web-front',
      ]);
      expect(find(ms, 'ConfigMap', 'web-config').data).toEqual({ greeting: 'bonjour', site });
      expect(command(find(ms, 'Deployment', 'web-front'))).toContain(`echo bonjour from ${site}`);
      // The subchart, with the profile's value for it.
      expect(command(find(ms, 'Deployment', 'web-cache'))).toContain('echo cache 4MB');
      expect(find(ms, 'Deployment', 'web-front').metadata.labels['app.kubernetes.io/version']).toBe('2.4');
    }

    // Both edges run it.
    for (const a of agents)
      await waitFor(
        async () => {
          const ws = await a.driver.list();
          return ws.find((x) => x.name === 'web-shop')?.phase === 'Ready';
        },
        { timeout: 30_000, what: `web-shop ready on ${a.config.name}` },
      );
    const status = await cli(['rollout', 'status', 'placement', 'web']);
    expect(status.stdout).toContain('2/2 edges updated');
    const described = await cli(['describe', 'package', 'shop']);
    expect(described.stdout).toMatch(/Kind:\s+Package \(Helm chart\)/);
    expect(described.stdout).toMatch(/1\.0\.0\s+Clean\s+.*subcharts cache 0\.3\.0/);
  }, 120_000);

  it('tells each edge that a pre-install hook the values turn on cannot run', async () => {
    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [placement('mig', { name: 'shop', version: '1.0.0', values: { 'migrations.enabled': true } }, 'lyon')],
    });
    const got = await waitFor(() => onEdge('lyon', 'mig-shop')?.error, { what: 'the hook refusal on lyon' });
    expect(got).toContain('Job/mig-migrate (shop/templates/migrate.yaml) on pre-install, pre-upgrade');
    expect(got).toContain("need Helm's release lifecycle on a live cluster");
    expect(onEdge('oslo', 'mig-shop')).toBeUndefined();
  }, 60_000);

  it('pulls a chart using tpl and lookup from an OCI registry with credentials and renders it per edge', async () => {
    const file = await build('probe');
    const ref = await pushChartToRegistry(registry, file, 'charts/probe', { name: 'probe', version: '0.1.0' });

    // Without a Registry object for the host, the hub says what to apply.
    const none = await cli(['package', 'push', ref]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain(`no Registry object of project default is for ${registry.host}`);

    // Wrong credentials: refused, naming them.
    const bad = registryObject(registry);
    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [{ ...bad, spec: { ...bad.spec, credentials: { username: registry.username, password: 'wrong' } } }],
    });
    const denied = await cli(['package', 'push', ref]);
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toMatch(
      /registry private refused .*check the Registry's credentials|refused its credentials/,
    );

    await adminApi(hub, 'POST', '/api/v1/apply', { objects: [registryObject(registry)] });
    const push = await cli(['package', 'push', ref]);
    expect(push.code, push.stderr).toBe(0);
    expect(push.stdout).toMatch(/^chart probe 0\.1\.0 published/);
    const items = await clean('probe');
    expect(items[0].chart.source.reference).toBe(ref);
    expect(items[0].chart.source.manifestDigest).toMatch(/^sha256:[a-f0-9]{64}$/);

    await adminApi(hub, 'POST', '/api/v1/apply', {
      objects: [placement('probe', { name: 'probe', version: '0.1.0', values: { target: 'db.{{ edge.name }}' } })],
    });
    for (const site of ['lyon', 'oslo']) {
      const ms = await waitFor(
        () => (onEdge(site, 'probe-probe')?.manifests.length ? onEdge(site, 'probe-probe')!.manifests : undefined),
        {
          what: `the probe chart rendered for ${site}`,
        },
      );
      const pod = find(ms, 'Pod', 'probe-probe');
      // tpl rendered the value, which names the release and the edge's own target.
      expect(pod.spec.containers[0].command.join(' ')).toContain(`echo probe probing db.${site}`);
      // lookup answers empty: nothing is asked of a cluster.
      expect(pod.metadata.annotations['probe.outpost.dev/state']).toBe('absent');
    }
  }, 120_000);

  it('refuses a chart over the size bound and a chart whose own values render a lifecycle hook', async () => {
    // Over MAX_CHART_BYTES: random bytes do not compress.
    const big = path.join(dir, 'big');
    fs.cpSync(path.join(CHARTS_DIR, 'probe'), big, { recursive: true });
    fs.writeFileSync(path.join(big, 'Chart.yaml'), 'apiVersion: v2\nname: big\nversion: 1.0.0\n');
    fs.writeFileSync(
      path.join(big, 'blob.bin'),
      Buffer.from(Array.from({ length: 5 * 1024 * 1024 }, () => Math.floor(Math.random() * 256))),
    );
    const bigTgz = path.join(dir, 'big.tgz');
    expect((await cli(['package', 'build', big, '-o', bigTgz])).code).toBe(0);
    const tooBig = await cli(['package', 'push', bigTgz]);
    expect(tooBig.code).not.toBe(0);
    expect(tooBig.stderr).toContain('MAX_CHART_BYTES');

    // A hook its own values turn on: refused at publish, naming the hook.
    const hooked = path.join(dir, 'hooked');
    fs.cpSync(path.join(CHARTS_DIR, 'shop'), hooked, { recursive: true });
    fs.writeFileSync(
      path.join(hooked, 'Chart.yaml'),
      fs.readFileSync(path.join(hooked, 'Chart.yaml'), 'utf8').replace('name: shop', 'name: hooked'),
    );
    fs.writeFileSync(
      path.join(hooked, 'values.yaml'),
      fs.readFileSync(path.join(hooked, 'values.yaml'), 'utf8').replace('enabled: false', 'enabled: true'),
    );
    const hookedTgz = path.join(dir, 'hooked.tgz');
    expect((await cli(['package', 'build', hooked, '-o', hookedTgz])).code).toBe(0);
    const refused = await cli(['package', 'push', hookedTgz]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('Job/hooked-migrate (hooked/templates/migrate.yaml) on pre-install, pre-upgrade');
    // A dependency Chart.yaml names but charts/ lacks: Helm's own check, before anything renders.
    const lacking = path.join(dir, 'lacking');
    fs.cpSync(path.join(CHARTS_DIR, 'shop'), lacking, { recursive: true });
    fs.writeFileSync(
      path.join(lacking, 'Chart.yaml'),
      fs.readFileSync(path.join(lacking, 'Chart.yaml'), 'utf8').replace('name: shop', 'name: lacking'),
    );
    fs.rmSync(path.join(lacking, 'charts'), { recursive: true });
    const lackingTgz = path.join(dir, 'lacking.tgz');
    expect((await cli(['package', 'build', lacking, '-o', lackingTgz])).code).toBe(0);
    const missing = await cli(['package', 'push', lackingTgz]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('found in Chart.yaml, but missing in charts/ directory: cache');

    const { items } = await adminApi(hub, 'GET', '/api/v1/projects/default/packages');
    expect(items.map((p: { name: string }) => p.name).sort()).toEqual(['probe', 'shop']);
  }, 60_000);

  it("publishes the example chart (examples/charts/greeter) and renders its placement's values for an edge", async () => {
    const out = path.join(dir, 'greeter.tgz');
    const b = await cli([
      'package',
      'build',
      path.join(import.meta.dirname, '..', 'examples', 'charts', 'greeter'),
      '-o',
      out,
    ]);
    expect(b.code, b.stderr).toBe(0);
    const push = await cli(['package', 'push', out]);
    expect(push.code, push.stderr).toBe(0);
    await clean('greeter');
    const example = YAML.parse(
      fs.readFileSync(path.join(import.meta.dirname, '..', 'examples', 'charts', 'greeter-placement.yaml'), 'utf8'),
    );
    example.spec.edgeSelector = { matchLabels: { site: 'oslo' } };
    await adminApi(hub, 'POST', '/api/v1/apply', { objects: [example] });
    const ms = await waitFor(() =>
      onEdge('oslo', 'greeter-eu-greeter')?.manifests.length
        ? onEdge('oslo', 'greeter-eu-greeter')!.manifests
        : undefined,
    );
    expect(find(ms, 'ConfigMap', 'greeter-eu-greeting').data).toEqual({ greeting: 'bonjour from oslo' });
  }, 60_000);

  it('renders again after a hub restart without rewriting or restarting what the edges run', async () => {
    const agent = agents.find((a) => a.config.name === 'lyon')!;
    const spec = () =>
      readSpec(agent.store.get<SpecDoc>(mailboxDocId(edgeName('lyon'), 'spec'))!).workloads['web-shop']!;
    const before = spec();
    const running = (await agent.driver.list()).find((w) => w.name === 'web-shop')!;
    await hub.close();
    hub = await startHub({
      dataDir: path.join(dir, 'hub'),
      listen: new URL(hub.url).host,
      insecureHttp: true,
      scanner: { kind: 'none' },
      helm: helmBinary(),
    });
    await untilOnline(hub, 2);
    // Renderings are kept in memory: the restarted hub renders again, and finds what the edges run.
    await waitFor(() => hub.charts.version('default') > 0, { what: 'a rendering after the restart' });
    await waitFor(
      async () => {
        const out = (await cli(['rollout', 'status', 'placement', 'web'])).stdout;
        return out.includes('2/2 edges updated') && !out.includes('(under way)');
      },
      { what: 'web complete after the restart, its renderings done' },
    );
    const after = spec();
    expect(after.generation).toBe(before.generation);
    expect(after.manifests).toEqual(before.manifests);
    const still = (await agent.driver.list()).find((w) => w.name === 'web-shop')!;
    expect(still).toMatchObject({ hash: running.hash, restarts: 0, phase: 'Ready' });
  }, 90_000);

  it('refuses charts on a hub started without a renderer, naming --helm', async () => {
    const other = await startInProcessHub('outpost-charts-nohelm-', { scanner: { kind: 'none' } });
    try {
      const r = await runCli(['package', 'push', await build('probe')], { env: other.env });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('the hub has no chart renderer: start it with --helm PATH');
    } finally {
      await stopInProcess({ hub: other.hub, dir: other.dir });
    }
  }, 60_000);
});
