/**
 * @module Who listens on a TCP port of the host, from /proc (Linux, as the rest of the driver). A
 * process workload's tcpSocket and httpGet probes dial 127.0.0.1:PORT on the host network, where
 * another program may hold the port: an earlier server not gone yet, an unrelated service. Such a
 * probe passed although the workload's own process never listened (it failed to bind and exited),
 * and the workload read Ready. `WorkloadPorts` tells the probe whose listener it reached.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';

/** Another process that holds the port: its pid and command when they could be read. */
export interface PortHolder {
  pid?: number;
  command?: string;
}

/**
 * The inodes of the sockets listening on TCP `port`, any address, IPv4 and IPv6. Read without
 * blocking: the tables list every socket of the host (thousands of TIME_WAIT entries on a busy
 * one), and a probe that read them synchronously held the agent's event loop for tens of
 * milliseconds, delaying every relayed connection (docs/benchmarks.md, "Interconnect").
 */
async function listeningInodes(port: number): Promise<Set<string>> {
  const out = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: Buffer;
    try {
      text = await readFile(table);
    } catch {
      continue;
    }
    for (const inode of listenersIn(text, port)) out.add(inode);
  }
  return out;
}

/** The bytes the state column of a listening socket holds: "0A" and the space after it. */
const [ZERO, A, SPACE, NEWLINE] = [0x30, 0x41, 0x20, 0x0a];

/**
 * The inodes of the sockets in LISTEN on `port` in /proc/net/tcp or tcp6. Each line is "sl:
 * local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...", the
 * local address HEX_IP:HEX_PORT. Only the state column of a line is looked at, in the bytes, before
 * it is known to listen: a table of thousands of connections is scanned without a string made for
 * it or its lines (decoding and splitting every line was 1.2 ms and 12 MB on the serving edge per
 * probe period in the interconnect benchmark; docs/benchmarks.md, "Interconnect, sixth round").
 */
export function listenersIn(table: Buffer, port: number): string[] {
  const out: string[] = [];
  let i = table.indexOf(NEWLINE) + 1; // past the header
  while (i > 0 && i < table.length) {
    const nl = table.indexOf(NEWLINE, i);
    const end = nl < 0 ? table.length : nl;
    // After "sl:": the local address, the remote address, then the state.
    let p = table.indexOf(':', i) + 1;
    for (let column = 0; column < 2 && p > 0 && p < end; column++) {
      while (p < end && table[p] === SPACE) p++;
      p = table.indexOf(SPACE, p);
    }
    while (p > 0 && p < end && table[p] === SPACE) p++;
    if (p > 0 && p + 2 < end && table[p] === ZERO && table[p + 1] === A && table[p + 2] === SPACE) {
      const f = table.toString('latin1', i, end).trim().split(/\s+/);
      if (f.length >= 10 && parseInt(f[1]!.slice(f[1]!.lastIndexOf(':') + 1), 16) === port && f[9] !== '0')
        out.push(f[9]!);
    }
    i = end + 1;
  }
  return out;
}

/** The socket inodes among a process's open files; undefined when they cannot be read (another user's process). */
function socketsOf(pid: number): Set<string> | undefined {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch (err) {
    // Gone meanwhile: it holds nothing. Not readable: unknown.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? new Set() : undefined;
  }
  const out = new Set<string>();
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) out.add(m[1]!);
    } catch {
      // Closed meanwhile.
    }
  }
  return out;
}

/**
 * A process's command as an operator knows it: its argv[0] without the directory (its comm can be
 * a thread's name: Node's main thread renames it "MainThread").
 */
function commandOf(pid: number): string | undefined {
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
    if (argv0) return basename(argv0);
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() || undefined;
  } catch {
    return undefined; // gone meanwhile
  }
}

/** The first process found holding one of `inodes`, with its command. */
function holderOf(inodes: Set<string>): PortHolder {
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return {};
  }
  for (const p of pids) {
    const held = socketsOf(Number(p));
    if (!held || ![...inodes].some((i) => held.has(i))) continue;
    return { pid: Number(p), command: commandOf(Number(p)) };
  }
  return {};
}

/**
 * Whose listeners a workload's ports have. The workload's processes (`members`, a scan of /proc)
 * and their files are read only for a listener not yet found to be theirs: a probe that passes
 * every period reads /proc/net/tcp{,6} and nothing else once its listener is known.
 */
export class WorkloadPorts {
  /** Inodes of listeners found to be the workload's. */
  private readonly own = new Set<string>();

  constructor(private readonly members: () => number[]) {}

  /**
   * The holder when TCP `port` is listened on and none of the listeners is the workload's;
   * undefined when one is, or when it cannot be told (no /proc, no listener any more, a member
   * whose files this agent may not read).
   */
  async heldElsewhere(port: number): Promise<PortHolder | undefined> {
    const listening = await listeningInodes(port);
    if (!listening.size || [...listening].some((i) => this.own.has(i))) return undefined;
    for (const pid of this.members()) {
      const held = socketsOf(pid);
      if (!held) return undefined;
      for (const i of listening)
        if (held.has(i)) {
          this.own.add(i);
          return undefined;
        }
    }
    return holderOf(listening);
  }
}

/** What a probe that reached another process's listener says about it. */
export function heldElsewhereReason(port: number, h: PortHolder): string {
  const who = h.pid ? `pid ${h.pid}${h.command ? ` (${h.command})` : ''}` : 'another process';
  return `port ${port} is held by ${who}, not by this workload: stop that process or change the port`;
}
