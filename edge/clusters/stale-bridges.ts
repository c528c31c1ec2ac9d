/**
 * @module Pod bridges a cluster left on this host without a teardown (the host lost power, the
 * agent was removed, a test run was killed): Outpost names its bridges `ob-…` (configs.ts
 * `bridgeName`). One that still holds an address in this node's pod network is a second route for
 * the same subnet, and the kernel sends the replies to this node's pods into it: pods then reach
 * nothing off the node. Before a node configures its network it removes such leftovers: bridges
 * named `ob-…`, not its own, with no interface attached (no pod of any node uses them), whose IPv4
 * address lies in the node's pod network. A live node's bridge with pods keeps its veths attached
 * and is never touched; one without pods is made again by the CNI plugin at its next pod.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { createLogger } from '../../core/logger.js';

const run = promisify(execFile);
const log = createLogger('edge:clusters');

/** [first, last] address of an IPv4 CIDR, as numbers. */
function range(cidr: string): [number, number] | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr.trim());
  if (!m) return undefined;
  const ip = ((Number(m[1]) << 24) | (Number(m[2]) << 16) | (Number(m[3]) << 8) | Number(m[4])) >>> 0;
  const bits = Number(m[5]);
  const size = 2 ** (32 - bits);
  const first = ip - (ip % size);
  return [first, first + size - 1];
}

/** Whether two IPv4 CIDRs share an address. */
export function overlaps(a: string, b: string): boolean {
  const x = range(a);
  const y = range(b);
  return !!x && !!y && x[0] <= y[1] && y[0] <= x[1];
}

/** An entry of `ip -j -4 addr`: `{}` for a link the filter left out. */
interface IpAddr {
  ifname?: string;
  addr_info?: { family: string; local: string; prefixlen: number }[];
}

/** Removes the leftover `ob-…` bridges (see the module) that overlap `podNetwork`; returns their names. */
export async function removeStaleBridges(podNetwork: string, own: string): Promise<string[]> {
  let links: IpAddr[];
  try {
    links = JSON.parse((await run('ip', ['-j', '-4', 'addr', 'show', 'type', 'bridge'])).stdout) as IpAddr[];
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'cannot list the bridges of this host; leftovers of other clusters stay');
    return [];
  }
  const removed: string[] = [];
  for (const l of links) {
    const name = l.ifname;
    if (!name?.startsWith('ob-') || name === own) continue;
    if (!(l.addr_info ?? []).some((a) => a.family === 'inet' && overlaps(`${a.local}/${a.prefixlen}`, podNetwork)))
      continue;
    let ports: string[];
    try {
      ports = fs.readdirSync(`/sys/class/net/${name}/brif`);
    } catch {
      continue; // gone meanwhile, or not a bridge after all
    }
    if (ports.length) continue;
    try {
      await run('ip', ['link', 'delete', name]);
      removed.push(name);
      log.warn(
        { bridge: name, podNetwork },
        `removed ${name}, a pod bridge no cluster on this host uses that routed this node's pod network`,
      );
    } catch (err) {
      log.warn({ bridge: name, err: (err as Error).message }, 'cannot remove a leftover pod bridge');
    }
  }
  return removed;
}
