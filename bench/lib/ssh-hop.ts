/**
 * @module An SSH `-L` forward hop on loopback, for the interconnect benchmark (issue #46): what an
 * operator would rig by hand between two machines, Debian's openssh (build/setup.sh installs
 * openssh-server). The run starts its own `sshd` (its own host key, a key authorized for this run
 * only, a config file in the run directory, `-D`: no system service, nothing left behind) and one
 * `ssh -N` with a `-L` forward per target port; both are ended by `stop()`.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { until } from './sys.js';

const SSHD = '/usr/sbin/sshd';

export interface SshHop {
  /** Local port of the forward to each target port given, in the same order. */
  ports: number[];
  /** The sshd listener and the ssh client (CPU is read from both, sshd with its session children). */
  sshdPid: number;
  sshPid: number;
  stop(): Promise<void>;
}

/** Resolves once `port` on loopback accepts a TCP connection. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

/** Starts sshd on `sshdPort` and `ssh -N -L local:127.0.0.1:target` for each pair; throws with sshd's words when it cannot. */
export async function startSshHop(
  dir: string,
  sshdPort: number,
  forwards: Array<{ local: number; target: number }>,
): Promise<SshHop> {
  if (!fs.existsSync(SSHD)) throw new Error(`${SSHD} is missing: install openssh-server (build/setup.sh does)`);
  fs.mkdirSync(dir, { recursive: true });
  // sshd run as root insists on its privilege separation directory; the Debian service makes it at start.
  if (process.geteuid?.() === 0) fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const key = (name: string) => {
    const f = path.join(dir, name);
    fs.rmSync(f, { force: true });
    fs.rmSync(`${f}.pub`, { force: true });
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `outpost-bench-${name}`, '-f', f]);
    return f;
  };
  const hostKey = key('host-key');
  const clientKey = key('client-key');
  const authorized = path.join(dir, 'authorized-keys');
  fs.copyFileSync(`${clientKey}.pub`, authorized);
  const config = path.join(dir, 'sshd-config');
  fs.writeFileSync(
    config,
    [
      `Port ${sshdPort}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `AuthorizedKeysFile ${authorized}`,
      'PidFile none',
      'UsePAM no',
      // The run directory is under /tmp or the repository, whose modes sshd would otherwise refuse.
      'StrictModes no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'AllowTcpForwarding local',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  const log = fs.openSync(path.join(dir, 'ssh.log'), 'a');
  const sshd = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', log, log] });
  let ssh: ChildProcess | undefined;
  const stop = async () => {
    for (const p of [ssh, sshd]) if (p && p.exitCode === null) p.kill('SIGTERM');
  };
  try {
    await until(() => accepts(sshdPort), { timeoutMs: 10_000, intervalMs: 100, what: `sshd on 127.0.0.1:${sshdPort}` });
    ssh = spawn(
      'ssh',
      [
        '-N',
        ...forwards.flatMap((f) => ['-L', `127.0.0.1:${f.local}:127.0.0.1:${f.target}`]),
        '-i',
        clientKey,
        '-p',
        String(sshdPort),
        '-o',
        'BatchMode=yes',
        '-o',
        'ExitOnForwardFailure=yes',
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'LogLevel=ERROR',
        `${os.userInfo().username}@127.0.0.1`,
      ],
      { stdio: ['ignore', log, log] },
    );
    for (const f of forwards)
      await until(async () => ssh!.exitCode === null && (await accepts(f.local)), {
        timeoutMs: 10_000,
        intervalMs: 100,
        what: `ssh -L forward on 127.0.0.1:${f.local} (see ${path.join(dir, 'ssh.log')})`,
      });
  } catch (err) {
    await stop();
    throw err;
  } finally {
    fs.closeSync(log);
  }
  return { ports: forwards.map((f) => f.local), sshdPid: sshd.pid!, sshPid: ssh.pid!, stop };
}
