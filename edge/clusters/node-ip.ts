/**
 * @module The node's address (docs/clusters.md, "On the site"): the IPv4 address of the host's
 * default route's interface. The kubelet registers the node with it and listens on it, and the API
 * server reaches the kubelet there (logs, exec, port-forward). A loopback address will not do: the
 * kubelet refuses one as a node IP, and the node then has no address at all ("no preferred
 * addresses found" on every exec).
 */
import fs from 'node:fs';
import os from 'node:os';

/** The interface of the IPv4 default route, from /proc/net/route (Linux). */
function defaultRouteInterface(): string | undefined {
  try {
    for (const line of fs.readFileSync('/proc/net/route', 'utf8').split('\n').slice(1)) {
      const [iface, destination, , , , , , mask] = line.trim().split(/\s+/);
      if (iface && destination === '00000000' && mask === '00000000') return iface;
    }
  } catch {
    /* not Linux, or no /proc */
  }
  return undefined;
}

/** The node's IPv4 address; throws naming what to fix when the host has none but loopback. */
export function hostAddress(): string {
  const all = os.networkInterfaces();
  const v4 = (iface: string) => all[iface]?.find((a) => a.family === 'IPv4' && !a.internal)?.address;
  const via = defaultRouteInterface();
  const found = (via && v4(via)) ?? undefined;
  if (found) return found;
  // No default route: the first interface with an address that is not a bridge of a cluster's pods.
  for (const iface of Object.keys(all).sort()) {
    if (iface.startsWith('ob-')) continue;
    const a = v4(iface);
    if (a) return a;
  }
  throw new Error(
    'this host has no IPv4 address but loopback: a cluster node needs one (the kubelet registers the node with it); give the host an address',
  );
}
