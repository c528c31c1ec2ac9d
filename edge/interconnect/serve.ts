/**
 * @module The serving edge's end of an interconnect connection (docs/interconnect.md): a `tcp`
 * stream the hub opens for a ServiceExport connects to the workload's declared port where the
 * driver says it listens (`driver.endpoint`: the process driver's host port on 127.0.0.1), never
 * to another port or host, whatever the hub asks. Once connected it says so (META `connected`: the
 * hub fails over to another serving edge only before it). The stream and the socket are piped both ways
 * (the stream's credit is the backpressure); an END is a half-close, a failure of either side
 * resets or destroys the other.
 */
import net from 'node:net';
import type { InterconnectConnected } from '../../core/orders/interconnect.js';
import { TunnelError, type TunnelStream } from '../../sync/tunnel.js';
import type { Driver } from '../drivers/driver.js';

/** How long a connect to the workload may take before the stream fails with `unavailable`. */
const CONNECT_TIMEOUT_MS = 10_000;

export async function serveExport(
  s: TunnelStream,
  driver: Driver,
  r: { workload: string; port: number },
): Promise<void> {
  let ep;
  try {
    ep = await driver.endpoint(r.workload, r.port);
  } catch (err) {
    throw new TunnelError('unavailable', `workload ${r.workload}: ${(err as Error).message}`);
  }
  if (!ep)
    throw new TunnelError(
      'forbidden',
      `workload ${r.workload} does not declare port ${r.port} on this edge (or does not run here): only a declared port is reachable`,
    );
  const sock = net.connect({ host: ep.host, port: ep.port, allowHalfOpen: true });
  sock.setTimeout(CONNECT_TIMEOUT_MS);
  await new Promise<void>((resolve, reject) => {
    // The close and timeout listeners go once connected: an error made at every stream's close
    // (a stack captured for a promise settled long before) was the serving edge's costliest
    // function in the interconnect benchmark's short connections. The error listener stays until
    // the one below is added, so a socket error in between is never unhandled.
    const timeout = () =>
      reject(new TunnelError('unavailable', `connecting to workload ${r.workload} port ${r.port} timed out`));
    const error = (err: Error) =>
      reject(new TunnelError('unavailable', `workload ${r.workload} port ${r.port}: ${err.message}`));
    const closed = () => reject(new TunnelError('aborted', 'the connection was closed before it was made'));
    sock.once('connect', () => {
      sock.setTimeout(0);
      sock.off('timeout', timeout);
      s.off('close', closed);
      resolve();
    });
    sock.once('timeout', timeout);
    sock.once('error', error);
    s.once('close', closed);
  }).catch((err: unknown) => {
    sock.destroy();
    throw err;
  });
  sock.on('error', (err) => {
    if (!s.destroyed) s.destroy(new TunnelError('aborted', `workload ${r.workload} port ${r.port}: ${err.message}`));
  });
  // A reset either way ends the connection; a clean close (both ends ENDed) lets the socket flush.
  s.on('error', () => sock.destroy());
  // Connected: the hub splices now (before this it may try another serving edge).
  s.sendMeta({ connected: true } satisfies InterconnectConnected);
  sock.pipe(s);
  s.pipe(sock);
}
