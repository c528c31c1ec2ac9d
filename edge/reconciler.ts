/**
 * @module The edge reconciler: level-triggered and idempotent. Desired state is the `spec`
 * document combined with the site's local intents (the merge rule in core/mailbox.ts `localState`);
 * actual state is what the driver reports. Each pass creates what is missing, replaces what differs
 * (by content hash: an unchanged workload is never touched, so reconnects and agent restarts do not
 * restart anything), stops what is paused, and removes what is no longer desired, including
 * workloads deleted on the hub while this edge was offline.
 *
 * Status goes into the `report` document as transitions only, all workloads of a pass in one
 * change: a steady fleet adds no history, and a crash loop adds one small change per restart.
 */
import { applyOverridesDetailed, manifestHash } from '../core/customize.js';
import { openSecretsOnEdge } from '../core/secrets.js';
import { FAILED_RETRY_MS, RECONCILE_PERIOD_MS } from '../core/durations.js';
import { mailboxDocId, type EdgeName } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import {
  deleteReportWorkload,
  localState,
  pruneClearedIntents,
  putReportWorkload,
  readReport,
  readSpec,
  type ObservedWorkload,
  type ReportDoc,
  type SpecDoc,
} from '../core/mailbox.js';
import { WORKLOAD_ORDERS } from '../core/orders/workloads.js';
import type { Manifest } from '../core/resources.js';
import type { ReplicaStore } from '../sync/store.js';
import type { Driver, WorkloadObservation } from './drivers/driver.js';
import { ApplyPacing } from './apply-pacing.js';
import { HeldStopped } from './held-stopped.js';
import type { SpecFollower } from './orders/followers.js';

const log = createLogger('edge:reconciler');

export interface ReconcileResult {
  applied: string[];
  removed: string[];
  stopped: string[];
}

/** What edge/data/ adds to a pass: directories in the manifests, and a Degraded reason. */
export interface WorkloadDecorator {
  decorate(name: string, manifests: Manifest[]): Manifest[];
  /** The workloads desired after a pass. */
  desired(names: string[]): void;
  degraded(name: string): string | undefined;
}

/** The workloads kind's follower (edge/orders/followers.ts): a change of the spec triggers a pass. */
export class Reconciler implements SpecFollower {
  readonly kind = WORKLOAD_ORDERS.name;

  /** Added by the agent: export directories (edge/data/egress.ts), the objects directory (edge/data/delivery.ts). */
  readonly decorators: WorkloadDecorator[] = [];
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stoppedByUs = new Set<string>();
  /** When each workload was last applied, to pace the retries of a Failed one. */
  private appliedAt = new Map<string, number>();
  lastResult: ReconcileResult = { applied: [], removed: [], stopped: [] };
  passes = 0;

  constructor(
    private readonly store: ReplicaStore,
    private readonly edge: EdgeName,
    private readonly driver: Driver,
    /** Workloads stopped by a remote `stop` action: kept stopped until `start`, across agent restarts (held-stopped.ts). */
    readonly heldStopped: HeldStopped = HeldStopped.inMemory(),
    /** Tests: retry a Failed workload sooner than FAILED_RETRY_MS. */
    private readonly failedRetryMs = FAILED_RETRY_MS,
    /** The edge's private key (edge.json) that opens the Secret values the hub sealed to it. */
    private readonly sealKey?: string,
    /** Tests: pace unsettled applies on a shorter period than the reconcile period. */
    private readonly pacing = new ApplyPacing(),
  ) {}

