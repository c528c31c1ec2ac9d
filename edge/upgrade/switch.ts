/**
 * @module The switch to a staged release, with a health gate and rollback (docs/operations.md,
 * "switching and rolling back"). One state file, `DATA/agent/upgrade.json`, written by rename:
 *
 * - `trial`: the agent staged a release (edge/upgrade/release.ts), wrote this with `starts: 0`,
 *   closed itself and re-executed itself. At start `outpost edge` (the launcher, `launch()` below)
 *   counts the start in the file *before* the new binary runs, then runs it as its child with
 *   OUTPOST_UPGRADE_TRIAL set and watches it: the new agent writes `healthy` once it has opened its
 *   replica, connected to the hub and finished a reconcile pass. A new binary that reports another
 *   version than its release writes why (`trial-refused`) and exits before the agent starts: the
 *   launcher rolls back with that reason. Healthy within the deadline: the
 *   launcher writes `committed`, stops the child and replaces itself with the new binary
 *   (process.execve: same pid for systemd). The child exits first or the deadline passes: the
 *   child is killed, the file says `rolled-back` with the reason and the old binary runs on.
 *   A start finding `trial` already counted (the launcher was killed, the host rebooted mid-switch)
 *   rolls back too: the start counter, checked before the new binary runs.
 * - `committed`: every start of `outpost edge` replaces itself with the committed binary.
 * - `rolled-back`: the old binary runs (the release committed before, if any: `previousBinary`, else
 *   the binary started); the reason stays for `outpost edge local status`.
 *
 * The data directory's lock (edge/agent-lock.ts) is handed over, not shared: the launcher holds it
 * until it starts the new binary, the new agent takes it (recording its launcher), and the launcher
 * takes it back when the trial ends, ending first a trial agent that still holds it (a release that
 * is a wrapper script leaves its real binary running when the script is stopped). A launcher that
 * was killed mid-trial and started again takes it back the same way at its start: the orphan is
 * ended, then the start counter rolls the switch back. Everything here after the lock is taken
 * back runs with no other agent on the directory (the snapshot restore, `rolled-back`).
 *
 * The file keeps the digest of the release switched to and of the one committed before
 * (`digest`, `previousDigest`): what the edge compares an order with (edge/upgrade/orders.ts).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { processRef, type AgentLock, type ProcessRef } from '../agent-lock.js';
import type { InstalledVersion } from '../../core/release.js';
import { restoreIfMigrated } from './snapshot.js';

/** Set in the environment of a binary the launcher started: it runs the agent, it does not launch again. */
export const LAUNCHED_ENV = 'OUTPOST_UPGRADE_LAUNCHED';
/** Set for a binary on trial: the path of the marker it writes once healthy. */
export const TRIAL_ENV = 'OUTPOST_UPGRADE_TRIAL';
/**
 * Set for a binary on trial: its launcher as `PID:START` (edge/agent-lock.ts ProcessRef). The trial
 * agent records it with the data directory's lock, so a launcher restarted after this one died
 * knows the agent holding the lock is an orphaned trial, and ends it.
 */
export const LAUNCHER_ENV = 'OUTPOST_UPGRADE_LAUNCHER';
/** Default time the new binary has to connect and reconcile. */
export const DEFAULT_SWITCH_DEADLINE_MS = 120_000;

export interface UpgradeState {
  state: 'trial' | 'committed' | 'rolled-back';
  version: string;
  binary: string;
  /** The version running before the switch. */
  previousVersion: string;
  /** Starts of the new binary counted so far (the start counter). */
  starts: number;
  deadlineMs: number;
  /** The pid of the new binary on trial, so an interrupted trial's child can be found and ended. */
  trialPid?: number;
  at: string;
  reason?: string;
  /** The hub's order this switch carries out (`UPGRADE@DIGEST`, edge/upgrade/orders.ts); absent for a local upgrade. */
  order?: string;
  /** The replica snapshot taken before the switch (edge/upgrade/snapshot.ts), restored on rollback if migrated. */
  snapshot?: string;
  /**
   * The binary of the release committed before this switch, if any: a rollback returns to it, on
   * this start and every later one (without it, the next start would run the binary the service
   * unit names, older than what was committed).
   */
  previousBinary?: string;
  /** The version of `previousBinary`: what a rollback returns to, and the floor a downgrade is measured from. */
  previousBinaryVersion?: string;
  /**
   * The digest of the release's binary (the signed one): what the edge compares an order with to
   * know whether it runs that release already (a version string says nothing of the bytes).
   */
  digest?: string;
  /** The digest of `previousBinary`. */
  previousDigest?: string;
}

export const agentDir = (dataDir: string): string => path.join(dataDir, 'agent');
const stateFile = (dataDir: string): string => path.join(agentDir(dataDir), 'upgrade.json');
const healthyFile = (dataDir: string): string => path.join(agentDir(dataDir), 'healthy');
/** Where a binary on trial says why it refuses to run, before it exits (`launch`). */
const trialRefusedFile = (dataDir: string): string => path.join(agentDir(dataDir), 'trial-refused');

export function readUpgradeState(dataDir: string): UpgradeState | undefined {
  try {
    return JSON.parse(fs.readFileSync(stateFile(dataDir), 'utf8')) as UpgradeState;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(
      `${stateFile(dataDir)} is unreadable (${(err as Error).message}): remove it to run the binary installed by hand`,
    );
  }
}

