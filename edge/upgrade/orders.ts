/**
 * @module The edge's side of an AgentUpgrade (docs/operations.md, "Upgrading edges from the hub"):
 * when its spec carries an upgrade order (core/mailbox.ts), the agent brings the release's binary
 * over its own connection (the wanted queue, edge/blobs/), checks and stages it
 * (edge/upgrade/release.ts), snapshots its replica (edge/upgrade/snapshot.ts), records the switch
 * (edge/upgrade/switch.ts) and restarts into it; the launcher commits or rolls back. Each step is
 * reported in the report document: Pending, Downloading n% (every tenth), Staged, Switching,
 * Running, RolledBack (reason), NoSpace (need/free), Refused (reason). Workloads run on throughout.
 *
 * An order is done when the agent runs the release's binary: the digest of the release it runs
 * (committed, or on trial) equals the order's, whatever the version strings say, so a rebuilt
 * binary with an unchanged version is installed like any other release. An order is carried out
 * once per binary: after a rollback the edge reports RolledBack for it and runs the old binary
 * on; a new order (another digest) starts over. A binary that reports another version than its
 * release is refused on trial (edge/upgrade/launcher.ts) and rolled back with that reason.
 *
 * Before anything is downloaded the release must verify with the pinned key, be signed for this
 * edge's project (or every project), and not be older than what the edge runs or committed unless
 * the order says `allowDowngrade` (core/release.ts): else Refused with the reason, checked again at
 * every spec change, so an order the AgentUpgrade then allows goes ahead without a restart.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BlobDigest } from '../../core/blobs.js';
import { mailboxDocId, type EdgeName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import {
  readReportAgentUpgrade,
  readSpecAgentUpgrade,
  setReportAgentUpgrade,
  type AgentUpgradeOrder,
  type AgentUpgradeProgress,
  type ReportDoc,
  type SpecDoc,
} from '../../core/mailbox.js';
import type { ReplicaStore } from '../../sync/store.js';
import type { EdgeBlobStore } from '../blobs/store.js';
import type { EdgeTransfers } from '../blobs/transfers.js';
import { downgradeRefusal, newerInstalled } from '../../core/release.js';
import { ReleaseRefused, stageRelease, verifyReleaseFor } from './release.js';
import { snapshotReplica } from './snapshot.js';
import { agentDir, installedVersions, readUpgradeState, requestSwitch, runningDigest } from './switch.js';

const log = createLogger('edge:upgrade');

export interface UpgradeOrdersDeps {
  dataDir: string;
  edge: EdgeName;
  store: ReplicaStore;
  blobs: EdgeBlobStore;
  transfers: EdgeTransfers;
  releaseKey: string | undefined;
  /** The edge's project: releases signed for another are refused. */
  project: string;
  /** The version this agent runs. */
  version: string;
  /** This agent is the new binary on trial (not committed yet): it reports Switching, not Running. */
  onTrial: boolean;
  /** Resolves once the report has reached the hub, or after a short wait: the hub should see Switching. */
  reportSent(): Promise<void>;
  /** Closes the agent and starts `outpost edge` again, which switches to release `version`. */
  restart(version: string): void;
}

export const orderKey = (o: { upgrade: string; release: { digest: string } }) => `${o.upgrade}@${o.release.digest}`;

export class UpgradeOrders {
  private busy = false;
  /** Orders that failed in this process (no space, refused): not tried again until the agent restarts. */
  private readonly failed = new Set<string>();
  private readonly specId;
  private readonly reportId;

  constructor(private readonly d: UpgradeOrdersDeps) {
    this.specId = mailboxDocId(d.edge, 'spec');
    this.reportId = mailboxDocId(d.edge, 'report');
  }

  /** Looks at the spec's order and acts on it; call at start and on every spec change. */
  check(): void {
    if (this.busy) return;
    const spec = this.d.store.get<SpecDoc>(this.specId);
    const order = spec ? readSpecAgentUpgrade(spec) : undefined;
    if (!order) return;
    const key = orderKey(order);
    const base = { upgrade: order.upgrade, digest: order.release.digest, version: order.release.version };
    try {
      verifyReleaseFor(this.d, order.release);
    } catch (err) {
      this.refuse(order, (err as Error).message);
      return;
    }
    const sw = readUpgradeState(this.d.dataDir);
    // Done when this agent runs the release's bytes, whichever order brought them: the digest, not
    // the version string (a rebuilt binary with an unchanged version is another release).
    if (runningDigest(sw, this.d.onTrial) === order.release.digest) {
      if (this.d.version !== order.release.version) {
        // Committed by an agent from before the trial checked it (launcher.ts refuseWrongVersion):
        // switching again would loop; the rollout counts it failed and says why.
        this.report({
          ...base,
          state: 'Refused',
          reason: `the binary of release ${order.release.version} runs here and reports version ${this.d.version}: the release was signed with a version its binary does not report; push the binary again without --release-version`,
        });
        return;
      }
      this.report({ ...base, state: this.d.onTrial ? 'Switching' : 'Running' });
      return;
    }
    if (sw?.order === key && sw.state === 'rolled-back') {
      this.report({ ...base, state: 'RolledBack', reason: (sw.reason ?? 'rolled back').slice(0, 1024) });
      return;
    }
    if (sw?.order === key && sw.state === 'trial') {
      // Staged and recorded; the next start of `outpost edge` switches: nothing to do again.
      this.report({ ...base, state: 'Switching' });
      return;
    }
    const installed = installedVersions(this.d.dataDir, this.d.version);
    const downgrade = downgradeRefusal(
      order.release.version,
      installed,
      order.allowDowngrade === true,
      `set spec.allowDowngrade: true in AgentUpgrade ${order.upgrade}`,
    );
    if (downgrade) {
      this.refuse(order, downgrade);
      return;
    }
    if (this.failed.has(key)) return;
    const newer = newerInstalled(order.release.version, installed);
    // Allowed (else refused above): each report on the way says it is a downgrade and why it goes ahead.
    const note =
      newer && `a downgrade from ${newer.version} (${newer.what}), allowed by the AgentUpgrade's allowDowngrade: true`;
    this.busy = true;
    this.carryOut(order, key, note)
      .catch((err: unknown) => {
        // The agent stopped under it (its replica closed, as at a decommission): the stop is the
        // failure, nothing to report; the next agent looks at the order again.
        if (!this.d.store.isOpen) return;
        this.failed.add(key);
        const e = err as Error;
        const state = e.name === 'BlobBudgetError' ? 'NoSpace' : 'Refused';
        log.error(
          { upgrade: order.upgrade, version: order.release.version, err: e.message },
          `agent upgrade: ${state}`,
        );
        this.report({ ...base, state, reason: e.message.slice(0, 1024) });
      })
      .finally(() => {
        this.busy = false;
      });
  }

