/**
 * @module The interconnect's data path on the hub (docs/interconnect.md): a consuming edge opens a
 * stream for each connection it accepts (header core/orders/interconnect.ts InterconnectOpen); the
 * hub authorises it against the objects now (the import exists in the edge's project and selects
 * the edge, the export exists and allows the import's project), picks an edge that serves the
 * export and is connected here (round robin), opens a `tcp` stream to it through the tunnel gateway
 * (hub/tunnel/gateway.ts `openTo`: the same mux, bounds and counters as every tunnel stream) and
 * splices the two.
 *
 * Backpressure is the streams' own: each side is piped into the other, so a stream whose peer
 * grants no credit stops taking writes, the pipe stops reading the other stream, and that one stops
 * granting credit to its edge. The hub holds at most one window and one write buffer per
 * direction (sync/tunnel-stream.ts). An END crosses as an END (half-close); a RESET either way
 * resets the other with the same code and message. A refusal is a RESET at once, naming why.
 */
import type { EdgeName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { InterconnectOpen } from '../../core/orders/interconnect.js';
import type { ServiceImport } from '../../core/resources.js';
import { TunnelError, type TunnelErrorCode, type TunnelStream } from '../../sync/tunnel.js';
import type { ObjectStore } from '../objects.js';
import type { EdgeState } from '../state/edges.js';
import type { InterconnectPlanner } from './index.js';

const log = createLogger('hub:interconnect');

export interface RelayDeps {
  planner: InterconnectPlanner;
  objects: ObjectStore;
  edges: Pick<EdgeState, 'get'>;
  /** Opens a stream to an edge connected to this process; throws when it is not (hub/tunnel/gateway.ts `openTo`). */
  openTo(edge: EdgeName, header: Record<string, unknown>): TunnelStream;
}

export function isInterconnectHeader(h: Record<string, unknown>): boolean {
  return h.type === 'interconnect';
}

export class InterconnectRelay {
  /** Per export (`project/name`), where the round robin goes next. */
  private readonly next = new Map<string, number>();

  constructor(private readonly d: RelayDeps) {}

  /** A stream a consuming edge opened for one connection. */
  serve(edge: EdgeName, s: TunnelStream): void {
    s.on('error', () => undefined);
    const refuse = (code: TunnelErrorCode, message: string): void => {
      log.debug({ edge, code, message }, 'interconnect connection refused');
      s.destroy(new TunnelError(code, message));
    };
    const parsed = InterconnectOpen.safeParse(s.header);
    if (!parsed.success) return refuse('refused', `malformed interconnect stream: ${parsed.error.issues[0]?.message}`);
    const rt = this.d.edges.get(edge);
    if (!rt?.approved) return refuse('forbidden', `edge ${edge} is not enrolled and approved`);
    const name = parsed.data.import;
    const imp = this.d.objects.get<ServiceImport>('ServiceImport', rt.project, name);
    if (!imp) return refuse('not_found', `ServiceImport ${name} not found in project ${rt.project}`);
    if (!this.d.planner.selected(imp).includes(edge))
      return refuse('forbidden', `ServiceImport ${rt.project}/${name} does not select edge ${edge}`);
    const { exp, project, refused } = this.d.planner.exportOf(imp);
    if (refused || !exp) return refuse('forbidden', refused ?? 'no export');
    const key = `${project}/${exp.metadata.name}`;
    const candidates = this.d.planner.servingEdges(exp).filter((e) => e.online);
    if (!candidates.length)
      return refuse('unavailable', `no edge serving ServiceExport ${key} is online: connection refused`);
    const start = this.next.get(key) ?? 0;
    let out: TunnelStream | undefined;
    let why = '';
    for (let i = 0; i < candidates.length && !out; i++) {
      const to = candidates[(start + i) % candidates.length]!.edge as EdgeName;
      try {
        out = this.d.openTo(to, { type: 'tcp', workload: exp.spec.workload, port: exp.spec.port });
        this.next.set(key, (start + i + 1) % candidates.length);
      } catch (err) {
        why = (err as Error).message;
      }
    }
    if (!out) return refuse('unavailable', `no edge serving ServiceExport ${key} is reachable from this hub (${why})`);
    splice(s, out);
  }
}

/** Pipes two streams into each other; a failure of either resets the other with its reason. */
function splice(a: TunnelStream, b: TunnelStream): void {
  b.on('error', () => undefined);
  a.pipe(b);
  b.pipe(a);
  const fail = (to: TunnelStream) => (err: Error) => {
    if (to.destroyed) return;
    to.destroy(err instanceof TunnelError ? err : new TunnelError('aborted', err.message));
  };
  a.on('error', fail(b));
  b.on('error', fail(a));
}
