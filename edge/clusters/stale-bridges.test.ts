// Real bridges on this host (root, iproute2): a leftover in the pod network is removed, the node's
// own, one outside the network, one with an interface attached, and one not named by Outpost stay.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import { overlaps, removeStaleBridges } from './stale-bridges.js';

const made: string[] = [];
const ip = (...a: string[]) => execFileSync('ip', a, { stdio: 'pipe' });
const exists = (name: string) => fs.existsSync(`/sys/class/net/${name}`);
function bridge(prefix: string, addr?: string): string {
  const name = `${prefix}${randomBytes(4).toString('hex')}`.slice(0, 15);
  ip('link', 'add', name, 'type', 'bridge');
  made.push(name);
  if (addr) ip('addr', 'add', addr, 'dev', name);
  return name;
}
afterEach(() => {
  for (const n of made.splice(0)) if (exists(n)) ip('link', 'delete', n);
});

it('tells IPv4 networks that share an address', () => {
  expect(overlaps('10.244.0.1/24', '10.244.0.0/16')).toBe(true);
  expect(overlaps('10.244.7.1/24', '10.244.0.0/24')).toBe(false);
  expect(overlaps('10.245.0.1/24', '10.244.0.0/16')).toBe(false);
  expect(overlaps('nonsense', '10.244.0.0/16')).toBe(false);
});

it("removes a leftover ob- bridge in the node's pod network, and nothing else", async () => {
  // A network no real cluster of this host uses, so the test touches nothing of theirs.
  const net = '10.251.0.0/16';
  const own = bridge('ob-', '10.251.0.1/24');
  const stale = bridge('ob-', '10.251.1.1/24');
  const elsewhere = bridge('ob-', '10.252.0.1/24');
  const busy = bridge('ob-', '10.251.2.1/24');
  // A pod's veth, as the CNI plugin attaches it.
  const port = `obtv${randomBytes(4).toString('hex')}`;
  ip('link', 'add', port, 'type', 'veth', 'peer', 'name', `${port}p`);
  made.push(port);
  ip('link', 'set', port, 'master', busy);
  const foreign = bridge('obt-', '10.251.3.1/24');
  expect(await removeStaleBridges(net, own)).toEqual([stale]);
  expect(exists(stale)).toBe(false);
  for (const n of [own, elsewhere, busy, foreign]) expect(exists(n)).toBe(true);
});
