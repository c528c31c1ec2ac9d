import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { driverSuite } from '../driver.case.js';
import { createProcessDriver, type ProcessDriverOptions } from './index.js';
import { crashingWorkload, httpWorkload, identity, killAll, tickerWorkload, unit } from './testing.js';

driverSuite('process', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'outpost-process-'));
  const opts: ProcessDriverOptions = { dataDir, pollMs: 100, backoffBaseMs: 200 };
  return {
    driver: createProcessDriver(opts),
    restart: async () => createProcessDriver(opts),
    workload: httpWorkload,
    crashing: crashingWorkload,
    // An image without a command: fine for a container runtime, meaningless for a host process.
    invalid: (name) => unit(name, [{ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'main', image: 'nginx:1.27' }] } }]),
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
