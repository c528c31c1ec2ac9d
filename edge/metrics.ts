/**
 * @module The edge agent's Prometheus metrics, one registry served by the local API
 * (`GET /metrics` on DATA/agent.sock) and through the tunnel to the hub
 * (`GET /api/v1/edges/NAME/metrics`): the process metrics (core/metrics.ts) under `outpost_edge_`,
 * and gauges read at scrape time from the agent's parts (docs/operations.md lists them).
 */
import client from 'prom-client';
import { EDGE_LAG_SAMPLE_MS } from '../core/durations.js';
import { collectProcessMetrics } from '../core/metrics.js';
import type { SyncClient } from '../sync/client.js';
import type { EdgeTransfers } from './blobs/transfers.js';
import type { EdgeEgress } from './data/egress.js';
import type { Reconciler } from './reconciler.js';

/** The parts the gauges read; one not made yet (the agent is starting) reads as 0. */
export interface EdgeMetricsSources {
  sync?: SyncClient;
  reconciler?: Reconciler;
  egress?: EdgeEgress;
  transfers?: EdgeTransfers;
}

/** A registry with the edge's metrics; `parts` is called at every scrape. */
export function edgeMetricsRegistry(parts: () => EdgeMetricsSources): client.Registry {
  const registry = new client.Registry();
  collectProcessMetrics(registry, 'outpost_edge_', EDGE_LAG_SAMPLE_MS);
  new client.Gauge({
    name: 'outpost_edge_connected',
    help: '1 when the sync connection to the hub is up',
    registers: [registry],
    collect() {
      this.set(parts().sync?.state === 'connected' ? 1 : 0);
    },
  });
  new client.Gauge({
    name: 'outpost_edge_sync_bytes_out',
    help: 'Sync bytes sent on closed connections',
    registers: [registry],
    collect() {
      this.set(parts().sync?.totals.bytesOut ?? 0);
    },
  });
  new client.Gauge({
    name: 'outpost_edge_reconcile_passes',
    help: 'Reconciler passes since start',
    registers: [registry],
    collect() {
      this.set(parts().reconciler?.passes ?? 0);
    },
  });
  new client.Gauge({
    name: 'outpost_edge_egress_scans',
    help: 'Completed scans of the export directories since start (docs/data.md)',
    registers: [registry],
    collect() {
      this.set(parts().egress?.scans ?? 0);
    },
  });
  new client.Gauge({
    name: 'outpost_edge_transfer_bytes',
    help: 'Blob bytes moved over the hub connection since start, by direction (down: from the hub, up: to it)',
    labelNames: ['direction'],
    registers: [registry],
    collect() {
      const transfers = parts().transfers;
      this.set({ direction: 'down' }, transfers?.moved.down ?? 0);
      this.set({ direction: 'up' }, transfers?.moved.up ?? 0);
    },
  });
  return registry;
}