  start(): void {
    this.check();
    this.timer = setInterval(() => this.check(), RECONCILE_PERIOD_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  /**
   * The spec changed (or the agent started, or a period passed): a pass now. Never rejects: a pass
   * that fails (the replica cannot be written: a full disk) is logged, and the next change or
   * period runs another. Its callers are timers and events, where a rejection would end the agent.
   */
  check(): void {
    this.trigger().catch((err: unknown) =>
      log.error({ err }, 'reconcile pass failed; the next change or period runs another'),
    );
  }

  /** Runs a pass now, or right after the one in progress. */
  trigger(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.pass();
        } while (this.again);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /**
   * Why a held workload does not run, with what runs it again (the hub shows it as the reason of
   * its Paused state): a pause on site, or a remote `stop`. Undefined when nothing holds it.
   */
  private heldBecause(name: string, pausedOnSite: boolean | undefined): string | undefined {
    if (pausedOnSite)
      return `paused on site: \`outpost edge local resume ${name}\` there, or \`outpost edge clear ${this.edge} ${name}\`, runs it again`;
    if (this.heldStopped.has(name))
      return `stopped by a remote action: \`outpost edge action ${this.edge} start ${name}\` runs it again`;
    return undefined;
  }

  private async pass(): Promise<void> {
    this.passes++;
    const specId = mailboxDocId(this.edge, 'spec');
    const reportId = mailboxDocId(this.edge, 'report');
    const specDoc = this.store.get<SpecDoc>(specId);
    const reportDoc = this.store.get<ReportDoc>(reportId);
    if (!specDoc || !reportDoc) return;
    const spec = readSpec(specDoc);
    const report = readReport(reportDoc);
    const local = localState(report, spec);
    // A hold outlives its workload only as a trap: re-adding the workload later must start it.
    for (const name of [...this.heldStopped]) {
      if (!spec.workloads[name])
        await this.heldStopped
          .delete(name)
          .catch((err: unknown) =>
            log.warn({ err, workload: name }, 'could not drop the stop hold of a removed workload'),
          );
    }
    const result: ReconcileResult = { applied: [], removed: [], stopped: [] };
    let observed: WorkloadObservation[];
    try {
      observed = await this.driver.list();
    } catch (err) {
      log.error({ err }, 'the runtime cannot be listed; retrying on the next pass');
      return;
    }
    const actual = new Map(observed.map((o) => [o.name, o]));
    const problems = new Map<string, string>();
    const wantHash = new Map<string, string>();

    for (const w of Object.values(spec.workloads)) {
      if (w.error) continue; // the hub could not build it for this edge; the hub shows why
      const st = local[w.name];
      const { manifests: given, problems: p } = applyOverridesDetailed(w.manifests, st?.overrides ?? {});
      if (p.length) problems.set(w.name, p.join('; '));
      const manifests = this.decorators.reduce((m, d) => d.decorate(w.name, m), given);
      const hash = manifestHash(manifests);
      wantHash.set(w.name, hash);
      const cur = actual.get(w.name);
      let applying = false;
      try {
        if (st?.paused || this.heldStopped.has(w.name)) {
          if (cur && !this.stoppedByUs.has(w.name)) {
            await this.driver.stopWorkload(w.name);
            this.stoppedByUs.add(w.name);
            result.stopped.push(w.name);
          }
          continue;
        }
        // A Failed workload is applied again now and then: its cause may have been fixed on site.
        const retry = cur?.phase === 'Failed' && Date.now() - (this.appliedAt.get(w.name) ?? 0) >= this.failedRetryMs;
        // Drift (objects someone changed or deleted on site) is put back by applying again.
        const drift = cur && cur.hash === hash && cur.modified?.length ? cur.modified : undefined;
        if (!cur || cur.hash !== hash || retry || drift) {
          // Applies that settle nothing (they throw, the drift comes back) are paced (apply-pacing.ts).
          const held = retry ? undefined : this.pacing.holdBack(w.name, hash, Date.now());
          if (held !== undefined) {
            problems.set(w.name, held);
            continue;
          }
          this.appliedAt.set(w.name, Date.now());
          applying = true;
          // Opened only here, for the driver: the replica keeps what the hub sealed (core/secrets.ts).
          await this.driver.apply({
            name: w.name,
            generation: w.generation,
            manifests: openSecretsOnEdge(this.sealKey, manifests),
            hash,
          });
          this.stoppedByUs.delete(w.name);
          result.applied.push(w.name);
          if (drift) {
            this.pacing.unsettled(w.name, hash, Date.now(), { drift });
            const why = this.pacing.why(w.name);
            if (why) problems.set(w.name, why);
          }
        } else if (this.stoppedByUs.has(w.name) || cur.stopped) {
          // Stopped and held by nothing any more. Not by this run of the reconciler either: a
          // pause lost with a rebuilt replica, or a hold lifted before the first pass after a restart.
          if (!this.stoppedByUs.has(w.name))
            log.warn(
              { workload: w.name },
              'the workload is stopped but nothing holds it stopped any more: starting it',
            );
          await this.driver.startWorkload(w.name);
          this.stoppedByUs.delete(w.name);
          result.applied.push(w.name);
        } else {
          this.pacing.settled(w.name);
        }
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (applying) this.pacing.unsettled(w.name, hash, Date.now(), { error: message });
        problems.set(w.name, (applying && this.pacing.why(w.name)) || `applying failed: ${message}`);
        log.error({ err, workload: w.name }, 'applying a workload failed');
      }
    }
    for (const o of observed) {
      if (spec.workloads[o.name]) continue;
      try {
        await this.driver.remove(o.name);
        this.stoppedByUs.delete(o.name);
        this.appliedAt.delete(o.name);
        this.pacing.settled(o.name);
        result.removed.push(o.name);
      } catch (err) {
        log.error({ err, workload: o.name }, 'removing a workload failed');
      }
    }
    for (const d of this.decorators) d.desired(Object.values(spec.workloads).map((w) => w.name));
    if (result.applied.length || result.removed.length || result.stopped.length) log.info(result, 'reconciled');
    this.lastResult = result;

    // Status, after acting, from a fresh look at the runtime.
    const after =
      result.applied.length || result.removed.length || result.stopped.length
        ? new Map((await this.driver.list().catch(() => observed)).map((o) => [o.name, o]))
        : actual;
    const now = Date.now();
    // Compared with the report as it was (`was`, a plain object), written through `d`.
    this.store.change<ReportDoc>(reportId, (d, was) => {
      pruneClearedIntents(d, spec.intentsCleared, was);
      for (const name of Object.keys(was.workloads)) if (!spec.workloads[name]) deleteReportWorkload(d, name, was);
      for (const w of Object.values(spec.workloads)) {
        if (w.error) {
          deleteReportWorkload(d, w.name, was);
          continue;
        }
        const o = after.get(w.name);
        const st = local[w.name];
        const hashNow = wantHash.get(w.name);
        // Same content under a newer generation counts as applied: nothing had to change.
        const observedGeneration = o && o.hash === hashNow ? w.generation : (o?.generation ?? 0);
        const status: ObservedWorkload = o
          ? {
              observedGeneration,
              phase: st?.paused || this.heldStopped.has(w.name) ? 'Paused' : o.phase,
              restarts: o.restarts,
              objects: o.objects,
              message: problems.get(w.name) ?? this.heldBecause(w.name, st?.paused) ?? o.message,
            }
          : {
              observedGeneration: 0,
              phase: 'Pending',
              restarts: 0,
              objects: {},
              message: problems.get(w.name) ?? 'not started yet',
            };
        const degraded = this.decorators.map((d) => d.degraded(w.name)).find((r) => r !== undefined);
        if (degraded && status.phase === 'Ready') {
          status.phase = 'Degraded';
          status.message = degraded;
        }
        if (status.message === undefined) delete status.message;
        putReportWorkload(d, w.name, status, now, was.workloads[w.name]);
      }
    });
  }
}
