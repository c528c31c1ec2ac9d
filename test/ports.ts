/**
 * @module Ports for test servers. A port the OS hands out for `listen(0)` comes from the ephemeral
 * range (`/proc/sys/net/ipv4/ip_local_port_range`, 32768-60999 on Linux), the same range outgoing
 * connections take their local ports from: between "free a moment ago" and the server's own bind,
 * any test's outgoing connection may take it (seen: a hub restarted on its port got EADDRINUSE).
 * So tests pick below that range, where the kernel never assigns ports by itself, and check the
 * pick is free now.
 */
import net from 'node:net';

const LOW = 20_000;
const HIGH = 32_768;

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.unref();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A loopback TCP port outside the ephemeral range that is free now. */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free loopback port between ${LOW} and ${HIGH} after 200 tries`);
}
