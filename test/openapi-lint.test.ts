/**
 * The hub's OpenAPI document, as a running hub serves it, passes `redocly lint` (the recommended
 * rules of @redocly/cli, a dev dependency): path parameters declared, servers, operation ids,
 * error responses. Run offline: telemetry and update checks are off. The Project routes are in it.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startHub, type Hub } from '../hub/hub.js';
import { HubClient } from '../cli/client.js';
import { tempDir } from './helpers.js';

const run = promisify(execFile);
let dir: string;
let hub: Hub;

beforeAll(async () => {
  dir = tempDir('outpost-openapi-');
  hub = await startHub({ dataDir: path.join(dir, 'hub'), listen: '127.0.0.1:0' });
});

afterAll(async () => {
  await hub?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('the served OpenAPI document is lint-clean under redocly lint', async () => {
  const client = new HubClient({ hub: hub.url, token: hub.adminToken, ca: hub.caPem });
  const doc = await client.get<{ servers?: unknown[] }>('/api/v1/openapi.json');
  expect(doc.servers?.length).toBeGreaterThan(0);
  const file = path.join(dir, 'openapi.json');
  fs.writeFileSync(file, JSON.stringify(doc));
  const cli = path.join(process.cwd(), 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
  const r = await run(process.execPath, [cli, 'lint', file, '--format=json'], {
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
    maxBuffer: 16 * 1024 * 1024,
  }).catch((err: { code?: number; stdout?: string; stderr?: string }) => err);
  const report = JSON.parse(String(r.stdout)) as { totals: { errors: number; warnings: number }; problems: unknown[] };
  expect(report.problems).toEqual([]);
  expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
}, 60_000);

it('documents the Project routes (docs/projects.md) with the Project schema', async () => {
  const client = new HubClient({ hub: hub.url, token: hub.adminToken, ca: hub.caPem });
  const doc = await client.get<{ paths: Record<string, Record<string, any>>; components: { schemas: any } }>(
    '/api/v1/openapi.json',
  );
  expect(Object.keys(doc.paths['/api/v1/projects'] ?? {})).toEqual(expect.arrayContaining(['get', 'post']));
  const one = doc.paths['/api/v1/projects/{project}'] ?? {};
  expect(Object.keys(one)).toEqual(expect.arrayContaining(['get', 'put', 'patch', 'delete']));
  expect(Object.keys(one.delete.responses)).toContain('202');
  expect(one.delete.parameters.map((p: { name: string }) => p.name)).toEqual(['moveEdgesTo', 'decommissionEdges']);
  expect(doc.components.schemas.Project.properties.spec).toBeTruthy();
});
