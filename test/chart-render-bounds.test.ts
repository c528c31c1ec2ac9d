/**
 * Issue 45, part 2: the hub's chart renderer (hub/catalog/helm.ts) runs outpost-helm (build/helm,
 * Helm's own library) with a time bound and an output bound, and refuses what Helm refuses. Real
 * charts written here, the real renderer; the bounds are the renderer's constructor arguments
 * (CHART_RENDER_TIMEOUT_MS and MAX_CHART_RENDER_OUTPUT_BYTES in the hub), small so the test is quick.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChartRenderError, HelmRenderer } from '../hub/catalog/helm.js';
import { CHARTS_DIR, helmBinary } from './fixtures/helm.js';
import { tempDir } from './helpers.js';

let dir: string;

/** Writes chart NAME with `template` as its one template, packed as Helm lays a chart out. */
async function chart(name: string, template: string): Promise<string> {
  const d = path.join(dir, name);
  fs.mkdirSync(path.join(d, 'templates'), { recursive: true });
  fs.writeFileSync(path.join(d, 'Chart.yaml'), `apiVersion: v2\nname: ${name}\nversion: 0.1.0\n`);
  fs.writeFileSync(path.join(d, 'templates', 'a.yaml'), template);
  const file = path.join(dir, `${name}.tgz`);
  await tar.c({ gzip: true, file, cwd: dir, portable: true }, [name]);
  return file;
}

beforeAll(() => {
  dir = tempDir('outpost-chart-bounds-');
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the chart renderer', () => {
  it('stops a rendering past its time bound, as a transient failure', async () => {
    // 400 million loop turns: far longer than the bound on any machine.
    const file = await chart('slow', '{{- range until 20000 }}{{ range until 20000 }}{{ end }}{{ end }}\n');
    const helm = new HelmRenderer(helmBinary(), { timeoutMs: 1_500, maxOutputBytes: 1024 * 1024 });
    const err = await helm
      .render({ chart: file, release: 'r', namespace: 'default', values: {} })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChartRenderError);
    expect((err as ChartRenderError).message).toContain(
      'took longer than 1.5 s (CHART_RENDER_TIMEOUT_MS) and was stopped',
    );
    expect((err as ChartRenderError).transient).toBe(true);
  }, 30_000);

  it('stops a rendering past its output bound', async () => {
    const file = await chart(
      'loud',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: loud }\ndata:\n{{- range $i := until 20000 }}\n  k{{ $i }}: {{ repeat 100 "x" | quote }}\n{{- end }}\n',
    );
    const helm = new HelmRenderer(helmBinary(), { timeoutMs: 20_000, maxOutputBytes: 256 * 1024 });
    const err = await helm
      .render({ chart: file, release: 'r', namespace: 'default', values: {} })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChartRenderError);
    expect((err as ChartRenderError).message).toContain(
      'rendered more than 262144 bytes (MAX_CHART_RENDER_OUTPUT_BYTES)',
    );
  }, 30_000);

  it("passes Helm's own refusals on (a required value missing)", async () => {
    const file = await chart(
      'strict',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: {{ required "name is required" .Values.name }} }\n',
    );
    const helm = new HelmRenderer(helmBinary());
    await expect(helm.render({ chart: file, release: 'r', namespace: 'default', values: {} })).rejects.toThrow(
      /^helm: .*name is required/,
    );
    const ok = await helm.render({ chart: file, release: 'r', namespace: 'default', values: { name: 'n1' } });
    expect(ok.manifest).toContain('name: n1');
  }, 30_000);

  it('reads a chart: its version, subcharts with theirs, values and profiles', async () => {
    const file = path.join(dir, 'shop.tgz');
    await tar.c({ gzip: true, file, cwd: CHARTS_DIR, portable: true }, ['shop']);
    const info = await new HelmRenderer(helmBinary()).inspect(file);
    expect(info).toMatchObject({
      name: 'shop',
      version: '1.0.0',
      appVersion: '2.4',
      dependencies: [{ name: 'cache', version: '0.3.0', path: 'shop/charts/cache' }],
      profiles: { small: { replicas: 1, cache: { size: 4 } } },
    });
  }, 30_000);
});