function writeUpgradeState(dataDir: string, s: UpgradeState): void {
  fs.mkdirSync(agentDir(dataDir), { recursive: true, mode: 0o700 });
  const tmp = `${stateFile(dataDir)}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  fs.writeSync(fd, JSON.stringify(s, null, 2));
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(tmp, stateFile(dataDir));
}

/** Records a staged binary as on trial; the next start of `outpost edge` switches to it. */
export function requestSwitch(
  dataDir: string,
  staged: { version: string; binary: string; digest: string },
  previousVersion: string,
  deadlineMs = DEFAULT_SWITCH_DEADLINE_MS,
  extra: { order?: string; snapshot?: string } = {},
): UpgradeState {
  const before = readUpgradeState(dataDir);
  const previousBinary = committedBinary(before);
  const previousBinaryVersion = committedVersion(before);
  const previousDigest = committedDigest(before);
  fs.rmSync(trialRefusedFile(dataDir), { force: true });
  const s: UpgradeState = {
    state: 'trial',
    version: staged.version,
    binary: staged.binary,
    previousVersion,
    starts: 0,
    deadlineMs,
    at: new Date().toISOString(),
    ...(extra.order ? { order: extra.order } : {}),
    ...(extra.snapshot ? { snapshot: extra.snapshot } : {}),
    ...(previousBinary ? { previousBinary } : {}),
    ...(previousBinary && previousBinaryVersion ? { previousBinaryVersion } : {}),
    digest: staged.digest,
    ...(previousBinary && previousDigest ? { previousDigest } : {}),
  };
  fs.rmSync(healthyFile(dataDir), { force: true });
  writeUpgradeState(dataDir, s);
  return s;
}

/**
 * The committed release binary a start runs, if any: the committed one, or after a rollback the one
 * committed before the failed switch. Undefined: the binary that was started (the unit's) runs.
 */
export function committedBinary(s: UpgradeState | undefined): string | undefined {
  if (s?.state === 'committed') return s.binary;
  if (s?.state === 'rolled-back') return s.previousBinary;
  return undefined;
}

/**
 * The version of the release committed on this edge, if any: the committed one, or during a trial
 * and after a rollback the one committed before (a state written before `previousBinaryVersion`
 * existed does not know it: undefined).
 */
export function committedVersion(s: UpgradeState | undefined): string | undefined {
  if (s?.state === 'committed') return s.version;
  if (s?.state === 'rolled-back' || s?.state === 'trial') return s.previousBinaryVersion;
  return undefined;
}

/**
 * The digest of the release binary committed on this edge, if known: the committed one, or during
 * a trial and after a rollback the one committed before. A state written before digests were kept
 * has the committed one in its order key (`UPGRADE@DIGEST`); one from a local upgrade does not.
 */
export function committedDigest(s: UpgradeState | undefined): string | undefined {
  if (s?.state === 'committed') return s.digest ?? /@(sha256:[0-9a-f]{64})$/.exec(s.order ?? '')?.[1];
  if (s?.state === 'rolled-back' || s?.state === 'trial') return s.previousDigest;
  return undefined;
}

/**
 * The digest of the binary this agent runs, when it knows it: on trial, the release being tried;
 * else the release committed (or committed before a rollback). Undefined: the binary the service
 * unit names, installed by hand (an order of the same version then switches it once, to bytes
 * it knows).
 */
export function runningDigest(s: UpgradeState | undefined, onTrial: boolean): string | undefined {
  if (onTrial && s?.state === 'trial') return s.digest;
  return committedDigest(s);
}

/**
 * The versions a release must not be older than unless a downgrade is allowed (core/release.ts
 * downgradeRefusal): the one this agent runs and the release committed on this edge. Both count:
 * a committed binary may report another version than its release says, and a binary installed by
 * hand runs with nothing committed.
 */
export function installedVersions(dataDir: string, running: string): InstalledVersion[] {
  const committed = committedVersion(readUpgradeState(dataDir));
  return [
    { version: running, what: 'the version this agent runs' },
    ...(committed ? [{ version: committed, what: 'the release committed on this edge' }] : []),
  ];
}

/** In a binary on trial: tells the launcher this agent is healthy (replica open, connected, reconciled). */
export function markHealthy(env: NodeJS.ProcessEnv = process.env): void {
  const file = env[TRIAL_ENV];
  if (file) fs.writeFileSync(file, new Date().toISOString());
}

export interface LaunchLog {
  info(o: object, msg: string): void;
  error(o: object, msg: string): void;
}

/**
 * In a binary on trial: the launcher that started it, from the environment (then removed from it,
 * so the workloads this agent starts do not inherit it). Undefined outside a trial.
 */
export function trialLauncher(env: NodeJS.ProcessEnv = process.env): ProcessRef | undefined {
  const v = env[LAUNCHER_ENV];
  delete env[LAUNCHER_ENV];
  const m = v ? /^(\d+):(\d*)$/.exec(v) : null;
  if (!m) return undefined;
  return m[2] ? { pid: Number(m[1]), start: m[2] } : { pid: Number(m[1]) };
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
  const r: UpgradeState = { ...s, state: 'rolled-back', reason, at: new Date().toISOString() };
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
    stdio: 'inherit',
  });
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
    writeUpgradeState(dataDir, { ...s, starts: s.starts + 1, state: 'committed', at: new Date().toISOString() });
    log.info({ version: s.version }, 'the new binary is healthy: committed');
    child.kill('SIGTERM');
    await exited;
    process.off('SIGTERM', forward);
    process.off('SIGINT', forward);
    // Back before the committed binary replaces this process: no agent of the trial lingers.
    await lock.acquire();
    return readUpgradeState(dataDir)!;
  }
  child.kill('SIGKILL');
  await exited;
  process.off('SIGTERM', forward);
  process.off('SIGINT', forward);
  // Before the snapshot is restored and the old binary runs: the real agent of a wrapper script
  // outlives the script; taking the lock back ends it.
  await lock.acquire();
  return rollBack(dataDir, s, `release ${s.version}: ${failure}`, log);
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