  /** Refused before anything is fetched: not recorded as failed, so a changed order is looked at again. */
  private refuse(order: AgentUpgradeOrder, reason: string): void {
    const changed = this.report({
      upgrade: order.upgrade,
      digest: order.release.digest,
      version: order.release.version,
      state: 'Refused',
      reason: reason.slice(0, 1024),
    });
    // Looked at again at every spec change: logged once, when it is news.
    if (changed)
      log.error({ upgrade: order.upgrade, version: order.release.version, reason }, 'agent upgrade: Refused');
  }

  /** Writes the progress into the report; false when it says what the report says already. */
  private report(p: Omit<AgentUpgradeProgress, 'at'>): boolean {
    const report = this.d.store.get<ReportDoc>(this.reportId);
    const cur = report ? readReportAgentUpgrade(report) : undefined;
    // The same state again (a restart, a re-read spec) is no change: history grows only on transitions.
    if (
      cur &&
      cur.upgrade === p.upgrade &&
      cur.digest === p.digest &&
      cur.state === p.state &&
      cur.percent === p.percent &&
      cur.reason === p.reason
    )
      return false;
    this.d.store.change<ReportDoc>(this.reportId, (d) => setReportAgentUpgrade(d, { ...p, at: Date.now() }));
    return true;
  }

  private async carryOut(order: AgentUpgradeOrder, key: string, note: string | undefined): Promise<void> {
    const { release } = order;
    const digest = release.digest as BlobDigest;
    const base = {
      upgrade: order.upgrade,
      digest: release.digest,
      version: release.version,
      ...(note ? { reason: note } : {}),
    };
    log.info({ upgrade: order.upgrade, version: release.version, digest }, 'agent upgrade ordered by the hub');
    this.report({ ...base, state: 'Pending' });
    if (!this.d.blobs.files.has(digest)) {
      // Room for the blob and, beside it, the staged copy: say so now rather than after the download.
      this.d.blobs.checkRoom(release.size, `agent release ${release.version}`);
      this.checkDisk(release.size * 2 - this.d.blobs.files.partialSize(digest), release.version);
      this.report({ ...base, state: 'Downloading', percent: 0 });
      let tenth = 0;
      await this.d.transfers.fetch(digest, (p) => {
        const t = Math.min(9, Math.floor((p.done / Math.max(1, p.size)) * 10));
        if (t > tenth) {
          tenth = t;
          this.report({ ...base, state: 'Downloading', percent: t * 10 });
        }
      });
    } else this.checkDisk(release.size, release.version);
    let staged;
    try {
      staged = await stageRelease(this.d.blobs.files, this.d, release, agentDir(this.d.dataDir));
    } catch (err) {
      if (err instanceof ReleaseRefused) throw Object.assign(new Error(err.message), { name: 'ReleaseRefused' });
      throw err;
    }
    this.report({ ...base, state: 'Staged' });
    const snapshot = path.join(agentDir(this.d.dataDir), 'replica-snapshot.db');
    await snapshotReplica(this.d.store.db, snapshot);
    requestSwitch(
      this.d.dataDir,
      { version: release.version, binary: staged.binary, digest: release.digest },
      this.d.version,
      order.deadlineMs,
      {
        order: key,
        snapshot,
      },
    );
    this.report({ ...base, state: 'Switching' });
    await this.d.reportSent();
    log.info({ version: release.version }, 'agent upgrade: staged and snapshotted; restarting into the new binary');
    this.d.restart(release.version);
  }

  /** The disk under the data directory must hold `bytes` more; a BlobBudgetError names need and free. */
  private checkDisk(bytes: number, version: string): void {
    let free: number | undefined;
    try {
      const st = fs.statfsSync(this.d.dataDir);
      free = st.bavail * st.bsize;
    } catch {
      return; // statfs unsupported: the blob budget alone decides
    }
    if (bytes > free)
      throw Object.assign(
        new Error(
          `agent release ${version} needs ${bytes} bytes (the binary and its staged copy); the disk under ${this.d.dataDir} has ${free} free: free some space, the agent runs on ${this.d.version}`,
        ),
        { name: 'BlobBudgetError' },
      );
  }
}
