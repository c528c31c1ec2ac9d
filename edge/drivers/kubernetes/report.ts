/**
 * @module One workload's observation (driver.ts) from its live objects, its pods and the driver's
 * record, as a pure function: the phase of each object (observe.ts), drift (drift.ts), then the
 * record's stop flag or apply error over everything, and the hash and generation the live labels
 * carry.
 */
import { stoppedOnRequest, type WorkloadObservation } from '../driver.js';
import { driftOf } from './drift.js';
import { LABEL_GENERATION, LABEL_HASH, defaultNamespace, identity, objectKey, prepare, type KObj } from './objects.js';
import { objectPhase, restartsOf, worstPhase, type ObjectPhase } from './observe.js';
import type { WorkloadRecord } from './state.js';

/** Pods of a Deployment: same namespace and matching its selector. */
function podsOf(d: KObj, pods: KObj[]): KObj[] {
  const sel = (d.spec?.selector?.matchLabels ?? {}) as Record<string, string>;
  return pods.filter(
    (p) =>
      p.metadata.namespace === d.metadata.namespace &&
      Object.entries(sel).every(([k, v]) => p.metadata.labels?.[k] === v),
  );
}

/**
 * `objs`: the workload's live top-level objects (not terminating); `pods`: all its pods;
 * `rec`: what the driver remembers of it, if anything.
 */
export function observeWorkload(
  name: string,
  objs: KObj[],
  pods: KObj[],
  rec: WorkloadRecord | undefined,
): WorkloadObservation {
  const wpods = pods.filter((p) => !p.metadata.deletionTimestamp);
  const hashes = new Set(objs.map((o) => o.metadata.labels?.[LABEL_HASH] ?? ''));
  const hash = objs.length === 0 ? (rec?.unit.hash ?? '') : hashes.size === 1 ? [...hashes][0] : '';
  const generation =
    rec && rec.unit.hash === hash
      ? rec.unit.generation
      : Math.max(0, ...objs.map((o) => Number(o.metadata.labels?.[LABEL_GENERATION] ?? 0)));
  const phases: Record<string, ObjectPhase> = {};
  for (const o of objs) {
    // The workload's own namespace is plumbing, not one of its objects, unless a manifest declares it.
    const declared = rec?.unit.manifests.some((m) => m.kind === 'Namespace' && m.metadata.name === o.metadata.name);
    if (o.kind === 'Namespace' && o.metadata.name === defaultNamespace(name) && !declared) continue;
    phases[objectKey(o, name)] = objectPhase(o, o.kind === 'Deployment' ? podsOf(o, wpods) : []);
  }
  const modified: string[] = [];
  if (rec && !rec.stopped && !rec.error && rec.unit.hash === hash) {
    const prepared = prepare(rec.unit);
    const live = new Map(objs.map((o) => [identity(o), o]));
    for (const d of [...(prepared.ownNamespace ? [prepared.ownNamespace] : []), ...prepared.objects]) {
      const drift = driftOf(d, live.get(identity(d)));
      if (drift.length === 0) continue;
      const key = objectKey(d, name);
      modified.push(...drift.map((x) => (x.path ? `${key}: ${x.path}` : key)));
      phases[key] = {
        ready: phases[key]?.ready ?? false,
        phase: 'Modified',
        message: `${drift.map((x) => x.message).join('; ')}; the next apply puts it back`,
      };
    }
  }
  let { phase, message } = worstPhase(phases);
  if (rec?.error) [phase, message] = ['Failed', rec.error];
  else if (rec?.stopped) [phase, message] = ['Paused', stoppedOnRequest(name)];
  else if (hashes.size > 1)
    [phase, message] = ['Progressing', 'objects carry different unit hashes; an apply was interrupted'];
  const objectsOut = Object.fromEntries(
    Object.entries(phases).map(([k, p]) => [
      k,
      p.message ? { ready: p.ready, message: p.message } : { ready: p.ready },
    ]),
  );
  return {
    name,
    generation,
    hash,
    phase,
    ...(message ? { message } : {}),
    restarts: restartsOf(wpods),
    objects: objectsOut,
    ...(modified.length ? { modified } : {}),
    ...(rec?.stopped ? { stopped: true } : {}),
  };
}
