/**
 * @module The byte quota of a project's blobs (docs/bytes.md) under concurrent uploads: every
 * upload holds a reservation (hub/state/blobs.ts `blob_reservations`) of the bytes it will add
 * before they are written: its declared size at once, or, without one, in steps as its bytes
 * arrive. A reservation is taken in one transaction serialized per project across hub replicas,
 * so uploads at once never hold more than the quota together; it goes with the blob's index row,
 * or when the upload fails; the hub renews those of its uploads in progress, and the rows of a
 * hub that died expire.
 *
 * @example
 * const r = quota.reserve('default');
 * try {
 *   if (!r.take(size)) throw quota.error('default', size, r.id);
 *   // ... write the bytes, then tables.putBlob({ ..., reservation: r.id }); r.indexed = true;
 * } finally {
 *   r.end();
 * }
 */
import { randomUUID } from 'node:crypto';
import { BLOB_RESERVATION_RENEW_MS, BLOB_RESERVATION_TTL_MS } from '../../core/durations.js';
import { OutpostError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { formatBytes } from '../../core/limits.js';
import { quotaRefusal } from '../projects/quotas.js';
import type { BlobTables } from '../state/blobs.js';

const log = createLogger('hub:blobs');

/**
 * How far ahead an upload of unknown length reserves: as much as it has sent (a small upload
 * holds little of the quota beyond its bytes), at least the first and at most the last of these
 * (one transaction per 8 MiB of a large upload, not per chunk).
 */
export const BLOB_RESERVATION_STEP_BYTES = { min: 1024 * 1024, max: 8 * 1024 * 1024 };

/** The bytes one upload in progress holds against its project's quota. */
export class BlobReservation {
  /** Bytes held now. */
  granted = 0;
  /** The row expired before it was renewed (this hub was stalled): the upload must reserve again. */
  lost = false;
  /** The blob's index row took the reservation's place (putBlob with `reservation`): nothing to release. */
  indexed = false;
  readonly id = randomUUID();

  constructor(
    private readonly quota: BlobQuota,
    readonly project: string,
  ) {}

  /** Holds at least `atLeast` bytes, up to `upTo` as the room allows; false (nothing changed) when less is left. */
  take(atLeast: number, upTo = atLeast): boolean {
    const r = this.quota.take(this, atLeast, upTo);
    if (r === null) return false;
    this.granted = r;
    this.lost = false;
    return true;
  }

  /**
   * For BlobFiles.ingest's `grow`: the bytes reached `bytes`; reserves a step ahead, or what is
   * left if that is less, and answers the bytes held (less than `bytes`: refused).
   */
  grow(bytes: number): number {
    const { min, max } = BLOB_RESERVATION_STEP_BYTES;
    this.take(bytes, bytes + Math.min(max, Math.max(min, bytes)));
    return this.granted;
  }

  /** The upload is over: releases the bytes unless the blob's row holds them now. */
  end(): void {
    this.quota.forget(this);
    if (this.indexed) return;
    try {
      this.quota.tables.releaseBlobReservation(this.id);
    } catch (err) {
      // The database is away: the row expires by itself, and the upload's own error is what to report.
      log.warn({ err, project: this.project }, 'releasing a blob quota reservation failed; it expires');
    }
  }
}

export class BlobQuota {
  private readonly live = new Map<string, BlobReservation>();
  private timer: NodeJS.Timeout | undefined;

  /** The quota a project's Project sets (spec.quotas.blobBytes); undefined: the hub's `quotaBytes`. */
  projectQuota: (project: string) => number | undefined = () => undefined;

  constructor(
    readonly tables: BlobTables,
    readonly quotaBytes: number,
  ) {}

  /** The bytes `project` may hold: its Project's quota when it sets one, else the hub's. */
  limit(project: string): number {
    return this.projectQuota(project) ?? this.quotaBytes;
  }

  /** A reservation for an upload into `project`, holding nothing yet. */
  reserve(project: string): BlobReservation {
    const r = new BlobReservation(this, project);
    this.live.set(r.id, r);
    // Renewed while this hub serves uploads; none: no timer.
    this.timer ??= setInterval(() => this.renew(), BLOB_RESERVATION_RENEW_MS).unref();
    return r;
  }

  /** Room left in a project: the quota less its blobs and the uploads in progress. */
  room(project: string): number {
    return Math.max(0, this.limit(project) - this.tables.projectBytes(project) - this.tables.reservedBytes(project));
  }

  /** The refusal of `size` more bytes (undefined: an upload of unknown length that could not grow). */
  error(project: string, size?: number, except?: string): OutpostError {
    const used = this.tables.projectBytes(project);
    const held = this.tables.reservedBytes(project, Date.now(), except);
    const own = this.projectQuota(project);
    if (own !== undefined)
      return quotaRefusal(
        project,
        'blobBytes',
        `${formatBytes(used)} of ${formatBytes(own)} of blobs${held > 0 ? ` and ${formatBytes(held)} of uploads in progress` : ''}; ${size === undefined ? 'this upload' : `${formatBytes(size)} more`} would pass it`,
        'remove blobs with `outpost blob rm`',
      );
    return new OutpostError(
      'too_large',
      `project ${project} holds ${used} bytes of blobs${held > 0 ? ` and ${held} bytes of uploads in progress` : ''}; ${size === undefined ? 'this upload' : `${size} more`} would pass its quota of ${this.quotaBytes} bytes: remove blobs with \`outpost blob rm\` or raise the hub's --blob-quota`,
    );
  }

  /** Called by BlobReservation. */
  take(r: BlobReservation, atLeast: number, upTo: number): number | null {
    return this.tables.reserveBlobBytes({
      id: r.id,
      project: r.project,
      atLeast,
      upTo,
      quota: this.limit(r.project),
      ttlMs: BLOB_RESERVATION_TTL_MS,
    }).granted;
  }

  /** Called by BlobReservation.end. */
  forget(r: BlobReservation): void {
    this.live.delete(r.id);
    if (this.live.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private renew(): void {
    try {
      const kept = this.tables.renewBlobReservations([...this.live.keys()], BLOB_RESERVATION_TTL_MS);
      for (const r of this.live.values()) if (!kept.has(r.id) && r.granted > 0) r.lost = true;
    } catch (err) {
      log.warn({ err }, 'renewing blob quota reservations failed; they are renewed again later');
    }
  }
}
