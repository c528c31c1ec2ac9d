/**
 * @module The hub's Prometheus metrics (`GET /metrics`), read at scrape time from the tables the
 * hub keeps anyway, never from documents: what an operator graphs and alerts on.
 *
 * - per placement: `outpost_hub_placement_workloads{,_ready,_broken}` (workload-on-edge pairs),
 *   `outpost_hub_placement_selected_edges`, and `outpost_hub_placement_rollout_phase{phase}` (1 for
 *   the current phase, 0 for the others, as kube-state-metrics does);
 * - per edge: `outpost_hub_edge_last_seen_age_seconds`; fleet: `outpost_hub_edges_by_state{state}`;
 * - sync bytes both ways (`outpost_hub_sync_{received,sent}_bytes_total`), connections refused,
 *   heartbeats; tunnel streams and bytes live in hub/tunnel/gateway.ts on the same registry.
 *
 * Edge metrics are not copied here: `GET /api/v1/edges/NAME/metrics` fetches the edge's own page
 * through its tunnel (docs/operations.md has a scrape config).
 */
import client from 'prom-client';
import { HUB_LAG_SAMPLE_MS } from '../core/durations.js';
import { collectProcessMetrics } from '../core/metrics.js';
import type { Placement } from '../core/resources.js';
import type { RolloutPhase } from '../core/rollout.js';
import { BROKEN_STATES } from '../core/summary.js';
import type { SyncServer } from '../sync/server.js';
import type { ReplicaStore } from '../sync/store.js';
import { edgePhase } from './edges/phase.js';
import type { Scheduler } from './scheduler/index.js';
import { placementStatus } from './controllers/status.js';
import type { ObjectStore } from './objects.js';
import type { HubState } from './state/index.js';

const PHASES: RolloutPhase[] = ['Progressing', 'Paused', 'Complete', 'Failed', 'Pending'];

export interface HubMetrics {
  registry: client.Registry;
  refused: client.Counter<'code'>;
  heartbeats: client.Counter;
  /** Times an edge connection sent frames past FRAMES_PER_SECOND and was read more slowly. */
  throttled: client.Counter;
  /** A sync connection closed: its byte counts move from the live connections to the totals. */
  connectionClosed(stats: { bytesIn: number; bytesOut: number }): void;
}

