/**
 * vitest globalSetup: tests leave nothing running. Before the run, the temp directory of every
 * test (os.tmpdir(), which tempDir() and the drivers' tests use) is pointed into one directory of
 * this run (TMPDIR, inherited by the workers and every process they start). After the run, a
 * process still alive whose working directory, executable or arguments lie in that directory was
 * started by a test and not stopped: the run fails, listing them, and they are killed. Other runs
 * on the same machine have their own directory, so they are never counted here.
 *
 * A process a test stopped may take a moment to go (test/kube/reaper.ts watchdogs kill within two
 * seconds of their test process's end), so survivors are looked for until a grace period passes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const GRACE_MS = 5_000;

export interface Survivor {
  pid: number;
  cwd: string;
  cmdline: string;
}

/** Processes (not this one) whose cwd, executable or an argument lies under `dir`. */
export function processesUnder(dir: string): Survivor[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const inside = (p: string) => p === dir || p.startsWith(prefix);
  const out: Survivor[] = [];
  for (const name of fs.readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (argv.length === 0) continue; // a zombie or a kernel thread
      const cwd = readLink(`/proc/${pid}/cwd`);
      const exe = readLink(`/proc/${pid}/exe`);
      if (inside(cwd) || inside(exe) || argv.some((a) => a.includes(prefix)))
        out.push({ pid, cwd, cmdline: argv.join(' ') });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

function readLink(p: string): string {
  try {
    return fs.readlinkSync(p).replace(/ \(deleted\)$/, '');
  } catch {
    return '';
  }
}

export default function setup(): () => Promise<void> {
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-run-'));
  // Like /tmp itself (mkdtemp makes it 0700): tests run binaries as an unprivileged user
  // (build/build.test.ts, setpriv nobody) from their temp dirs, which must be reachable.
  fs.chmodSync(runDir, 0o1777);
  const before = process.env.TMPDIR;
  process.env.TMPDIR = runDir;
  return async () => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    let left = processesUnder(runDir);
    for (
      const deadline = Date.now() + GRACE_MS;
      left.length > 0 && Date.now() < deadline;
      left = processesUnder(runDir)
    )
      await new Promise((r) => setTimeout(r, 250));
    for (const p of left) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    try {
      fs.rmdirSync(runDir); // only when the tests removed what they made
    } catch {
      // kept: a test left files (its own cleanup shows them)
    }
    if (left.length === 0) return;
    // vitest reports an error thrown here but still exits 0: the exit code is set too.
    process.exitCode = 1;
    throw new Error(
      `${left.length} process(es) started by the tests outlived the run (now killed); stop them in the test that starts them:\n` +
        left.map((p) => `  pid ${p.pid} cwd ${p.cwd}: ${p.cmdline.slice(0, 300)}`).join('\n'),
    );
  };
}
