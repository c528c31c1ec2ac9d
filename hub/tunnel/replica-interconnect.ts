/**
 * @module The route by which one hub replica relays an interconnect connection to the replica that
 * holds the serving edge (docs/interconnect.md, "Hub replicas"): an upgrade to
 * `/api/v1/replicas/interconnect/EDGE/PROJECT/EXPORT`, signed like the tunnel's forwards
 * (hub/tunnel/forward.ts `dial`). Anyone else is refused: no user's token reaches an edge this way.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { OutpostError } from '../../core/errors.js';
import { rawErrorResponse } from '../../core/http.js';
import type { EdgeName } from '../../core/ids.js';
import { refuseReplicaClaim, type ReplicaForwarder } from './forward.js';

/** What the route needs of the gateway's options (hub/tunnel/gateway.ts GatewayOptions). */
export interface ReplicaInterconnectOptions {
  forward?: Pick<ReplicaForwarder, 'forwardedBy'>;
  onReplicaConnection?(socket: Socket): void;
  onReplicaInterconnect?(edge: EdgeName, project: string, name: string, socket: Duplex, head: Buffer): void;
}
import type { Socket } from 'node:net';

export const REPLICA_INTERCONNECT_PATH =
  /^\/api\/v1\/replicas\/interconnect\/([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)\/([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)\/([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)$/;

/** Serves the upgrade when `pathname` is the route (true), or leaves it to the caller (false). */
export function handleReplicaInterconnect(
  opts: ReplicaInterconnectOptions,
  pathname: string,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): boolean {
  const ic = REPLICA_INTERCONNECT_PATH.exec(pathname);
  if (!ic) return false;
  socket.on('error', () => socket.destroy());
  try {
    const by = opts.forward?.forwardedBy(req) ?? refuseReplicaClaim(req);
    if (!by || !opts.onReplicaInterconnect)
      throw new OutpostError('forbidden', `${pathname} is for hub replicas relaying interconnect connections`);
    // Every relayed connection comes from the other replica's address: not a client's to cap.
    opts.onReplicaConnection?.(req.socket);
  } catch (err) {
    socket.end(rawErrorResponse(err));
    return true;
  }
  opts.onReplicaInterconnect(ic[1] as EdgeName, ic[2]!, ic[3]!, socket, head);
  return true;
}
