/**
 * @module The launcher of a switch to a staged release, with a health gate and rollback
 * (docs/operations.md, "switching and rolling back"), acting on the state file of
 * edge/upgrade/switch.ts:
 *
 * At start `outpost edge` (the launcher, `launch()` below) finding `trial` counts the start in the
 * file *before* the new binary runs, then runs it as its child with OUTPOST_UPGRADE_TRIAL set and
 * watches it: the new agent writes `healthy` once it has opened its replica, connected to the hub
 * and finished a reconcile pass. A new binary that reports another version than its release
 * writes why (`trial-refused`) and exits before the agent starts: the launcher rolls back with
 * that reason. Healthy within the deadline: the launcher writes `committed`, stops the child and
 * replaces itself with the new binary (process.execve: same pid for systemd). The child exits first
 * or the deadline passes: the child is killed, the file says `rolled-back` with the reason, which
 * ends with the last lines the child wrote on stderr (edge/upgrade/stderr-tail.ts; passed on to
 * the launcher's stderr as they come), and the old binary runs on. A start finding `trial` already
 * counted (the launcher was killed, the host rebooted mid-switch) rolls back too: the start
 * counter, checked before the new binary runs. Each commit and rollback goes into the file's
 * history in the same write.
 *
 * The data directory's lock (edge/agent-lock.ts) is handed over, not shared: the launcher holds it
 * until it starts the new binary, the new agent takes it (recording its launcher), and the launcher
 * takes it back when the trial ends, ending first a trial agent that still holds it (a release that
 * is a wrapper script leaves its real binary running when the script is stopped). A launcher that
 * was killed mid-trial and started again takes it back the same way at its start: the orphan is
 * ended, then the start counter rolls the switch back. Everything here after the lock is taken
 * back runs with no other agent on the directory (the snapshot restore, `rolled-back`).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { processRef, type AgentLock } from '../agent-lock.js';
import { restoreIfMigrated } from './snapshot.js';
import { StderrTail, withStderrTail } from './stderr-tail.js';
import {
  committedBinary,
  endSwitch,
  healthyFile,
  LAUNCHED_ENV,
  LAUNCHER_ENV,
  readUpgradeState,
  TRIAL_ENV,
  trialRefusedFile,
  writeUpgradeState,
  type UpgradeState,
} from './switch.js';

/** How long the launcher waits, after the new binary exited, for the last of its stderr. */
const STDERR_DRAIN_MS = 2_000;

export interface LaunchLog {
  info(o: object, msg: string): void;
  error(o: object, msg: string): void;
}

/**
 * Call in `outpost edge` before the agent starts, with the data directory's lock held. Returns
 * when this process should run the agent itself (no switch pending, launched by a launcher, or
 * rolled back with no release committed before), with the lock held; replaces the process with the
 * committed binary (`committedBinary`) otherwise and does not return (the exec drops the lock; the
 * committed binary takes it at its start).
 */
export async function launch(
  dataDir: string,
  log: LaunchLog,
  lock: AgentLock,
  version: string,
): Promise<UpgradeState | undefined> {
  if (process.env[LAUNCHED_ENV] !== undefined) {
    delete process.env[LAUNCHED_ENV];
    const s = readUpgradeState(dataDir);
    if (process.env[TRIAL_ENV] && s?.state === 'trial') refuseWrongVersion(dataDir, s, version);
    return s;
  }
  let s = readUpgradeState(dataDir);
  if (s?.state === 'trial') s = await trial(dataDir, s, log, lock);
  if (s?.state === 'committed' && !fs.existsSync(s.binary))
    s = rollBack(dataDir, s, `the committed binary ${s.binary} is gone`, log);
  const binary = committedBinary(s);
  if (binary && !fs.existsSync(binary)) {
    log.error({ binary }, 'the release committed before the rolled-back one is gone: running this binary');
  } else if (binary) {
    log.info(
      { version: s!.state === 'committed' ? s!.version : s!.previousVersion, binary },
      'running the committed agent release',
    );
    // argv.slice(2) is the program's arguments both under node (node, script, ...) and as the
    // single executable (exe, exe, ...).
    process.execve!(binary, [binary, ...process.argv.slice(2)], {
      ...stringEnv(process.env),
      [LAUNCHED_ENV]: '1',
    });
  }
  return s;
}

