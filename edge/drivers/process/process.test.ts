import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { driverSuite, freePort } from '../../../test/fixtures/driver-suite.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver, WorkloadObservation } from '../driver.js';
import { createProcessDriver, type ProcessDriverOptions } from './index.js';
import { groupMembers, readStat } from './proc.js';
import {
  crashingWorkload,
  httpWorkload,
  identity,
  killAll,
  shWorkload,
  tickerWorkload,
  unit,
} from '../../../test/fixtures/process-workloads.js';

driverSuite('process', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'outpost-process-'));
  const opts: ProcessDriverOptions = { dataDir, pollMs: 100, backoffBaseMs: 200 };
  return {
    driver: createProcessDriver(opts),
    restart: async () => createProcessDriver(opts),
    workload: httpWorkload,
    crashing: crashingWorkload,
    // An image without a command: fine for a container runtime, meaningless for a host process.
    invalid: (name) =>
      unit(name, [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name },
          spec: { containers: [{ name: 'main', image: 'nginx:1.27' }] },
        },
      ]),
    ticker: tickerWorkload,
    identity: (name) => identity(dataDir, name),
    foreign: async (name) => {
      // A directory without a state file, as an operator or a cut-short remove might leave.
      await mkdir(join(dataDir, 'workloads', name), { recursive: true });
      await writeFile(join(dataDir, 'workloads', name, 'notes.txt'), 'not a workload\n');
    },
    capabilities: { exec: true },
    cleanup: async () => {
      await killAll(dataDir);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
});

