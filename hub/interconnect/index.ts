/**
 * @module Interconnect, the hub's side (docs/interconnect.md): ServiceImports become the order
 * kind `interconnect` (core/orders/interconnect.ts), the listeners each consuming edge holds, which
 * the order engine copies into the edges' spec documents; what the edges report of them is
 * projected into `interconnect_reports` (hub/state/interconnect.ts); each connection a consuming
 * edge accepts arrives as a stream and is relayed to an edge serving the export
 * (hub/interconnect/relay.ts); the status of both kinds is read from those tables and the objects.
 *
 * Like the deliveries (hub/data/delivery.ts) every hub replica plans the same parts from the objects;
 * the engine writes those of the edges this process serves.
 */
import { createLogger } from '../../core/logger.js';
import { INTERCONNECT_ORDER, type InterconnectListen } from '../../core/orders/interconnect.js';
import type { Edge, ServiceExport, ServiceImport } from '../../core/resources.js';
import type {
  ConsumingEdgeView,
  ServiceExportStatusView,
  ServiceImportStatusView,
  ServingEdgeView,
} from '../../core/api/interconnect-views.js';
import { edgesReached, isOnline, schedulableEdges } from '../edges/phase.js';
import type { ObjectChange, ObjectStore } from '../objects.js';
import type { OrderEngine } from '../orders/engine.js';
import type { HubState } from '../state/index.js';
import { isHealthy } from './pick.js';
import type { InterconnectStats } from './stats.js';

const log = createLogger('hub:interconnect');

/** The kinds a connection is authorised against (hub/interconnect/relay.ts `authorise`). */
const AUTHORITY_KINDS = new Set(['ServiceImport', 'ServiceExport', 'Edge']);

/** How often the listeners are planned again without an object change: edges join and change labels. */
export const INTERCONNECT_TICK_MS = 5_000;

export class InterconnectPlanner {
  private timer: NodeJS.Timeout | undefined;
  private pending = false;
  private parts = new Map<string, InterconnectListen[]>();
  /** What this process relayed, by export and serving edge (set by hub/hub.ts; the relay counts into it). */
  stats: InterconnectStats | undefined;
  /** The objects a connection is authorised against changed (set by hub/hub.ts: the relay checks its connections again). */
  onAuthorityChange: (() => void) | undefined;
  private authorityPending = false;

  constructor(
    private readonly state: HubState,
    private readonly objects: ObjectStore,
    private readonly engine: OrderEngine,
    private readonly tickMs = INTERCONNECT_TICK_MS,
  ) {
    engine.register<InterconnectListen[]>({
      kind: INTERCONNECT_ORDER,
      all: () => this.parts,
      of: (edge) => {
        const rt = state.edges.get(edge);
        return rt?.approved ? this.plan(rt.project).get(edge) : undefined;
      },
      forgetEdge: (edge) => state.interconnect.forgetEdge(edge),
      project: (edge, report) => {
        state.interconnect.project(edge, report.interconnect);
        return false;
      },
      onObjectChange: (c) => this.onObjectChange(c),
      onPeerObjectChange: (kind) => {
        if (kind === 'ServiceImport' || kind === 'Edge') this.mark();
        if (AUTHORITY_KINDS.has(kind)) this.authorityChanged();
      },
      handshakeReads: {
        edge: (edge) => [state.readsAhead.edgeRuntime(edge)],
        project: (project) => [
          state.readsAhead.objects('ServiceImport', project),
          state.readsAhead.objects('Edge', project),
        ],
      },
    });
  }

