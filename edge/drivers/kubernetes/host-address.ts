/**
 * @module Where the cluster's pods reach this host, for interconnect imports (imports.ts, docs/
 * interconnect.md) when the agent was given no `--interconnect-address`: from the cluster's Nodes.
 * The node of this host is the one with an InternalIP that is an address of this host (a
 * single-node k3s, an Outpost cluster's node, docs/clusters.md). Its pods' bridge gateway (the
 * first address of its `spec.podCIDR`, when this host has that address: the bridge CNI of Outpost
 * clusters, k3s's flannel `cni0`) is preferred, since only the pods' network reaches it; else
 * that InternalIP, which the site's network reaches too. Never loopback: an Endpoints may not
 * name one.
 */
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { DriverError } from '../driver.js';
import type { KubernetesContext } from './cluster.js';
import { serverMessage, type ApiError } from './imports.js';
import type { KObj } from './objects.js';

const isLoopback = (ip: string): boolean => ip.startsWith('127.') || ip === '::1';

/** This host's own addresses (every interface's). */
function localAddresses(): Set<string> {
  return new Set(
    Object.values(networkInterfaces())
      .flat()
      .map((a) => a?.address)
      .filter((a): a is string => !!a),
  );
}

/** The first host address of an IPv4 CIDR (`10.42.0.0/24` -> `10.42.0.1`); undefined otherwise. */
export function firstAddress(cidr: string): string | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (!m) return undefined;
  const bits = Number(m[5]);
  if (bits > 30) return undefined;
  const n = m.slice(1, 5).reduce((acc, o) => acc * 256 + Number(o), 0);
  const net = bits === 0 ? 0 : n - (n % 2 ** (32 - bits));
  const first = net + 1;
  return [24, 16, 8, 0].map((s) => Math.floor(first / 2 ** s) % 256).join('.');
}

/**
 * The address of this host the pods reach, from the Nodes and this host's addresses (`local`), or
 * why there is none.
 */
export function pickNodeAddress(nodes: KObj[], local: Set<string>): { address: string } | { why: string } {
  const internal = (n: KObj) =>
    ((n.status?.addresses ?? []) as { type: string; address: string }[])
      .filter((a) => a.type === 'InternalIP' && isIP(a.address) !== 0)
      .map((a) => a.address);
  const ips = nodes.flatMap(internal);
  for (const n of nodes.filter((x) => internal(x).some((ip) => local.has(ip)))) {
    const cidrs = (n.spec?.podCIDRs as string[] | undefined) ?? (n.spec?.podCIDR ? [n.spec.podCIDR as string] : []);
    const gateway = cidrs.map(firstAddress).find((a) => a && local.has(a));
    if (gateway) return { address: gateway };
    const ip = internal(n).find((a) => local.has(a) && !isLoopback(a));
    if (ip) return { address: ip };
  }
  return {
    why: ips.length
      ? `none of the nodes' InternalIPs (${ips.join(', ')}) is a non-loopback address of this host`
      : 'the cluster lists no node with an InternalIP',
  };
}

/**
 * The address of this host the cluster's pods reach it at, when none was given
 * (`--interconnect-address`). Throws saying why none is known and how to give one.
 */
export async function nodeAddress(ctx: KubernetesContext): Promise<string> {
  let nodes: KObj[];
  try {
    nodes = (await ctx.client().list('v1', 'Node')).items as KObj[];
  } catch (err) {
    const code = (err as ApiError).code;
    throw new DriverError(
      `cannot list the cluster's nodes to find the address of this host its pods reach (${code === 403 ? `no right: ${serverMessage(err)}` : serverMessage(err)}): grant list on nodes (examples/kubernetes-driver-rbac.yaml), or start the agent with --interconnect-address IP`,
      { cause: err },
    );
  }
  const r = pickNodeAddress(nodes, localAddresses());
  if ('address' in r) return r.address;
  throw new DriverError(
    `no address of this host that the cluster's pods reach is known: ${r.why}; start the agent with --interconnect-address IP (an address of this host the pods can reach)`,
  );
}