describe('process driver specifics', () => {
  let dataDir: string;
  let drivers: Driver[];
  const children: ChildProcess[] = [];

  const make = async (extra: Partial<ProcessDriverOptions> = {}): Promise<Driver> => {
    const d = createProcessDriver({ dataDir, pollMs: 100, backoffBaseMs: 200, ...extra });
    drivers.push(d);
    await d.start();
    return d;
  };
  const phase = (
    d: Driver,
    name: string,
    pred: (o: WorkloadObservation) => boolean,
    what: string,
  ): Promise<WorkloadObservation> =>
    waitFor(
      async () => {
        const o = (await d.list()).find((w) => w.name === name);
        return o && pred(o) ? o : undefined;
      },
      { what: `${name} ${what}` },
    );
  /** Another program listening on `port` of 127.0.0.1 (killed after the test). */
  const squat = async (port: number): Promise<ChildProcess> => {
    const c = spawn(
      process.execPath,
      ['-e', `require('net').createServer().listen(${port}, '127.0.0.1', () => console.log('up'))`],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    children.push(c);
    await waitFor(() => new Promise<boolean>((r) => c.stdout!.once('data', () => r(true))), {
      what: `a listener on port ${port}`,
    });
    return c;
  };
  const statePids = async (name: string): Promise<Record<string, { pid: number; startTime: number }>> =>
    (
      JSON.parse(await readFile(join(dataDir, 'workloads', name, 'state.json'), 'utf8')) as {
        processes: Record<string, { pid: number; startTime: number }>;
      }
    ).processes;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'outpost-process-'));
    drivers = [];
  });

  afterEach(async () => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const d of drivers) await d.close().catch(() => undefined);
    await killAll(dataDir);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps the workload running when the agent is killed with -9, and a new agent adopts it', async () => {
    const port = await freePort();
    const fixture = fileURLToPath(new URL('../../../test/fakes/process-agent.ts', import.meta.url));
    const agent = spawn(process.execPath, ['--import', 'tsx', fixture, dataDir, 'survivor', String(port), 'v1'], {
      cwd: fileURLToPath(new URL('../../../', import.meta.url)),
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, OUTPOST_LOG_LEVEL: 'silent' },
    });
    children.push(agent);
    let out = '';
    let errOut = '';
    agent.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    agent.stderr!.on('data', (b: Buffer) => (errOut += b.toString()));
    const pid = Number(
      await waitFor(async () => /READY (\d+)/.exec(out)?.[1], {
        what: `the fixture agent to report READY (stderr: ${errOut})`,
        timeout: 60_000,
      }),
    );
    agent.kill('SIGKILL');
    await waitFor(async () => agent.exitCode !== null || agent.signalCode !== null, {
      what: 'the fixture agent to die',
    });

    expect(readStat(pid)?.state).not.toBe('Z');
    expect(await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text())).toContain('v1');

    const d = await make();
    const o = await phase(d, 'survivor', (w) => w.phase === 'Ready', 'to be Ready after adoption');
    expect(o.restarts).toBe(0);
    expect(o.hash).toBe(httpWorkload('survivor', { port, version: 'v1' }).hash);
    expect((await statePids('survivor')).web.pid).toBe(pid);
    // Supervision resumed: the adopted process is watched and restarted although it is not our child.
    process.kill(pid, 'SIGKILL');
    const after = await phase(
      d,
      'survivor',
      (w) => w.restarts === 1 && w.phase !== 'Failed',
      'to notice the exit and restart',
    );
    expect(after.restarts).toBe(1);
    await waitFor(
      async () =>
        (await statePids('survivor')).web.pid !== pid &&
        (await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text())).includes('v1'),
      { what: 'a new pid serving again' },
    );
    await d.remove('survivor');
  });

  it('starts again what died while no agent ran, including after a reboot, and never signals a reused pid', async () => {
    const d1 = await make();
    await d1.apply(tickerWorkload('again'));
    await phase(d1, 'again', (w) => w.phase === 'Ready', 'to be Ready');
    await d1.close();
    const first = (await statePids('again')).main;
    // The wrapper forks the command a moment after it starts.
    await waitFor(async () => groupMembers(first).some((p) => p !== first.pid), {
      what: 'the command under the wrapper',
    });
    // Only the wrapper dies: the command it ran lingers in the group, as a half-killed process would.
    process.kill(first.pid, 'SIGKILL');
    await waitFor(async () => readStat(first.pid) === null || readStat(first.pid)?.state === 'Z', {
      what: 'the wrapper to die',
    });

    const d2 = await make();
    const o = await phase(d2, 'again', (w) => w.phase !== 'Pending' && w.restarts === 1, 'to be restarted once');
    expect(o.restarts).toBe(1);
    await waitFor(async () => !(await identity(dataDir, 'again')).includes('gone'), { what: 'a new process running' });
    expect(groupMembers(first)).toEqual([]);
    await d2.close();

    // A reboot: the recorded pid now belongs to a stranger (this test process stands in for it).
    const stateFile = join(dataDir, 'workloads', 'again', 'state.json');
    const st = JSON.parse(await readFile(stateFile, 'utf8'));
    const second = st.processes.main;
    // A reboot ends the whole group, not just the wrapper.
    process.kill(-second.pid, 'SIGKILL');
    st.bootId = 'another-boot';
    st.processes.main.pid = process.pid;
    st.processes.main.startTime = readStat(process.pid)!.startTime;
    await writeFile(stateFile, JSON.stringify(st));
    const d3 = await make();
    const o3 = await phase(d3, 'again', (w) => w.restarts === 2, 'to start it again after the reboot');
    expect(o3.restarts).toBe(2);
    expect((await statePids('again')).main.pid).not.toBe(process.pid);
  });

  it('passes ConfigMaps and Secrets as env and as files, secrets with mode 0600', async () => {
    const d = await make();
    await d.apply(
      unit('config', [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'settings' },
          data: { MODE: 'fast', 'app.conf': 'level=3\n' },
        },
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'creds' },
          data: { token: Buffer.from('s3cr3t').toString('base64') },
          stringData: { user: 'edge' },
        },
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'config' },
          spec: {
            replicas: 1,
            template: {
              spec: {
                volumes: [
                  { name: 'conf', configMap: { name: 'settings', items: [{ key: 'app.conf', path: 'etc/app.conf' }] } },
                  { name: 'creds', secret: { secretName: 'creds' } },
                ],
                containers: [
                  {
                    name: 'app',
                    command: ['/bin/sh', '-c', 'echo "started $(OUTPOST_VOLUME_CONF)"; sleep 1000'],
                    env: [
                      { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'creds', key: 'token' } } },
                      { name: 'MODE_COPY', valueFrom: { configMapKeyRef: { name: 'settings', key: 'MODE' } } },
                      { name: 'GREETING', value: 'hello $(MODE_COPY)' },
                      { name: 'MISSING', valueFrom: { configMapKeyRef: { name: 'nope', key: 'x', optional: true } } },
                    ],
                    envFrom: [{ configMapRef: { name: 'settings' }, prefix: 'CM_' }, { secretRef: { name: 'creds' } }],
                    volumeMounts: [
                      { name: 'conf', mountPath: '/etc/app' },
                      { name: 'creds', mountPath: '/run/creds' },
                    ],
                  },
                ],
              },
            },
          },
        },
      ]),
    );
    await phase(d, 'config', (w) => w.phase === 'Ready', 'to be Ready');
    const env = await d.exec(
      'config',
      [
        'sh',
        '-c',
        'echo "$TOKEN|$MODE_COPY|$GREETING|$CM_MODE|$user|${MISSING-unset}|$OUTPOST_REPLICA"; cat "$OUTPOST_VOLUME_CONF/etc/app.conf"; cat "$OUTPOST_VOLUME_CREDS/token"; echo; pwd',
      ],
      {},
    );
    const lines = env.stdout.split('\n');
    expect(lines[0]).toBe('s3cr3t|fast|hello fast|fast|edge|unset|0');
    expect(lines[1]).toBe('level=3');
    expect(lines[2]).toBe('s3cr3t');
    expect(lines[3]).toBe(join(dataDir, 'workloads', 'config', 'work'));
    const secretFile = join(dataDir, 'workloads', 'config', 'volumes', 'creds', 'token');
    expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dataDir, 'workloads', 'config', 'volumes', 'conf', 'etc', 'app.conf'))).mode & 0o777).toBe(
      0o644,
    );
    // The agent's own environment (tokens, settings) does not leak into workloads.
    expect((await d.exec('config', ['sh', '-c', 'echo "${VITEST-none}"'], {})).stdout.trim()).toBe('none');
  });

  it('runs each Deployment replica as its own process with OUTPOST_REPLICA and its own log', async () => {
    const d = await make();
    await d.apply(
      unit('fleet', [
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'fleet' },
          spec: {
            replicas: 3,
            template: {
              spec: {
                terminationGracePeriodSeconds: 1,
                containers: [
                  { name: 'worker', command: ['/bin/sh', '-c', 'echo "replica $OUTPOST_REPLICA"; exec sleep 1000'] },
                ],
              },
            },
          },
        },
      ]),
    );
    const o = await phase(d, 'fleet', (w) => w.phase === 'Ready', 'to be Ready');
    expect(o.objects['Deployment/fleet']).toEqual({ ready: true, message: '3/3 replicas ready' });
    const pids = await statePids('fleet');
    expect(Object.keys(pids).sort()).toEqual(['worker-0', 'worker-1', 'worker-2']);
    expect(new Set(Object.values(pids).map((p) => p.pid)).size).toBe(3);
    for (const i of [0, 1, 2]) {
      await waitFor(
        async () => {
          const lines: string[] = [];
          for await (const l of d.logs('fleet', { container: `worker-${i}` })) lines.push(l);
          return lines.includes(`replica ${i}`);
        },
        { what: `replica ${i} log` },
      );
    }
    await d.remove('fleet');
    for (const p of Object.values(pids))
      expect(
        readStat(p.pid) === null || readStat(p.pid)!.startTime !== p.startTime || readStat(p.pid)!.state === 'Z',
      ).toBe(true);
  });

  it('fails workloads it cannot run with a message naming the field and the fix', async () => {
    const d = await make();
    const cases: [string, unknown, RegExp][] = [
      [
        'cron',
        { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'cron' }, spec: {} },
        /kind CronJob is not supported by the process driver; use a Pod or a Deployment/,
      ],
      [
        'nocmd',
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'nocmd' },
          spec: { containers: [{ name: 'app', image: 'nginx' }] },
        },
        /spec\.containers\[0\]\.command is required .* set command/,
      ],
      [
        'wide',
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'wide' },
          spec: {
            replicas: 2,
            template: { spec: { containers: [{ name: 'web', command: ['true'], ports: [{ containerPort: 8080 }] }] } },
          },
        },
        /replicas > 1 with containerPort 8080 cannot share the host port; use replicas: 1 or no port/,
      ],
      [
        'noref',
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'noref' },
          spec: {
            containers: [
              {
                name: 'app',
                command: ['true'],
                env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 'gone', key: 'k' } } }],
              },
            ],
          },
        },
        /env\[0\]\.valueFrom\.secretKeyRef .* Secret "gone".* add it or set optional: true/,
      ],
    ];
    for (const [name, manifest, message] of cases) {
      await d.apply(unit(name, [manifest]));
      const o = await phase(d, name, (w) => w.phase === 'Failed', 'to be Failed');
      expect(o.message).toMatch(message);
      expect(Object.values(o.objects).every((x) => !x.ready)).toBe(true);
      expect(await d.endpoint(name, 8080)).toBeNull();
    }
  });

  it('follows restartPolicy: Never fails on a non-zero exit, OnFailure does not restart a success', async () => {
    const d = await make();
    await d.apply(shWorkload('never', 'exit 4', { restartPolicy: 'Never' }));
    await d.apply(shWorkload('done', 'echo done', { restartPolicy: 'OnFailure' }));
    const never = await phase(d, 'never', (w) => w.phase === 'Failed', 'to be Failed');
    expect(never.restarts).toBe(0);
    expect(never.message).toMatch(/exited with code 4 and restartPolicy is Never/);
    const done = await phase(
      d,
      'done',
      (w) => w.objects['Pod/done']?.message === 'completed (exit code 0)' || false,
      'to complete',
    );
    expect(done.restarts).toBe(0);
    expect(done.phase).toBe('Ready');
  });

  it('restarts a process whose liveness probe fails and reports readiness from its readiness probe', async () => {
    const d = await make();
    const flag = join(dataDir, 'unhealthy');
    const port = await freePort();
    await d.apply(
      unit('probed', [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'probed' },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'app',
                command: ['/bin/sh', '-c', 'exec sleep 1000'],
                ports: [{ containerPort: port }],
                livenessProbe: {
                  exec: { command: ['/bin/sh', '-c', `test ! -e ${flag}`] },
                  periodSeconds: 0.2,
                  failureThreshold: 2,
                },
                readinessProbe: { tcpSocket: { port }, periodSeconds: 0.2, failureThreshold: 1 },
              },
            ],
          },
        },
      ]),
    );
    // Nothing listens on the port: running, live, but not ready.
    const waiting = await phase(d, 'probed', (w) => /readiness probe/.test(w.message ?? ''), 'to wait for readiness');
    expect(waiting.phase).toBe('Progressing');
    await writeFile(flag, '');
    const o = await phase(d, 'probed', (w) => w.restarts >= 1, 'to be restarted by the liveness probe');
    expect(o.phase).not.toBe('Ready');
    await rm(flag);
  });

  it("fails a port probe that reaches another program's listener, and names it (the workload never listened)", async () => {
    const d = await make();
    const port = await freePort();
    // Another program on the host holds the port (an earlier server not gone yet, as an operator's
    // trial left one): the probe connects, but not to the workload.
    const squatter = await squat(port);
    await d.apply(
      shWorkload(
        'squatted',
        'exec sleep 1000',
        {},
        {
          readinessProbe: { tcpSocket: { port }, periodSeconds: 0.2, failureThreshold: 1 },
        },
      ),
    );
    const held = `port ${port} is held by pid ${squatter.pid} (node), not by this workload: stop that process or change the port`;
    const o = await phase(d, 'squatted', (w) => (w.message ?? '').includes(held), 'to name the port holder');
    expect(o.phase).toBe('Progressing');
    expect(o.message).toBe(`Pod/squatted: waiting for the readiness probe: ${held}`);
    // Probed five times more: never Ready.
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await d.list()).find((w) => w.name === 'squatted')!.phase).toBe('Progressing');
  });

  it('says which program holds a port a process declares when it exits failing (it could not bind)', async () => {
    const d = await make();
    const port = await freePort();
    const squatter = await squat(port);
    await d.apply(shWorkload('unbound', 'sleep 0.2; exit 1', {}, { ports: [{ containerPort: port }] }));
    const o = await phase(
      d,
      'unbound',
      (w) => w.phase === 'Degraded' && /back-off/.test(w.message ?? ''),
      'to back off',
    );
    expect(o.message).toContain(
      `Pod/unbound: exited with code 1 (port ${port} is held by pid ${squatter.pid} (node), not by this workload: stop that process or change the port); restarting in`,
    );
  });

  it('is Progressing until first ready, and Degraded when a ready process loses readiness', async () => {
    const d = await make();
    const flag = join(dataDir, 'ready');
    await d.apply(
      unit('flaky', [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'flaky' },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'app',
                command: ['sleep', '1000'],
                readinessProbe: { exec: { command: ['test', '-e', flag] }, periodSeconds: 0.2, failureThreshold: 1 },
              },
            ],
          },
        },
      ]),
    );
    expect(
      (await phase(d, 'flaky', (w) => w.message === 'Pod/flaky: waiting for the readiness probe', 'to wait')).phase,
    ).toBe('Progressing');
    await writeFile(flag, '');
    await phase(d, 'flaky', (w) => w.phase === 'Ready', 'to be Ready');
    await rm(flag);
    const o = await phase(d, 'flaky', (w) => w.phase === 'Degraded', 'to be Degraded');
    expect(o.message).toBe('Pod/flaky: readiness probe failing');
    expect(o.objects['Pod/flaky']).toEqual({ ready: false, message: 'readiness probe failing' });
    expect(o.restarts).toBe(0);
  });

  it('rotates log files by size and keeps the configured number', async () => {
    const d = await make({ logMaxBytes: 4_000, logKeep: 2 });
    await d.apply(
      shWorkload(
        'chatty',
        // Four lines per fork of sleep (one line per fork took over 30 s to reach line 400 on a busy
        // machine); about 9 KB/s, so a rotated file stays near its limit between the 1 s checks.
        'i=0; while true; do for j in 0 1 2 3; do echo "line $i padding padding padding padding padding"; i=$((i+1)); done; sleep 0.02; done',
      ),
    );
    const logDir = join(dataDir, 'workloads', 'chatty', 'logs');
    await waitFor(async () => (await readdir(logDir)).includes('main.log.2'), { what: 'two rotated files' });
    await waitFor(
      async () => {
        const tail: string[] = [];
        for await (const l of d.logs('chatty', { tail: 1 })) tail.push(l);
        return Number(/line (\d+)/.exec(tail[0] ?? '')?.[1] ?? 0) > 400;
      },
      { what: 'a third rotation', timeout: 60_000 },
    );
    const files = await readdir(logDir);
    expect(files.filter((f) => !f.endsWith('.times')).sort()).toEqual(['main.log', 'main.log.1', 'main.log.2']);
    // Beside them only their time indexes (logs --since), rotated with them.
    for (const f of files.filter((x) => x.endsWith('.times'))) expect(files).toContain(f.slice(0, -'.times'.length));
    await waitFor(async () => (await readdir(logDir)).includes('main.log.2.times'), {
      what: 'the rotated copy with its index',
    });
    for (const f of ['main.log.1', 'main.log.2']) expect((await stat(join(logDir, f))).size).toBeLessThan(20_000);
  });

  it('kills the whole process group on remove, including children of the command', async () => {
    const d = await make();
    await d.apply(shWorkload('family', 'sleep 1000 & echo "child $!"; wait'));
    const log: string[] = [];
    const childPid = Number(
      await waitFor(
        async () => {
          log.length = 0;
          for await (const l of d.logs('family', {})) log.push(l);
          return /child (\d+)/.exec(log.join('\n'))?.[1];
        },
        { what: 'the child pid in the log' },
      ),
    );
    const start = readStat(childPid)!.startTime;
    await d.remove('family');
    const gone = (): boolean =>
      readStat(childPid) === null || readStat(childPid)!.startTime !== start || readStat(childPid)!.state === 'Z';
    await waitFor(async () => gone(), { what: 'the child to be gone' });
    await expect(readdir(join(dataDir, 'workloads'))).resolves.toEqual([]);
  });
});
