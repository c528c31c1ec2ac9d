import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../test/helpers.js';
import {
  EDGE_MALLOC_ENV,
  EDGE_V8_ARGS,
  EDGE_V8_OPTIONS,
  restoreEnvironment,
  TUNED_ENV,
  tunedLaunch,
} from './process-settings.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const base = { execPath: '/usr/bin/node', execArgv: ['--import', 'tsx'], sea: false };

describe('edge process settings: the launch', () => {
  it('node: keeps the Node flags and the script; the settings go in the environment, ahead of the operator NODE_OPTIONS', () => {
    const l = tunedLaunch({
      ...base,
      env: { PATH: '/bin', NODE_OPTIONS: '--max-semi-space-size=4' },
      argv: ['/usr/bin/node', '/app/main.ts', 'edge', '--data', '/d'],
    })!;
    expect(l.file).toBe('/usr/bin/node');
    expect(l.args).toEqual([
      '/usr/bin/node',
      ...EDGE_V8_ARGS,
      '--import',
      'tsx',
      '/app/main.ts',
      'edge',
      '--data',
      '/d',
    ]);
    expect(l.env.NODE_OPTIONS).toBe(`${EDGE_V8_OPTIONS.join(' ')} --max-semi-space-size=4`);
    for (const [k, v] of Object.entries(EDGE_MALLOC_ENV)) expect(l.env[k]).toBe(v);
    expect(l.env.PATH).toBe('/bin');
  });

  it('single executable: program arguments only (it takes no Node flags on its command line)', () => {
    const l = tunedLaunch({
      ...base,
      sea: true,
      env: {},
      execPath: '/usr/local/bin/outpost',
      argv: ['/usr/local/bin/outpost', '/usr/local/bin/outpost', 'edge'],
    })!;
    expect(l.args).toEqual(['/usr/local/bin/outpost', 'edge']);
  });

  it('not again once tuned, and not with OUTPOST_EDGE_TUNING=off', () => {
    expect(tunedLaunch({ ...base, env: { [TUNED_ENV]: '' }, argv: ['n', 's'] })).toBeUndefined();
    expect(tunedLaunch({ ...base, env: { OUTPOST_EDGE_TUNING: 'off' }, argv: ['n', 's'] })).toBeUndefined();
    expect(tunedLaunch({ ...base, env: { OUTPOST_EDGE_TUNING: 'OFF' }, argv: ['n', 's'] })).toBeUndefined();
  });

  it('the operator malloc settings win, and survive the clean-up; ours are removed', () => {
    const l = tunedLaunch({
      ...base,
      env: { MALLOC_ARENA_MAX: '2', NODE_OPTIONS: '--trace-warnings' },
      argv: ['n', 's'],
    })!;
    expect(l.env.MALLOC_ARENA_MAX).toBe('2');
    const env: NodeJS.ProcessEnv = { ...l.env };
    expect(restoreEnvironment(env)).toBe(true);
    expect(env).toEqual({ MALLOC_ARENA_MAX: '2', NODE_OPTIONS: '--trace-warnings' });
    const none = tunedLaunch({ ...base, env: {}, argv: ['n', 's'] })!;
    const env2: NodeJS.ProcessEnv = { ...none.env };
    restoreEnvironment(env2);
    expect(env2).toEqual({});
    expect(restoreEnvironment({})).toBe(false);
  });
});

/** Runs a script that applies the settings the way `outpost edge` does, then reports on itself. */
function runProbe(env: Record<string, string>): Record<string, any> {
  const dir = tempDir('outpost-tuning-');
  dirs.push(dir);
  const script = path.join(dir, 'probe.mts');
  fs.writeFileSync(
    script,
    `
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import { applyEdgeProcessSettings } from ${JSON.stringify(path.join(HERE, 'process-settings.ts'))};
const started = process.env.PROBE_PID ?? String(process.pid);
if (!process.env.PROBE_PID) process.env.PROBE_PID = String(process.pid);
const tuning = applyEdgeProcessSettings((m) => process.stderr.write(m + '\\n'));
const status = fs.readFileSync('/proc/self/status', 'utf8');
process.stdout.write(JSON.stringify({
  tuning,
  samePid: started === String(process.pid),
  argv: process.argv.slice(2),
  startEnv: fs.readFileSync('/proc/self/environ', 'utf8').split('\\0').filter(Boolean),
  env: { NODE_OPTIONS: process.env.NODE_OPTIONS ?? null, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? null },
  childEnv: execFileSync('/usr/bin/env', { encoding: 'utf8' }).split('\\n').filter((l) => /^(NODE_OPTIONS|MALLOC_|OUTPOST_EDGE)/.test(l)),
  threads: Number(/Threads:\\s+(\\d+)/.exec(status)[1]),
}));
`,
  );
  const r = spawnSync(process.execPath, ['--import', 'tsx', script, 'edge', '--data', '/x y'], {
    cwd: path.join(HERE, '..'),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout);
}

describe('edge process settings: a real re-exec', () => {
  it('the same process starts again with the settings, keeps its arguments, and hands children a clean environment', () => {
    const tuned = runProbe({ NODE_OPTIONS: '--trace-warnings' });
    expect(tuned.tuning).toBe('tuned');
    expect(tuned.samePid).toBe(true);
    expect(tuned.argv).toEqual(['edge', '--data', '/x y']);
    expect(tuned.startEnv).toContain(`NODE_OPTIONS=${EDGE_V8_OPTIONS.join(' ')} --trace-warnings`);
    for (const [k, v] of Object.entries(EDGE_MALLOC_ENV)) expect(tuned.startEnv).toContain(`${k}=${v}`);
    expect(tuned.env).toEqual({ NODE_OPTIONS: '--trace-warnings', MALLOC_ARENA_MAX: null });
    expect(tuned.childEnv).toEqual(['NODE_OPTIONS=--trace-warnings']);

    const off = runProbe({ OUTPOST_EDGE_TUNING: 'off' });
    expect(off.tuning).toBe('off');
    expect(off.startEnv.some((l: string) => l.startsWith('MALLOC_'))).toBe(false);
    // --v8-pool-size=1: three fewer V8 platform worker threads than Node's default four.
    expect(off.threads - tuned.threads).toBe(3);
  });
});
