/**
 * @module The hub's end of the files edges' workloads export (docs/data.md): the `data-file`
 * stream an edge opens once a file's blob is on the hub (edge/data/egress-record.ts). Peer input is
 * untrusted: the header is checked against one schema, and the blob must already be in the
 * edge's own project, so an edge can name only bytes it (or its project) holds.
 */
import type { BlobDigest } from '../../core/blobs.js';
import { DataFileRecord, EGRESS_QUEUE_METRICS, type EgressQueue } from '../../core/data.js';
import type { EdgeName } from '../../core/ids.js';
import { createLogger } from '../../core/logger.js';
import { TunnelError, type TunnelErrorCode, type TunnelStream } from '../../sync/tunnel.js';
import type { HubBlobs } from '../blobs/index.js';
import type { DataFileTables } from '../state/data-files.js';
import type { EdgeState } from '../state/edges.js';

const log = createLogger('hub:data');

export class HubDataFiles {
  /** Per edge, its upload queue as its last heartbeat said: memory only (gauges stay out of history). */
  private readonly queues = new Map<string, EgressQueue>();

  constructor(
    private readonly tables: DataFileTables,
    private readonly blobs: HubBlobs,
    private readonly edges: Pick<EdgeState, 'get'>,
    /** Called after each recorded file (the S3 sink forwards it). */
    private readonly onRecorded?: () => void,
  ) {}

  /** An edge's heartbeat: keeps its upload queue gauges, when it sent them. */
  noteHeartbeat(edge: EdgeName, metrics: Record<string, number> | undefined, at = Date.now()): void {
    const files = metrics?.[EGRESS_QUEUE_METRICS.files];
    const bytes = metrics?.[EGRESS_QUEUE_METRICS.bytes];
    if (!Number.isSafeInteger(files) || !Number.isSafeInteger(bytes) || files! < 0 || bytes! < 0) return;
    this.queues.set(edge, { files: files!, bytes: bytes!, reportedAt: new Date(at).toISOString() });
  }

  /** What waits on the edge to be uploaded, as it last said; undefined before it said anything. */
  queue(edge: string): EgressQueue | undefined {
    return this.queues.get(edge);
  }

  /** A `data-file` stream the edge opened. */
  serve(edge: EdgeName, s: TunnelStream): void {
    s.on('error', () => undefined);
    const refuse = (code: TunnelErrorCode, message: string): void => void s.destroy(new TunnelError(code, message));
    const parsed = DataFileRecord.safeParse(s.header);
    if (!parsed.success) return refuse('refused', `malformed data-file record: ${parsed.error.issues[0]?.message}`);
    const r = parsed.data;
    const rt = this.edges.get(edge);
    if (!rt) return refuse('forbidden', `edge ${edge} is not enrolled`);
    const digest = r.digest as BlobDigest;
    const blob = this.blobs.get(rt.project, digest);
    if (!blob) return refuse('not_found', `blob ${digest} not found in project ${rt.project}: send it first`);
    if (blob.size !== r.size) return refuse('refused', `blob ${digest} holds ${blob.size} bytes, not ${r.size}`);
    try {
      this.tables.putDataFile(rt.project, { edge, ...r, digest });
    } catch (err) {
      log.error({ err, edge }, 'recording an exported file failed');
      return refuse('internal', 'the hub could not record the file; the edge retries');
    }
    s.resume();
    s.sendMeta({ ok: true });
    s.end();
    log.info({ edge, workload: r.workload, path: r.path, size: r.size }, 'exported file recorded');
    this.onRecorded?.();
  }
}
