/**
 * Edges whose clock is off (issue 14, item 11), with real hub and edge processes: the edge's clock
 * is moved by libfaketime (Debian package faketime, build/setup.sh). One 2 h behind connects
 * (hub certificates start a day in the past); one 400 days ahead cannot (the hub's certificate
 * has expired by its clock) and says why, with the TLS reason, in its log at warn and in
 * `outpost edge local status`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, waitFor } from './helpers.js';
import { cli, freePort, Proc, startHubProc, type HubProc } from './procs.js';

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

let dir: string;
let hub: HubProc;
let env: Record<string, string>;
const procs: Proc[] = [];

/** The environment that moves a process's wall clock by `offset` (e.g. -2h, +400d); timers keep real time. */
const skewed = (offset: string) => ({
  LD_PRELOAD: LIBFAKETIME,
  FAKETIME: offset,
  FAKETIME_DONT_FAKE_MONOTONIC: '1',
  FAKETIME_DONT_RESET: '1',
});

async function joinToken(): Promise<string> {
  const t = await cli(['token', 'create'], env);
  expect(t.code).toBe(0);
  return t.stdout.trim();
}

function startEdge(name: string, data: string, extraEnv: Record<string, string>, token?: string): Proc {
  const p = new Proc(
    [
      'edge',
      '--data',
      data,
      '--hub',
      hub.url,
      ...(token ? ['--join-token', token] : []),
      '--name',
      name,
      '--driver',
      'process',
    ],
    extraEnv,
  );
  procs.push(p);
  return p;
}

const connected = async (name: string): Promise<boolean> => {
  const r = await cli(['get', 'edge', name, '-o', 'json'], env);
  return r.code === 0 && !!JSON.parse(r.stdout).status?.connectedSince;
};

beforeAll(async () => {
  expect(fs.existsSync(LIBFAKETIME), `${LIBFAKETIME} missing: apt-get install faketime (build/setup.sh)`).toBe(true);
  dir = tempDir();
  hub = await startHubProc(path.join(dir, 'hub'), await freePort());
  procs.push(hub.proc);
  env = { OUTPOST_HUB: hub.url, OUTPOST_TOKEN: hub.token, OUTPOST_CONFIG: path.join(dir, 'none.json') };
});

afterAll(async () => {
  for (const p of procs) await p.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('edges whose clock is off', () => {
  it('an edge 2 h behind enrolls and connects', async () => {
    const edge = startEdge('behind-2h', path.join(dir, 'behind'), skewed('-2h'), await joinToken());
    await waitFor(() => connected('behind-2h'), {
      timeout: 30_000,
      what: `edge 2 h behind connected; its log: ${edge.out.slice(-1500)}`,
    });
  });

  it('an edge 400 days ahead says why it cannot connect (TLS reason) in its log at warn and in local status', async () => {
    const data = path.join(dir, 'ahead');
    const first = startEdge('ahead-400d', data, {}, await joinToken());
    await waitFor(() => connected('ahead-400d'), { timeout: 30_000, what: 'edge connected with a good clock' });
    await first.kill('SIGTERM');
    // OUTPOST_TEST_LOG: the agent logs to stdout under vitest too (core/logger.ts).
    const edge = startEdge('ahead-400d', data, {
      ...skewed('+400d'),
      OUTPOST_TEST_LOG: '1',
      OUTPOST_LOG_LEVEL: 'info',
    });
    const status = await waitFor(
      async () => {
        const r = await cli(['edge', 'local', 'status', '--data', data]);
        return /cannot reach the hub/.test(r.stdout) ? r.stdout : null;
      },
      { timeout: 30_000, what: `local status naming the connection error; edge log: ${edge.out.slice(-1500)}` },
    );
    expect(status).toMatch(/CERT_HAS_EXPIRED/);
    expect(status).toMatch(/fix the clock/);
    const warn = edge.out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .find((l) => /cannot connect to the hub/.test(l.msg));
    expect(warn?.level, edge.out.slice(-3000)).toBe(40);
  });
});
