/**
 * @module The state of a switch to a staged agent release (docs/operations.md, "switching and
 * rolling back"): one file, `DATA/agent/upgrade.json`, written by rename. The launcher that acts
 * on it (runs the new binary on trial, commits or rolls back) is edge/upgrade/launcher.ts.
 *
 * - `trial`: the agent staged a release (edge/upgrade/release.ts), wrote this with `starts: 0`,
 *   closed itself and re-executed itself; the next start of `outpost edge` switches.
 * - `committed`: every start of `outpost edge` replaces itself with the committed binary.
 * - `rolled-back`: the old binary runs (the release committed before, if any: `previousBinary`, else
 *   the binary started); the reason stays for `outpost edge local status`.
 *
 * The file keeps the digest of the release switched to and of the one committed before
 * (`digest`, `previousDigest`): what the edge compares an order with (edge/upgrade/orders.ts); and
 * the switches that ended (`history`, newest first, at most RELEASE_HISTORY_MAX), each written in
 * the same rename as the state it ended in, so the history never disagrees with the state.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ProcessRef } from '../agent-lock.js';
import type { InstalledVersion } from '../../core/release.js';
import { RELEASE_HISTORY_MAX, type AgentReleaseSwitch } from '../../core/resources.js';

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
  /** The switches that ended on this edge, newest first (at most RELEASE_HISTORY_MAX). */
  history?: AgentReleaseSwitch[];
}

export const agentDir = (dataDir: string): string => path.join(dataDir, 'agent');
const stateFile = (dataDir: string): string => path.join(agentDir(dataDir), 'upgrade.json');
export const healthyFile = (dataDir: string): string => path.join(agentDir(dataDir), 'healthy');
/** Where a binary on trial says why it refuses to run, before it exits (launcher.ts). */
export const trialRefusedFile = (dataDir: string): string => path.join(agentDir(dataDir), 'trial-refused');

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

export function writeUpgradeState(dataDir: string, s: UpgradeState): void {
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
    ...(before?.history?.length ? { history: before.history } : {}),
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
 * `s` ended as `state` (committed, or rolled back with `reason`) at `at`, with that switch first in
 * its history: one value, written by one rename.
 */
export function endSwitch(
  s: UpgradeState,
  state: 'committed' | 'rolled-back',
  at: string,
  reason?: string,
): UpgradeState {
  const upgrade = s.order ? s.order.slice(0, s.order.lastIndexOf('@')) : undefined;
  const entry: AgentReleaseSwitch = {
    version: s.version,
    previousVersion: s.previousVersion,
    state,
    startedAt: s.at,
    at,
    ...(upgrade ? { upgrade } : {}),
    ...(reason ? { reason: reason.slice(0, 1024) } : {}),
  };
  const { reason: _before, ...rest } = s;
  return {
    ...rest,
    state,
    at,
    ...(reason ? { reason } : {}),
    history: [entry, ...(s.history ?? [])].slice(0, RELEASE_HISTORY_MAX),
  };
}
