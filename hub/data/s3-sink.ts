/**
 * @module The optional S3 sink (docs/data.md): forwards every file the edges export, once it is
 * on the hub, to an S3-compatible bucket, with the hub's credentials (the AWS SDK's default chain:
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, an instance role). Edges never hold bucket
 * keys. Object key: `PREFIX/PROJECT/EDGE/WORKLOAD/PATH`; metadata carries the sha256 digest.
 * Progress is the `sink_digest` column of the index, so a hub restart forwards what is left and
 * nothing twice; a newer version of a file is forwarded again.
 */
import fs from 'node:fs';
import { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { BlobDigest } from '../../core/blobs.js';
import { createLogger } from '../../core/logger.js';
import type { BlobFiles } from '../../sync/blob-files.js';
import type { DataFileTables } from '../state/data-files.js';

const log = createLogger('hub:data-sink');

/** How often the sink looks for files to forward (also right after each recorded file). */
const SINK_POLL_MS = 5_000;
/** After a failure (bucket unreachable, credentials refused), wait this long before trying again. */
const SINK_RETRY_MS = 15_000;

export interface S3SinkOptions {
  bucket: string;
  /** An S3-compatible endpoint (MinIO, Ceph, a test server); unset: AWS S3 of `region`. */
  endpoint?: string;
  region?: string;
  /** Prepended to every key (e.g. `outpost/`). */
  prefix?: string;
}

export class S3Sink {
  private readonly client: S3Client;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private failedAt = 0;
  /** Files forwarded by this process (tests, logs). */
  forwarded = 0;

  constructor(
    private readonly tables: DataFileTables,
    private readonly files: BlobFiles,
    private readonly o: S3SinkOptions,
  ) {
    this.client = new S3Client({
      region: o.region ?? 'us-east-1',
      ...(o.endpoint ? { endpoint: o.endpoint, forcePathStyle: true } : {}),
    });
  }

  start(): void {
    this.timer = setInterval(() => this.kick(), SINK_POLL_MS);
    this.timer.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
    this.client.destroy();
  }

  /** Forwards what is pending now (called after each recorded file). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (Date.now() - this.failedAt < SINK_RETRY_MS) return;
    const run = async () => {
      await Promise.resolve(); // this.running is set before the body runs
      try {
        do {
          this.again = false;
          await this.pass();
        } while (this.again && !this.stopped);
      } catch (err) {
        this.failedAt = Date.now();
        log.warn(
          { err: (err as Error).message, bucket: this.o.bucket },
          `forwarding exported files to S3 failed; retried in ${SINK_RETRY_MS / 1000}s`,
        );
      } finally {
        this.running = undefined;
      }
    };
    this.running = run();
  }

  private async pass(): Promise<void> {
    for (;;) {
      const batch = this.tables.unsunkDataFiles(50);
      if (batch.length === 0 || this.stopped) return;
      for (const f of batch) {
        if (this.stopped) return;
        const key = `${this.o.prefix ?? ''}${f.project}/${f.edge}/${f.workload}/${f.path}`;
        await new Upload({
          client: this.client,
          params: {
            Bucket: this.o.bucket,
            Key: key,
            Body: fs.createReadStream(this.files.path(f.digest as BlobDigest)),
            Metadata: { 'outpost-digest': f.digest, 'outpost-modified-at': f.modifiedAt },
          },
        }).done();
        this.tables.markSunk(f.project, f);
        this.forwarded++;
        log.info({ key, size: f.size }, 'exported file forwarded to S3');
      }
    }
  }
}
