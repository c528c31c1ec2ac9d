/**
 * @module Applying a workload unit on the cluster: what to write (nothing when every object is live
 * with the unit's hash and none drifted, drift.ts), then the writes in order (shared namespaces,
 * each object by server-side apply, a CRD waited for until Established, the owned objects that left
 * the unit pruned) and the record in the data dir (state.ts). An error the API server gives for the
 * unit (4xx, an unknown kind) is recorded as the workload's failure, not thrown. Any other apply
 * that did not finish (a 5xx answer, an unreachable server) is recorded as the failure too, so
 * the objects written before it never read as a Ready workload, and throws a DriverError: the
 * reconciler tries again at its pace for applies that settle nothing (edge/apply-pacing.ts).
 */
import { createLogger } from '../../../core/logger.js';
import { DriverError, type WorkloadUnit } from '../driver.js';
import {
  applyObject,
  deleteObjects,
  ensureNamespace,
  owned,
  waitEstablished,
  waitGone,
  type KubernetesContext,
} from './cluster.js';
import { driftOf } from './drift.js';
import { BASE_KINDS, LABEL_HASH, LABEL_WORKLOAD, identity, objectKey, prepare, type KObj } from './objects.js';
import type { WorkloadRecord } from './state.js';

const log = createLogger('edge:driver:kubernetes');

/** The message of the server's answer (a Kubernetes Status), if it gave one. */
function serverMessage(err: unknown): string | undefined {
  const e = err as { body?: unknown };
  const body = typeof e.body === 'string' ? safeJson(e.body) : e.body;
  return (body as { message?: string } | undefined)?.message;
}

/**
 * An answer of the API server that says the write may succeed if tried again (5xx: overloaded,
 * etcd leader change, a webhook down), as `HTTP N: message`; undefined for anything else.
 */
function serverFault(err: unknown): string | undefined {
  const code = (err as { code?: number }).code;
  if (typeof code !== 'number' || code < 500 || code > 599) return undefined;
  return `HTTP ${code}: ${serverMessage(err) ?? 'the API server gave no message'}`;
}

/** An error the API server gave for this unit (4xx), as opposed to the server being unreachable. */
function rejection(err: unknown): string | undefined {
  const e = err as { code?: number; message?: string };
  const msg = serverMessage(err);
  if (typeof e.code === 'number' && e.code >= 400 && e.code < 500) {
    if (/Failed to fetch resource metadata/.test(e.message ?? ''))
      return 'the API server does not serve this apiVersion/kind; install its CRD or fix the manifest';
    return msg ?? `HTTP ${e.code}`;
  }
  if (err instanceof Error && /^Unrecognized API version and kind/.test(err.message))
    return `${err.message}; install its CRD or fix the manifest`;
  return undefined;
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

/** `force`: write even when the live objects carry the unit's hash (a start after a stop). */
export async function applyUnit(ctx: KubernetesContext, unit: WorkloadUnit, force: boolean): Promise<void> {
  const prev = await ctx.state.read(unit.name);
  const prepared = prepare(unit);
  const desired = [...(prepared.ownNamespace ? [prepared.ownNamespace] : []), ...prepared.objects];
  const { objects: live } = await owned(ctx, `${LABEL_WORKLOAD}=${unit.name}`);
  const liveIds = new Map(live.map((o) => [identity(o), o]));
  const sameHash =
    !force &&
    !prev?.stopped &&
    !prev?.error &&
    live.length === desired.length &&
    desired.every((d) => liveIds.get(identity(d))?.metadata.labels?.[LABEL_HASH] === unit.hash);
  const drifted = sameHash ? desired.filter((d) => driftOf(d, liveIds.get(identity(d))).length > 0) : [];
  if (drifted.length > 0)
    log.info(
      { workload: unit.name, objects: drifted.map((d) => objectKey(d, unit.name)) },
      'objects were changed by someone else; applying them again',
    );
  const upToDate = sameHash && drifted.length === 0;
  if (upToDate) {
    // Same manifests under a newer generation: remember it, touch nothing in the cluster.
    if (prev && prev.unit.generation !== unit.generation) await ctx.state.write({ ...prev, unit });
    return;
  }
  const extraKinds = [
    ...new Set([...(prev?.extraKinds ?? []), ...unit.manifests.map((m) => `${m.apiVersion}/${m.kind}`)]),
  ].filter((k) => !BASE_KINDS.some((b) => `${b.apiVersion}/${b.kind}` === k));
  const record: WorkloadRecord = { unit, stopped: false, extraKinds: [] };
  try {
    for (const ns of prepared.sharedNamespaces) await ensureNamespace(ctx, ns);
    for (const o of desired) {
      await applyOne(ctx, o, liveIds.get(identity(o)));
      // Its custom resources come later in this unit; the API server serves them once Established.
      if (o.kind === 'CustomResourceDefinition') await waitEstablished(ctx, o);
    }
    const wanted = new Set(desired.map(identity));
    await deleteObjects(
      ctx,
      live.filter((o) => !wanted.has(identity(o))),
    );
  } catch (err) {
    const why = rejection(err);
    if (why === undefined) {
      // Not finished: what was written before the failing object carries the new hash, and must
      // not read as the unit applied. Recorded as the failure, then thrown to be tried again.
      const failure = unfinished(err, unit.name);
      await ctx.state.write({ ...record, error: failure.message, extraKinds: prev?.extraKinds ?? [] });
      throw failure;
    }
    record.error = why;
    log.warn({ workload: unit.name, err: why }, 'workload rejected by the API server');
  }
  // Kinds that failed discovery are not remembered: listing them on every pass would fail too.
  record.extraKinds = record.error ? (prev?.extraKinds ?? []) : extraKinds;
  await ctx.state.write(record);
}

/** The DriverError of an apply that did not finish, naming the server's answer when it gave one. */
function unfinished(err: unknown, workload: string): DriverError {
  const at = (err as { object?: string }).object;
  const fault = serverFault(err);
  if (fault !== undefined)
    return new DriverError(`${at ? `${at}: ` : ''}${fault}; the apply of ${workload} is tried again`, { cause: err });
  if (err instanceof DriverError) return err;
  return new DriverError(
    `applying workload ${workload} failed${at ? ` at ${at}` : ''}: ${(err as Error).message ?? String(err)}`,
    { cause: err },
  );
}

async function applyOne(ctx: KubernetesContext, o: KObj, live: KObj | undefined): Promise<void> {
  try {
    await applyObject(ctx, o);
  } catch (err) {
    // Pod specs are immutable apart from images: replace the pod, as kubectl replace --force would.
    if (o.kind === 'Pod' && live && (err as { code?: number }).code === 422) {
      await deleteObjects(ctx, [live]);
      await waitGone(ctx, [live]);
      await applyObject(ctx, o);
      return;
    }
    const why = rejection(err);
    if (why !== undefined)
      throw Object.assign(new Error(`${o.kind}/${o.metadata.name}: ${why}`), {
        code: 422,
        body: { message: `${o.kind}/${o.metadata.name}: ${why}` },
      });
    // Which object the apply stopped at, for the message (the error may be a library's own).
    if (err !== null && typeof err === 'object') Object.assign(err, { object: `${o.kind}/${o.metadata.name}` });
    throw err;
  }
}