/**
 * In the binary on trial, before the agent starts: a release whose binary reports another version
 * than the one it was signed as (`agent push --release-version` given a wrong one) would commit and
 * then never match its order. It says why for the launcher, which rolls back with that reason.
 */
function refuseWrongVersion(dataDir: string, s: UpgradeState, version: string): void {
  if (version === s.version) return;
  const reason = `its binary reports version ${version}, not ${s.version}: the release was signed with a version its binary does not report; push the binary again without --release-version (it is signed as the version it reports)`;
  fs.writeFileSync(trialRefusedFile(dataDir), reason);
  throw new Error(`release ${s.version}: ${reason}`);
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

function rollBack(dataDir: string, s: UpgradeState, reason: string, log: LaunchLog): UpgradeState {
  if (s.snapshot) {
    // The new binary is stopped: put the replica back if it migrated it (edge/upgrade/snapshot.ts).
    try {
      const what = restoreIfMigrated(path.join(dataDir, 'edge.db'), s.snapshot);
      log.info({ snapshot: s.snapshot, replica: what }, 'rollback: replica snapshot checked');
    } catch (err) {
      log.error({ err, snapshot: s.snapshot }, 'rollback: the replica snapshot could not be restored');
    }
  }
  const r = endSwitch(s, 'rolled-back', new Date().toISOString(), reason);
  writeUpgradeState(dataDir, r);
  log.error(
    { version: s.version, previousVersion: s.previousVersion, reason },
    `RolledBack: release ${s.version} did not pass the health gate; running the previous binary`,
  );
  return r;
}

async function trial(dataDir: string, s: UpgradeState, log: LaunchLog, lock: AgentLock): Promise<UpgradeState> {
  if (s.starts > 0) {
    // The launcher died mid-trial; its child may live on (KillMode=process keeps it, and so does
    // a plain kill -9). A trial agent holding the lock was ended when this start took it; the
    // child itself (a wrapper script, a release that predates the lock) is ended here.
    endOrphanedTrial(dataDir, s, log);
    return rollBack(
      dataDir,
      s,
      `the switch to ${s.version} was interrupted before it committed (the agent restarted during the trial)`,
      log,
    );
  }
  // The start counter: counted (and on disk) before the new binary runs.
  writeUpgradeState(dataDir, { ...s, starts: s.starts + 1 });
  const healthy = healthyFile(dataDir);
  fs.rmSync(healthy, { force: true });
  log.info({ version: s.version, binary: s.binary, deadlineMs: s.deadlineMs }, 'switching: starting the new binary');
  const me = processRef();
  // The new agent takes the lock at its start (a process started after this line and before it
  // could take it first: then the new agent refuses, exits, and this launcher cannot take the lock
  // back and exits too; one agent either way).
  lock.release();
  const child = spawn(s.binary, process.argv.slice(2), {
    env: { ...process.env, [LAUNCHED_ENV]: '1', [TRIAL_ENV]: healthy, [LAUNCHER_ENV]: `${me.pid}:${me.start ?? ''}` },
    // Its stderr through this process: passed on as it comes, its last lines kept for the reason.
    stdio: ['inherit', 'inherit', 'pipe'],
  });
  const tail = new StderrTail();
  const stderrClosed = new Promise<void>((resolve) => {
    if (!child.stderr) return resolve();
    child.stderr.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      tail.push(chunk);
    });
    child.stderr.once('close', () => resolve());
  });
  /** Once the child is gone: the rest of its stderr (bounded: a process it left may hold the pipe), then no more. */
  const stderrDone = async () => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([stderrClosed, new Promise<void>((r) => (timer = setTimeout(r, STDERR_DRAIN_MS)))]);
    clearTimeout(timer);
    child.stderr?.destroy();
  };
  if (child.pid) writeUpgradeState(dataDir, { ...s, starts: s.starts + 1, trialPid: child.pid });
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`it could not start: ${err.message}`));
    child.once('exit', (code, signal) =>
      resolve(`it exited (${signal ? `signal ${signal}` : `code ${code}`}) before it connected and reconciled`),
    );
  });
  const forward = (sig: NodeJS.Signals) => child.kill(sig);
  process.on('SIGTERM', forward);
  process.on('SIGINT', forward);
  const deadline = Date.now() + s.deadlineMs;
  let failure: string | undefined;
  let done = false;
  void exited.then((why) => {
    failure ??= why;
    done = true;
  });
  while (!done && !fs.existsSync(healthy) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  if (!done && !fs.existsSync(healthy))
    failure = `it did not connect to the hub and reconcile within ${Math.round(s.deadlineMs / 1000)} s`;
  // The new binary refused to run and said why (refuseWrongVersion): that is the reason, not its exit.
  const refused = readTrialRefused(dataDir);
  if (refused) failure = refused;
  if (failure === undefined && fs.existsSync(healthy)) {
    writeUpgradeState(dataDir, endSwitch({ ...s, starts: s.starts + 1 }, 'committed', new Date().toISOString()));
    log.info({ version: s.version }, 'the new binary is healthy: committed');
    child.kill('SIGTERM');
    await exited;
    await stderrDone();
    process.off('SIGTERM', forward);
    process.off('SIGINT', forward);
    // Back before the committed binary replaces this process: no agent of the trial lingers.
    await lock.acquire();
    return readUpgradeState(dataDir)!;
  }
  child.kill('SIGKILL');
  await exited;
  await stderrDone();
  process.off('SIGTERM', forward);
  process.off('SIGINT', forward);
  // Before the snapshot is restored and the old binary runs: the real agent of a wrapper script
  // outlives the script; taking the lock back ends it.
  await lock.acquire();
  // A binary that refused said why itself; any other failure ends with what the binary wrote on stderr.
  return rollBack(dataDir, s, withStderrTail(`release ${s.version}: ${failure}`, refused ? [] : tail.lines()), log);
}