export function createHubMetrics(o: {
  state: HubState;
  store: ReplicaStore;
  objects: ObjectStore;
  scheduler: Scheduler;
  sync: () => SyncServer | undefined;
}): HubMetrics {
  const { state, store, objects, scheduler } = o;
  const registry = new client.Registry();
  collectProcessMetrics(registry, 'outpost_hub_', HUB_LAG_SAMPLE_MS);
  const refused = new client.Counter({
    name: 'outpost_hub_sync_refusals_total',
    help: 'Sync connections refused, by code',
    labelNames: ['code'],
    registers: [registry],
  });
  const throttled = new client.Counter({
    name: 'outpost_hub_sync_throttled_total',
    help: 'Times an edge connection sent frames past its rate and was not read for a while',
    registers: [registry],
  });
  const heartbeats = new client.Counter({
    name: 'outpost_hub_heartbeats_total',
    help: 'Heartbeats received',
    registers: [registry],
  });
  new client.Gauge({
    name: 'outpost_hub_edges_connected',
    help: 'Edges with an open sync connection',
    registers: [registry],
    collect() {
      this.set(o.sync()?.connections().length ?? 0);
    },
  });
  new client.Gauge({
    name: 'outpost_hub_edges',
    help: 'Enrolled edges',
    registers: [registry],
    collect() {
      this.set(state.edges.count());
    },
  });
  new client.Gauge({
    name: 'outpost_hub_edges_by_state',
    help: 'Enrolled edges by state (Online, Offline, Pending approval)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const now = Date.now();
      const n: Record<string, number> = { Online: 0, Offline: 0, Pending: 0 };
      for (const l of state.edges.liveness('*').values()) n[edgePhase(l, now)]++;
      for (const [state, v] of Object.entries(n)) this.set({ state }, v);
    },
  });
  new client.Gauge({
    name: 'outpost_hub_edge_last_seen_age_seconds',
    help: 'Seconds since the hub last heard from the edge (edges that never connected are absent)',
    labelNames: ['project', 'edge'],
    registers: [registry],
    collect() {
      this.reset();
      const now = Date.now();
      for (const r of state.edges.lastSeenAll())
        this.set({ project: r.project, edge: r.name }, Math.max(0, (now - r.lastSeen) / 1000));
    },
  });
  new client.Gauge({
    name: 'outpost_hub_docs_loaded',
    help: 'Documents loaded in memory',
    registers: [registry],
    collect() {
      this.set(store.loadedStats().docs);
    },
  });

  // Placements: one status computation per placement per scrape, shared by the five gauges.
  type Row = {
    project: string;
    placement: string;
    total: number;
    ready: number;
    broken: number;
    edges: number;
    phase?: string;
  };
  let rows: Row[] = [];
  const placementRows = (): Row[] =>
    objects.list<Placement>('Placement', '*').map((p) => {
      const r = scheduler.rollout(p.metadata.project, p.metadata.name);
      const s = placementStatus(state, p, r);
      let broken = 0;
      for (const [state, n] of Object.entries(s.summary.states))
        if (BROKEN_STATES.has(state as never)) broken += n ?? 0;
      return {
        project: p.metadata.project,
        placement: p.metadata.name,
        total: s.summary.total,
        ready: s.summary.ready,
        broken,
        edges: s.selectedEdges,
        phase: r?.phase,
      };
    });
  // Computed once per scrape (the gauges' collects run within the same moment) and shared.
  let rowsAt = 0;
  const current = (): Row[] => {
    if (Date.now() - rowsAt > 1_000) {
      rows = placementRows();
      rowsAt = Date.now();
    }
    return rows;
  };
  const perPlacement = (name: string, help: string, value: (r: Row) => number) =>
    new client.Gauge({
      name,
      help,
      labelNames: ['project', 'placement'],
      registers: [registry],
      collect() {
        this.reset();
        for (const r of current()) this.set({ project: r.project, placement: r.placement }, value(r));
      },
    });
  perPlacement('outpost_hub_placement_workloads', 'Workload-on-edge pairs the placement places', (r) => r.total);
  perPlacement('outpost_hub_placement_workloads_ready', 'Workload-on-edge pairs ready', (r) => r.ready);
  perPlacement(
    'outpost_hub_placement_workloads_broken',
    'Workload-on-edge pairs Modified, Stale, Degraded, Failed or in Error',
    (r) => r.broken,
  );
  perPlacement('outpost_hub_placement_selected_edges', 'Edges the placement selects', (r) => r.edges);
  new client.Gauge({
    name: 'outpost_hub_placement_rollout_phase',
    help: 'Rollout phase of the placement: 1 for the current phase, 0 for the others',
    labelNames: ['project', 'placement', 'phase'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of current())
        for (const phase of PHASES)
          this.set({ project: r.project, placement: r.placement, phase }, r.phase === phase ? 1 : 0);
    },
  });

  // Sync bytes: closed connections' totals plus the live ones'; a Counter only grows, so the
  // difference since the last scrape is added (moving a connection from live to closed adds 0).
  const closed = { bytesIn: 0, bytesOut: 0 };
  const syncCounter = (name: string, help: string, key: 'bytesIn' | 'bytesOut') => {
    let last = 0;
    return new client.Counter({
      name,
      help,
      registers: [registry],
      collect() {
        let v = closed[key];
        for (const c of o.sync()?.connections() ?? []) v += c.session.stats[key];
        if (v > last) this.inc(v - last);
        last = Math.max(last, v);
      },
    });
  };
  syncCounter(
    'outpost_hub_sync_received_bytes_total',
    'Sync bytes received from edges (frames, all connections)',
    'bytesIn',
  );
  syncCounter('outpost_hub_sync_sent_bytes_total', 'Sync bytes sent to edges (frames, all connections)', 'bytesOut');

  return {
    registry,
    refused,
    heartbeats,
    throttled,
    connectionClosed(stats) {
      closed.bytesIn += stats.bytesIn;
      closed.bytesOut += stats.bytesOut;
    },
  };
}
