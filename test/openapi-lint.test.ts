/**
 * The hub's OpenAPI document, as a running hub serves it, passes `redocly lint` (the recommended
 * rules of @redocly/cli, a dev dependency): path parameters declared, servers, operation ids,
 * error responses. Run offline: telemetry and update checks are off.
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