function readTrialRefused(dataDir: string): string | undefined {
  try {
    const why = fs.readFileSync(trialRefusedFile(dataDir), 'utf8').trim().slice(0, 900);
    fs.rmSync(trialRefusedFile(dataDir), { force: true });
    return why || undefined;
  } catch {
    return undefined;
  }
}

/** Kills the trial child of a launcher that died, if that pid still is it (its environment names the trial). */
function endOrphanedTrial(dataDir: string, s: UpgradeState, log: LaunchLog): void {
  if (!s.trialPid) return;
  let environ: string;
  try {
    environ = fs.readFileSync(`/proc/${s.trialPid}/environ`, 'latin1');
  } catch {
    return; // gone
  }
  if (!environ.split('\0').includes(`${TRIAL_ENV}=${healthyFile(dataDir)}`)) return;
  log.info({ pid: s.trialPid, version: s.version }, 'ending the new binary left on trial by an interrupted switch');
  try {
    process.kill(s.trialPid, 'SIGKILL');
  } catch {
    /* gone meanwhile */
  }
}

/** Starts `outpost edge` again in this process (same pid, same arguments): the launcher then switches. */
export function restartSelf(sea: boolean): never {
  const args = sea
    ? [process.execPath, ...process.argv.slice(2)]
    : [process.execPath, ...process.execArgv, ...process.argv.slice(1)];
  process.execve!(process.execPath, args, stringEnv(process.env));
  throw new Error('process.execve returned');
}
