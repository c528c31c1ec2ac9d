/**
 * @module The interconnect's relay as the hub builds it: ServiceImports' connections relayed over
 * the tunnel to an edge serving the export (hub/interconnect/relay.ts), through another replica when
 * that one holds the edge, with its Prometheus series (hub/interconnect/stats.ts), and opened
 * connections authorised again when the planner's objects change.
 */
import type client from 'prom-client';
import type { InterconnectPlanner } from '../interconnect/index.js';
import { InterconnectRelay } from '../interconnect/relay.js';
import { InterconnectStats } from '../interconnect/stats.js';
import type { ObjectStore } from '../objects.js';
import type { HubState } from '../state/index.js';
import type { TunnelModule } from './tunnel.js';

export function createInterconnectRelay(o: {
  planner: InterconnectPlanner;
  objects: ObjectStore;
  edges: HubState['edges'];
  registry: client.Registry;
  tunnel: Pick<TunnelModule, 'gateway' | 'forward'>;
}): InterconnectRelay {
  const { planner, tunnel } = o;
  // The gauges read the relay at scrape time; the relay counts into the stats.
  const stats: InterconnectStats = new InterconnectStats(o.registry, {
    open: (): number => relay.openConnections(),
    buffered: (): number => relay.bufferedBytes(),
  });
  planner.stats = stats;
  planner.onAuthorityChange = () => relay.reauthorise();
  const relay: InterconnectRelay = new InterconnectRelay({
    planner,
    objects: o.objects,
    edges: o.edges,
    stats,
    openTo: (edge, header) => tunnel.gateway.openTo(edge, header),
    ...(tunnel.forward ? { remote: tunnel.forward } : {}),
  });
  return relay;
}
