/**
 * A stand-in agent for the survival test: starts a process driver on argv's data dir, applies the
 * test HTTP workload, prints `READY <pid>` once it is Ready, then idles until it is killed (-9).
 * Usage: node --import tsx process-agent.ts DATA_DIR NAME PORT VERSION
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createProcessDriver } from '../../edge/drivers/process/index.js';
import { httpWorkload } from '../fixtures/process-workloads.js';

const [dataDir, name, port, version] = process.argv.slice(2);
const driver = createProcessDriver({ dataDir, pollMs: 100, backoffBaseMs: 200 });
await driver.start();
await driver.apply(httpWorkload(name, { port: Number(port), version }));
const deadline = Date.now() + 30_000;
for (;;) {
  const w = (await driver.list()).find((x) => x.name === name);
  if (w?.phase === 'Ready') break;
  if (Date.now() > deadline) {
    console.error(`not Ready in time: ${JSON.stringify(w)}`);
    process.exit(1);
  }
  await new Promise((r) => setTimeout(r, 100));
}
const state = JSON.parse(await readFile(join(dataDir, 'workloads', name, 'state.json'), 'utf8')) as {
  processes: Record<string, { pid: number }>;
};
console.log(`READY ${state.processes.web.pid}`);
// Keep the event loop busy like a real agent would; the test kills us with SIGKILL.
setInterval(() => undefined, 60_000);
