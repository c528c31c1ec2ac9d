/**
 * @module The edge's transfer loop: while the hub is connected, brings every wanted blob and
 * sends every queued one, one at a time each way, over streams the edge opens on its own
 * connection (sync/transfer.ts). A cut link ends the attempt; the next connection resumes it
 * from the bytes already on disk (ours for downloads, the hub's for uploads).
 *
 * @example
 * const t = new EdgeTransfers(store, (h) => tunnel.open(h), () => sync.state === 'connected');
 * sync.on('state', (s) => s === 'connected' && t.kick());
 * await t.fetch(digest, (p) => log(p.done / p.size));
 */
import { EventEmitter } from 'node:events';
import type { BlobDigest } from '../../core/blobs.js';
import { createLogger } from '../../core/logger.js';
import { downloadBlob, uploadBlob, type OpenStream, type TransferProgress } from '../../sync/transfer.js';
import { TunnelError } from '../../sync/tunnel.js';
import type { EdgeBlobStore } from './store.js';

const log = createLogger('edge:transfers');

/** After a failed attempt (not a disconnect), wait this long before the next: the hub may be busy. */
const RETRY_MS = 2_000;

export interface EdgeTransfersEvents {
  progress: [digest: BlobDigest, p: TransferProgress];
  /** A download finished and checked, or failed for good (`error` set: e.g. the budget). */
  fetched: [digest: BlobDigest, error?: Error];
  sent: [digest: BlobDigest];
}

export class EdgeTransfers extends EventEmitter<EdgeTransfersEvents> {
  private running = false;
  private kickAgain = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** Downloads given up on (budget): not retried until asked again. */
  private readonly failed = new Map<BlobDigest, Error>();
  /** Bytes moved over the wire by this process, per direction (tests, metrics). */
  readonly moved = { down: 0, up: 0 };

  constructor(
    readonly store: EdgeBlobStore,
    private readonly open: OpenStream,
    private readonly connected: () => boolean,
  ) {
    super();
  }

  /** Works off the queues now if connected (called on every connect and on new work). */
  kick(): void {
    if (this.stopped || !this.connected()) return;
    if (this.running) {
      // The loop may be past its last look at the queues (finishing): look again once it ends, or
      // a blob wanted just now would wait for the next connection.
      this.kickAgain = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = true;
    this.kickAgain = false;
    this.run()
      .catch((err: unknown) => log.warn({ err }, 'transfer loop failed'))
      .finally(() => {
        this.running = false;
        if (this.kickAgain) this.kick();
      });
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Asks for a blob; resolves once it is in the store (across reconnects), rejects if it cannot fit. */
  fetch(digest: BlobDigest, onProgress?: (p: TransferProgress) => void): Promise<void> {
    if (this.store.files.has(digest)) return Promise.resolve();
    this.failed.delete(digest);
    this.store.want(digest);
    return new Promise((resolve, reject) => {
      const onP = (d: BlobDigest, p: TransferProgress) => d === digest && onProgress?.(p);
      const onF = (d: BlobDigest, e?: Error) => {
        if (d !== digest) return;
        this.off('progress', onP);
        this.off('fetched', onF);
        if (e) reject(e);
        else resolve();
      };
      this.on('progress', onP);
      this.on('fetched', onF);
      this.kick();
    });
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped && this.connected()) {
      const down = this.store.wanted().find((d) => !this.failed.has(d));
      const up = this.store.outbox()[0];
      if (!down && !up) return;
      try {
        if (down) await this.download(down);
        if (up) await this.upload(up.digest, up.mediaType);
        failures = 0;
      } catch (err) {
        if (this.stopped || !this.connected()) return; // the next connection resumes
        failures++;
        log.warn({ err: (err as Error).message, failures }, 'transfer attempt failed; retrying');
        if (failures >= 3) {
          this.timer = setTimeout(() => this.kick(), RETRY_MS * failures);
          this.timer.unref();
          return;
        }
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  private async download(digest: BlobDigest): Promise<void> {
    try {
      const r = await downloadBlob(this.open, this.store.files, digest, {
        onProgress: (p) => this.emit('progress', digest, p),
        beforeData: (remaining) => this.store.checkRoom(remaining, `blob ${digest}`),
      });
      this.moved.down += r.moved;
      log.info({ digest, size: r.size, moved: r.moved }, 'blob received');
    } catch (err) {
      const e = err as Error;
      // Reasons that no retry fixes: the hub has no such blob for us, or we have no room.
      if (
        e.name === 'BlobBudgetError' ||
        (e instanceof TunnelError && (e.code === 'not_found' || e.code === 'forbidden'))
      ) {
        this.store.unwant(digest);
        await this.store.files.removePartial(digest);
        this.failed.set(digest, e);
        this.emit('fetched', digest, e);
        log.warn({ digest, err: e.message }, 'blob cannot be fetched');
        return;
      }
      throw err;
    }
    this.store.unwant(digest);
    this.emit('fetched', digest);
  }

  private async upload(digest: BlobDigest, mediaType: string): Promise<void> {
    const r = await uploadBlob(this.open, this.store.files, digest, mediaType, {
      onProgress: (p) => this.emit('progress', digest, p),
    });
    this.moved.up += r.moved;
    this.store.sent(digest);
    this.emit('sent', digest);
    log.info({ digest, size: r.size, moved: r.moved, deduplicated: r.deduplicated }, 'blob sent to the hub');
  }
}
