/**
 * @module The edge's end of the tunnel (docs/tunnel.md): streams the hub opens over our own sync
 * connection. The edge decides what a stream may reach, whatever the hub asks:
 * - `http` to a workload goes only to a port the workload declares (`driver.endpoint`), never to
 *   an arbitrary host or port of the device; `http` to `kube` goes only to the cluster API of this
 *   edge's kubeconfig, or else of the cluster whose control plane the edge runs (docs/clusters.md),
 *   with the edge's own credential (the hub user's token never leaves the hub);
 * - logs and exec run through the driver; actions through the driver and the reconciler;
 * - `tcp` (a ServiceExport's connection, edge/interconnect/serve.ts) goes only to a declared port.
 *
 * @example
 * const tunnel = createTunnelAgent({ driver, reconciler, transport: { send: (p) => sync.sendTunnel(p), bufferedAmount: () => sync.bufferedAmount() } });
 * sync.on('tunnel', (p) => tunnel.receive(p));
 */
import { createLogger } from '../../core/logger.js';
import {
  TunnelError,
  TunnelMux,
  TunnelRequest,
  type StreamLimits,
  type TunnelStream,
  type TunnelTransport,
} from '../../sync/tunnel.js';
import type { Driver } from '../drivers/driver.js';
import type { Reconciler } from '../reconciler.js';
import { runAction, runExec, runLogs, runMetrics } from './ops.js';
import { forwardHttp, kubeTarget } from './http.js';
import { serveExport } from '../interconnect/serve.js';
import type { KubeTarget } from './kube-target.js';

const log = createLogger('edge:tunnel');

/** Streams the edge serves at once; more are refused so a misbehaving hub cannot exhaust the device. */
const MAX_EDGE_STREAMS = 256;

export interface TunnelAgentOptions {
  driver: Driver;
  reconciler: Reconciler;
  transport: TunnelTransport;
  /** The kubeconfig of the kubernetes driver: the only cluster API the `kube` target reaches. */
  kubeconfig?: string;
  /**
   * Without `kubeconfig`: the admin kubeconfig of the cluster whose control plane this edge runs,
   * looked up at each request (the node comes and goes with its order).
   */
  clusterKubeconfig?: () => string | undefined;
  /** The agent's Prometheus page, for the hub's `GET /api/v1/edges/NAME/metrics`. */
  metrics?: () => Promise<{ text: string; contentType: string }>;
}

export interface TunnelAgent {
  /** One 0x02 payload from the hub. */
  receive(payload: Buffer): void;
  /** The connection dropped: every stream ends with an error. */
  disconnected(): void;
  /** Open streams (for metrics and tests). */
  streams(): number;
  /** Opens a stream to the hub (blob transfers, sync/transfer.ts); throws when disconnected. */
  open(header: Record<string, unknown>, limits?: StreamLimits): TunnelStream;
}

export function createTunnelAgent(o: TunnelAgentOptions): TunnelAgent {
  let kube: Promise<KubeTarget> | undefined;
  const kubeOnce = (): Promise<KubeTarget> => {
    if (!o.kubeconfig) {
      const cluster = o.clusterKubeconfig?.();
      if (cluster) return kubeTarget(cluster);
      return Promise.reject(
        new TunnelError(
          'not_found',
          `this edge runs the ${o.driver.name} driver: it has no Kubernetes API to reach (no kubeconfig, and no cluster's control plane runs here)`,
        ),
      );
    }
    kube ??= kubeTarget(o.kubeconfig).catch((err: unknown) => {
      kube = undefined;
      throw err;
    });
    return kube;
  };

  const serve = (s: TunnelStream): void => {
    const parsed = TunnelRequest.safeParse(s.header);
    if (!parsed.success) {
      s.destroy(
        new TunnelError(
          'refused',
          `malformed tunnel request: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`,
        ),
      );
      return;
    }
    const r = parsed.data;
    s.on('error', () => undefined);
    const work =
      r.type === 'http'
        ? forwardHttp(
            s,
            r,
            r.target === 'kube' ? kubeOnce : () => endpointOf(o.driver, r.target as { workload: string; port: number }),
          )
        : r.type === 'logs'
          ? runLogs(s, o.driver, r)
          : r.type === 'exec'
            ? runExec(s, o.driver, r)
            : r.type === 'metrics'
              ? runMetrics(s, o.metrics)
              : r.type === 'tcp'
                ? serveExport(s, o.driver, r)
                : runAction(s, o.driver, o.reconciler, r);
    work.catch((err: unknown) => {
      const e =
        err instanceof TunnelError
          ? err
          : new TunnelError('internal', err instanceof Error ? err.message : String(err));
      if (e.code === 'internal') log.warn({ err, stream: s.id, type: r.type }, 'tunnel stream failed');
      s.destroy(e);
    });
  };

  const newMux = () => new TunnelMux({ ...o.transport, side: 'edge', onStream: serve, maxStreams: MAX_EDGE_STREAMS });
  let current = newMux();

  return {
    receive(payload) {
      try {
        current.receive(payload);
      } catch (err) {
        // A malformed frame from the hub is a bug on the hub; drop it rather than the connection.
        log.warn({ err }, 'dropped a malformed tunnel frame from the hub');
      }
    },
    disconnected() {
      current.close('the hub connection dropped');
      current = newMux();
    },
    streams: () => current.size,
    open: (header, limits) => current.open(header, limits),
  };
}

async function endpointOf(driver: Driver, t: { workload: string; port: number }): Promise<KubeTarget> {
  let ep;
  try {
    ep = await driver.endpoint(t.workload, t.port);
  } catch (err) {
    throw new TunnelError('unavailable', `workload ${t.workload}: ${(err as Error).message}`);
  }
  if (!ep)
    throw new TunnelError(
      'forbidden',
      `workload ${t.workload} does not declare port ${t.port} on this edge (or does not run here): only declared containerPorts are reachable through the proxy`,
    );
  return {
    url: new URL(`http://${ep.host.includes(':') ? `[${ep.host}]` : ep.host}:${ep.port}`),
    options: {},
    headers: {},
  };
}
