/**
 * @module Test helpers for the process driver, shared by process.test.ts and the agent fixture
 * (which must build byte-identical units, or the adoption test would see a different hash).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Manifest } from '../../../core/resources.js';
import type { WorkloadUnit } from '../driver.js';
import { readStat, signalGroup } from './proc.js';

export const BUSYBOX = '/bin/busybox';

export function unit(name: string, manifests: unknown[], generation = 1): WorkloadUnit {
  const hash = createHash('sha256').update(JSON.stringify(manifests)).digest('hex').slice(0, 16);
  return { name, generation, hash, manifests: manifests as Manifest[] };
}

/**
 * A Pod serving HTTP on 127.0.0.1:port with a body that contains `version`. With busybox it serves
 * a ConfigMap volume (so the volume path and `$(VAR)` expansion are exercised too); without, a
 * tiny node server reads the version from its env.
 */
export function httpWorkload(name: string, opts: { port: number; version: string }): WorkloadUnit {
  const html = `<html><body>outpost test ${opts.version}</body></html>\n`;
  const container = existsSync(BUSYBOX)
    ? {
        command: [BUSYBOX, 'httpd', '-f', '-p', `127.0.0.1:${opts.port}`, '-h', '$(OUTPOST_VOLUME_WWW)'],
        volumeMounts: [{ name: 'www', mountPath: '/www' }],
      }
    : {
        command: [
          process.execPath,
          '-e',
          `require('http').createServer((q,s)=>s.end('outpost test '+process.env.OUTPOST_TEST_VERSION)).listen(${opts.port},'127.0.0.1')`,
        ],
        volumeMounts: [{ name: 'www', mountPath: '/www' }],
      };
  return unit(name, [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-www` }, data: { 'index.html': html } },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: {
        terminationGracePeriodSeconds: 2,
        volumes: [{ name: 'www', configMap: { name: `${name}-www` } }],
        containers: [
          {
            name: 'web',
            image: 'busybox:1.36',
            ...container,
            env: [{ name: 'OUTPOST_TEST_VERSION', value: opts.version }],
            ports: [{ containerPort: opts.port, name: 'http' }],
            readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 0.2, failureThreshold: 2 },
          },
        ],
      },
    },
  ]);
}

export function shWorkload(name: string, script: string, podSpec: Record<string, unknown> = {}): WorkloadUnit {
  return unit(name, [
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: {
        terminationGracePeriodSeconds: 1,
        ...podSpec,
        containers: [{ name: 'main', command: ['/bin/sh', '-c', script] }],
      },
    },
  ]);
}

export function tickerWorkload(name: string): WorkloadUnit {
  return shWorkload(name, 'i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.2; done');
}

export function crashingWorkload(name: string): WorkloadUnit {
  return shWorkload(name, 'echo starting; sleep 0.3; echo failing >&2; exit 3');
}

interface StateFile {
  processes: Record<string, { pid: number; startTime: number }>;
}

async function states(dataDir: string): Promise<Map<string, StateFile>> {
  const out = new Map<string, StateFile>();
  const root = join(dataDir, 'workloads');
  for (const name of await readdir(root).catch(() => [] as string[])) {
    try {
      out.set(name, JSON.parse(await readFile(join(root, name, 'state.json'), 'utf8')) as StateFile);
    } catch {
      // Not a workload of ours.
    }
  }
  return out;
}

/**
 * Which processes run for a workload, as `pid@starttime` read from /proc now (`pid@gone` when the
 * recorded pid does not run with the recorded start time). Changes whenever anything restarted.
 */
export async function identity(dataDir: string, name: string): Promise<string> {
  const st = (await states(dataDir)).get(name);
  if (!st) throw new Error(`no state file for ${name}`);
  return Object.entries(st.processes)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, p]) => {
      const now = readStat(p.pid);
      return `${key}:${p.pid}@${now && now.startTime === p.startTime && now.state !== 'Z' ? now.startTime : 'gone'}`;
    })
    .join(',');
}

/** Kills every process any state file under dataDir records: the safety net after a failed test. */
export async function killAll(dataDir: string): Promise<void> {
  for (const st of (await states(dataDir)).values()) {
    for (const p of Object.values(st.processes))
      if (p.pid > 0) signalGroup({ pid: p.pid, startTime: p.startTime }, 'SIGKILL');
  }
}
