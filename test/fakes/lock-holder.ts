/**
 * A stand-in process for edge/agent-lock.test.ts: takes the data directory's lock the way
 * `outpost edge` does, optionally as a release on trial of LAUNCHER (`PID:START`), starts a child
 * (`sleep`, as an agent starts workloads) and prints `LOCKED <child pid>`, then idles until killed.
 * With OUTPOST_FAKE_IGNORE_TERM=1 it ignores SIGTERM, like a hung agent.
 * Usage: node --import tsx lock-holder.ts DATA_DIR [LAUNCHER]
 */
import { spawn } from 'node:child_process';
import { AgentLock } from '../../edge/agent-lock.js';
import { trialLauncher } from '../../edge/upgrade/switch.js';

const [dataDir, launcher] = process.argv.slice(2);
if (process.env.OUTPOST_FAKE_IGNORE_TERM) process.on('SIGTERM', () => undefined);
const ref = trialLauncher({ OUTPOST_UPGRADE_LAUNCHER: launcher });
const lock = new AgentLock(dataDir!, { what: 'lock-holder (test double)', ...(ref ? { launcher: ref } : {}) });
await lock.acquire();
const child = spawn('sleep', ['600'], { stdio: 'ignore' });
console.log(`LOCKED ${child.pid}`);
setInterval(() => undefined, 60_000);
