/**
 * @module Recording exported files on the hub: for each queued file whose blob has left the outbox
 * (the transfer loop uploaded it), a `data-file` stream tells the hub the file's path, digest, size
 * and time; its answer marks the file done in the ledger, drops the blob, and in `move` mode
 * removes the file from the export directory if it is still the version the hub holds. A hub that
 * no longer holds the bytes gets them again (or the file is taken again from the directory).
 *
 * One recording at a time; a call while one runs makes it go round once more. Failures are logged
 * (while connected) and retried on the next call: a scan, a blob sent, a connection.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createLogger } from '../../core/logger.js';
import { nextMeta, type OpenStream } from '../../sync/transfer.js';
import { TunnelError } from '../../sync/tunnel.js';
import type { EdgeBlobStore } from '../blobs/store.js';
import type { EdgeTransfers } from '../blobs/transfers.js';
import { EXPORT_MEDIA_TYPE, type EgressFileRow, type EgressLedger } from './egress-ledger.js';

const log = createLogger('edge:data');

export interface EgressRecorderDeps {
  ledger: EgressLedger;
  blobs: EdgeBlobStore;
  transfers: EdgeTransfers;
  open: OpenStream;
  connected: () => boolean;
  /** True once the egress is stopping: no recording starts, a running one ends after its file. */
  stopped: () => boolean;
  /** The host directory of one export target. */
  exportDir(workload: string, target: string): string;
}

export class EgressRecorder {
  private recording: Promise<void> | undefined;
  private recordAgain = false;

  constructor(private readonly d: EgressRecorderDeps) {}

  /** Records on the hub every queued file whose blob has left the outbox. */
  record(): void {
    if (this.d.stopped()) return;
    if (this.recording) {
      this.recordAgain = true;
      return;
    }
    const run = async () => {
      await Promise.resolve(); // this.recording is set before the body runs
      try {
        do {
          this.recordAgain = false;
          await this.recordPass();
        } while (this.recordAgain && !this.d.stopped());
      } catch (err) {
        if (this.d.connected()) log.warn({ err: (err as Error).message }, 'recording exported files failed; retried');
      } finally {
        this.recording = undefined;
      }
    };
    this.recording = run();
  }

  /** Settles once the recording under way (if any) has ended. */
  async idle(): Promise<void> {
    await this.recording;
  }

  private async recordPass(): Promise<void> {
    if (!this.d.connected()) return;
    const inOutbox = new Set(this.d.blobs.outbox().map((o) => o.digest));
    for (const row of this.d.ledger.queued()) {
      if (this.d.stopped() || !this.d.connected()) return;
      if (inOutbox.has(row.digest)) continue;
      try {
        await this.recordOne(row);
      } catch (err) {
        if (err instanceof TunnelError && err.code === 'not_found') {
          // The hub does not hold the bytes (lost, or collected): send them again, or take the file again.
          if (this.d.blobs.files.has(row.digest)) this.d.blobs.requeue(row.digest, EXPORT_MEDIA_TYPE);
          else this.d.ledger.forget(row.workload, [row.path]);
          this.d.transfers.kick();
          continue;
        }
        throw err;
      }
    }
  }

  private async recordOne(row: EgressFileRow): Promise<void> {
    const s = this.d.open({
      type: 'data-file',
      workload: row.workload,
      path: row.path,
      digest: row.digest,
      size: row.size,
      modifiedAt: row.mtime_ms,
    });
    s.on('error', () => undefined);
    s.end();
    const m = await nextMeta(s);
    s.resume();
    if (m.ok !== true) throw new TunnelError('protocol', `bad data-file answer ${JSON.stringify(m).slice(0, 200)}`);
    if (!this.d.ledger.markDone(row)) return; // a newer version was queued meanwhile
    if (row.mode === 'move') {
      const abs = path.join(this.d.exportDir(row.workload, row.target), row.path.slice(row.target.length + 1));
      try {
        const st = fs.statSync(abs);
        // Only the version the hub holds: a file rewritten since stays for the next scan.
        if (st.size === row.size && Math.floor(st.mtimeMs) === row.mtime_ms) fs.rmSync(abs);
      } catch {
        // already gone
      }
    }
    await this.d.ledger.release(row.digest);
    log.info({ workload: row.workload, path: row.path, size: row.size }, 'exported file is on the hub');
  }
}
