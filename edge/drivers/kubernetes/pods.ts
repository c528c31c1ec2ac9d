/**
 * @module The pod a request means: for logs and exec the workload's best pod (ready first, then
 * running, newest first) and the container named or its first; for `endpoint` the IP of a ready pod
 * that declares the port.
 */
import { DriverError, type Endpoint } from '../driver.js';
import { owned, type KubernetesContext } from './cluster.js';
import { LABEL_WORKLOAD, type KObj } from './objects.js';
import { objectPhase } from './observe.js';

/** The pod to read logs from or exec into: ready first, then running, newest first. */
export async function pickPod(ctx: KubernetesContext, name: string): Promise<KObj> {
  const { pods } = await owned(ctx, `${LABEL_WORKLOAD}=${name}`);
  const alive = pods.filter((p) => !p.metadata.deletionTimestamp);
  const score = (p: KObj): number => (objectPhase(p, []).ready ? 2 : p.status?.phase === 'Running' ? 1 : 0);
  alive.sort(
    (a, b) =>
      score(b) - score(a) ||
      String(b.metadata.creationTimestamp ?? '').localeCompare(String(a.metadata.creationTimestamp ?? '')),
  );
  if (alive.length === 0)
    throw new DriverError(`workload ${name} has no pods on this cluster; is it applied and not stopped?`);
  return alive[0];
}

export function containerOf(pod: KObj, wanted?: string): string {
  const names = ((pod.spec?.containers ?? []) as { name: string }[]).map((c) => c.name);
  if (wanted && !names.includes(wanted))
    throw new DriverError(`pod ${pod.metadata.name} has no container ${wanted}; it has: ${names.join(', ')}`);
  return wanted ?? names[0];
}

/** The pod IP of a ready pod that declares `containerPort: port`; null when there is none. */
export async function podEndpoint(ctx: KubernetesContext, name: string, port: number): Promise<Endpoint | null> {
  const { pods } = await owned(ctx, `${LABEL_WORKLOAD}=${name}`);
  const declares = (p: KObj): boolean =>
    ((p.spec?.containers ?? []) as { ports?: { containerPort: number }[] }[]).some((c) =>
      (c.ports ?? []).some((x) => x.containerPort === port),
    );
  const ready = pods.filter((p) => declares(p) && objectPhase(p, []).ready && p.status?.podIP);
  return ready.length > 0 ? { host: String(ready[0].status.podIP), port } : null;
}
