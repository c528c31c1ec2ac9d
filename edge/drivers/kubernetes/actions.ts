/**
 * @module Stop, start and restart on request (the remote actions). Stop records the stop flag
 * (the workload reports Paused), scales Deployments to 0 as an apply by `outpost` and deletes Pods;
 * start applies the last unit again, forced; restart rolls Deployments with a pod-template
 * annotation under a second field manager (like `kubectl rollout restart`) and recreates Pods.
 */
import { DriverError } from '../driver.js';
import { applyUnit } from './apply.js';
import { applyObject, deleteObjects, owned, waitGone, type KubernetesContext } from './cluster.js';
import { LABEL_WORKLOAD, RESTARTED_AT, RESTART_FIELD_MANAGER, prepare, type KObj } from './objects.js';
import type { WorkloadRecord } from './state.js';

async function knownRecord(ctx: KubernetesContext, name: string): Promise<WorkloadRecord> {
  const rec = await ctx.state.read(name);
  if (!rec)
    throw new DriverError(`workload ${name} is not known to the kubernetes driver on this edge; apply it first`);
  return rec;
}

export async function stopOnRequest(ctx: KubernetesContext, name: string): Promise<void> {
  const rec = await knownRecord(ctx, name);
  await ctx.state.write({ ...rec, stopped: true });
  const { objects } = await owned(ctx, `${LABEL_WORKLOAD}=${name}`);
  for (const o of prepare(rec.unit).objects) {
    if (o.kind === 'Deployment') await applyObject(ctx, { ...o, spec: { ...o.spec, replicas: 0 } });
  }
  await deleteObjects(
    ctx,
    objects.filter((o) => o.kind === 'Pod'),
  );
}

export async function startOnRequest(ctx: KubernetesContext, name: string): Promise<void> {
  const rec = await knownRecord(ctx, name);
  // Forced: the live objects carry the right hash while scaled to zero, so a plain apply would skip them.
  await applyUnit(ctx, rec.unit, true);
}

export async function restartOnRequest(ctx: KubernetesContext, name: string): Promise<void> {
  const rec = await knownRecord(ctx, name);
  const { objects } = await owned(ctx, `${LABEL_WORKLOAD}=${name}`);
  const at = new Date().toISOString();
  for (const d of objects.filter((o) => o.kind === 'Deployment')) {
    const patch = {
      apiVersion: d.apiVersion,
      kind: d.kind,
      metadata: { name: d.metadata.name, namespace: d.metadata.namespace },
      spec: { template: { metadata: { annotations: { [RESTARTED_AT]: at } } } },
    };
    await applyObject(ctx, patch as KObj, RESTART_FIELD_MANAGER);
  }
  const pods = objects.filter((o) => o.kind === 'Pod');
  if (pods.length > 0) {
    await deleteObjects(ctx, pods);
    await waitGone(ctx, pods);
    for (const o of prepare(rec.unit).objects.filter((x) => x.kind === 'Pod')) await applyObject(ctx, o);
  }
}