  start(): void {
    this.timer = setInterval(() => this.mark(), this.tickMs);
    this.timer.unref();
    this.mark();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private onObjectChange(c: ObjectChange): void {
    if (c.kind === 'ServiceImport' || c.kind === 'Edge') this.mark();
    if (AUTHORITY_KINDS.has(c.kind)) this.authorityChanged();
  }

  /** Soon (after the write transaction commits), once for a burst of changes. */
  private authorityChanged(): void {
    if (this.authorityPending || !this.onAuthorityChange) return;
    this.authorityPending = true;
    setImmediate(() => {
      this.authorityPending = false;
      try {
        this.onAuthorityChange?.();
      } catch (err) {
        log.warn({ err }, 'checking the open interconnect connections again failed');
      }
    });
  }

  /** Plans and copies again soon (after the current write transaction commits). */
  mark(): void {
    if (this.pending) return;
    this.pending = true;
    setImmediate(() => {
      this.pending = false;
      try {
        this.parts = this.plan();
        this.engine.copy(INTERCONNECT_ORDER.name);
      } catch (err) {
        log.warn({ err }, 'interconnect pass failed; it runs again on the next tick');
      }
    });
  }

  /** Every consuming edge's listeners (of one project's imports, or all). */
  private plan(only?: string): Map<string, InterconnectListen[]> {
    const parts = new Map<string, InterconnectListen[]>();
    const fleets = new Map<string, ReturnType<typeof schedulableEdges>>();
    for (const imp of this.objects.list<ServiceImport>('ServiceImport', only ?? '*'))
      for (const edge of this.selected(imp, fleets))
        (parts.get(edge) ?? parts.set(edge, []).get(edge)!).push({ import: imp.metadata.name, port: imp.spec.port });
    return parts;
  }

  /** The edges of its project an import selects. */
  selected(imp: ServiceImport, fleets = new Map<string, ReturnType<typeof schedulableEdges>>()): string[] {
    const project = imp.metadata.project;
    let edges = fleets.get(project);
    if (!edges) {
      edges = schedulableEdges(this.objects.list<Edge>('Edge', project), this.state.edges.liveness(project));
      fleets.set(project, edges);
    }
    return edgesReached(edges, imp.spec);
  }

  /** The export an import names, and why a connection to it is refused whatever the edges do (undefined: it is not). */
  exportOf(imp: ServiceImport): { exp?: ServiceExport; project: string; refused?: string } {
    const project = imp.spec.project ?? imp.metadata.project;
    const exp = this.objects.get<ServiceExport>('ServiceExport', project, imp.spec.export);
    if (!exp)
      return {
        project,
        refused: `ServiceExport ${imp.spec.export} not found in project ${project}: apply it there, or fix spec.export/spec.project`,
      };
    if (project !== imp.metadata.project && !exp.spec.allowedProjects.includes(imp.metadata.project))
      return {
        exp,
        project,
        refused: `ServiceExport ${project}/${exp.metadata.name} does not allow project ${imp.metadata.project}: add it to the export's spec.allowedProjects`,
      };
    return { exp, project };
  }

  /** The edges that run an export's workload, whether each is connected, and what it last reported of it. */
  servingEdges(exp: ServiceExport, now = Date.now()): Pick<ServingEdgeView, 'edge' | 'online' | 'phase'>[] {
    const live = this.state.edges.liveness(exp.metadata.project);
    return this.state.status.byWorkload(exp.metadata.project, exp.spec.workload).map((r) => ({
      edge: r.edge,
      online: isOnline(live.get(r.edge), now),
      ...(r.reported ? { phase: r.reported.phase } : {}),
    }));
  }

  exportStatus(exp: ServiceExport): ServiceExportStatusView {
    const relayed = this.stats?.ofExport(`${exp.metadata.project}/${exp.metadata.name}`);
    const serving = this.servingEdges(exp).map((e) => {
      const c = relayed?.get(e.edge);
      return {
        ...e,
        healthy: isHealthy(e),
        ...(c
          ? {
              open: c.open,
              total: c.total,
              failed: c.failed,
              bytesIn: c.bytesIn,
              bytesOut: c.bytesOut,
              ...(c.lastError ? { lastError: c.lastError, lastErrorAt: new Date(c.lastErrorAt!).toISOString() } : {}),
            }
          : {}),
      };
    });
    const online = serving.filter((e) => e.online).length;
    const healthy = serving.filter((e) => e.healthy).length;
    return {
      summary: serving.length
        ? `serving ${healthy}/${serving.length} healthy, ${online} online`
        : `no edge runs workload ${exp.spec.workload}: place it with a Placement`,
      online,
      healthy,
      serving,
    };
  }

  importStatus(imp: ServiceImport, now = Date.now()): ServiceImportStatusView {
    const { exp, project, refused: notAllowed } = this.exportOf(imp);
    const serving = exp ? this.servingEdges(exp, now) : [];
    const refused =
      notAllowed ??
      (serving.some((e) => e.online)
        ? undefined
        : serving.length
          ? `no edge serving ServiceExport ${project}/${exp!.metadata.name} is online (${serving.map((e) => e.edge).join(', ')} offline)`
          : `no edge runs workload ${exp!.spec.workload} of ServiceExport ${project}/${exp!.metadata.name}`);
    const selected = this.selected(imp);
    const live = this.state.edges.liveness(imp.metadata.project);
    const reports = this.state.interconnect.ofImport(imp.metadata.name, selected);
    const edges: ConsumingEdgeView[] = selected.map((edge) => {
      const r = reports.get(edge);
      const l = live.get(edge);
      const online = isOnline(l, now);
      return {
        edge,
        online,
        ...(online
          ? {}
          : {
              refusing: `edge ${edge} is offline${l?.lastSeen ? ` since ${new Date(l.lastSeen).toISOString()}` : ''}: it refuses every connection at once until it reconnects to the hub`,
            }),
        listening: !!r?.listening && r.port === imp.spec.port,
        ...(r?.error ? { error: r.error } : {}),
        open: r?.open ?? 0,
        total: r?.total ?? 0,
        refused: r?.refused ?? 0,
        failed: r?.failed ?? 0,
        bytesIn: r?.bytesIn ?? 0,
        bytesOut: r?.bytesOut ?? 0,
        ...(r?.connectP50Ms !== undefined ? { connectP50Ms: r.connectP50Ms } : {}),
        ...(r?.connectP99Ms !== undefined ? { connectP99Ms: r.connectP99Ms } : {}),
        ...(r?.lastError ? { lastError: r.lastError } : {}),
        ...(r?.lastErrorAt ? { lastErrorAt: new Date(r.lastErrorAt).toISOString() } : {}),
      };
    });
    const listening = edges.filter((e) => e.listening).length;
    const sum = (f: (e: ConsumingEdgeView) => number) => edges.reduce((n, e) => n + f(e), 0);
    const open = sum((e) => e.open);
    const worst = (f: (e: ConsumingEdgeView) => number | undefined) => {
      const v = edges.map(f).filter((x): x is number => x !== undefined);
      return v.length ? Math.max(...v) : undefined;
    };
    const p50 = worst((e) => e.connectP50Ms);
    const p99 = worst((e) => e.connectP99Ms);
    // The consuming edges that are away refuse every connection at once (their own listeners).
    const away = edges.filter((e) => !e.online).map((e) => e.edge);
    return {
      summary:
        refused ??
        `listening ${listening}/${edges.length}, ${open} open${away.length ? `; ${away.join(', ')} offline: refusing connections until reconnected` : ''}`,
      export: `${project}/${imp.spec.export}`,
      ...(refused ? { refused } : {}),
      listening,
      open,
      errors: sum((e) => e.refused + e.failed),
      bytesIn: sum((e) => e.bytesIn),
      bytesOut: sum((e) => e.bytesOut),
      ...(p50 !== undefined ? { connectP50Ms: p50 } : {}),
      ...(p99 !== undefined ? { connectP99Ms: p99 } : {}),
      edges,
    };
  }
}
