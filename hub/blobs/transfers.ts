/**
 * @module The hub's end of blob transfers an edge opens over its connection (sync/transfer.ts):
 * what an edge may read (blobs of its own project, and of the hub-wide scope those its node of a
 * cluster on a global ClusterTemplate needs: hub/clusters/global-templates.ts) and write (into its
 * project, within the quota, held for it), and the metrics of bytes moved.
 */
import client from 'prom-client';
import type { BlobDigest } from '../../core/blobs.js';
import type { EdgeName } from '../../core/ids.js';
import { GLOBAL_SCOPE } from '../../core/resources.js';
import { createLogger } from '../../core/logger.js';
import { isTransferHeader, serveTransfer } from '../../sync/transfer.js';
import { TunnelError, type TunnelStream } from '../../sync/tunnel.js';
import type { EdgeState } from '../state/edges.js';
import type { HubBlobs } from './index.js';
import type { BlobReservation } from './quota.js';

const log = createLogger('hub:transfers');

export class HubTransfers {
  private readonly bytes?: client.Counter<'direction'>;
  /** Transfers being served now (for tests and metrics). */
  active = 0;

  constructor(
    private readonly edges: Pick<EdgeState, 'projectOf'>,
    private readonly blobs: HubBlobs,
    registry?: client.Registry,
    /** Whether the edge may read a blob of the hub-wide scope (GLOBAL_SCOPE): its order needs it. */
    private readonly globalBlob: (edge: string, digest: string) => boolean = () => false,
  ) {
    if (registry)
      this.bytes = new client.Counter({
        name: 'outpost_hub_transfer_bytes_total',
        help: 'Blob bytes moved over edge connections, by direction (to_edge, from_edge)',
        labelNames: ['direction'],
        registers: [registry],
      });
  }

  /** A stream the edge opened. */
  serve(edge: EdgeName, s: TunnelStream): void {
    if (!isTransferHeader(s.header)) {
      s.destroy(new TunnelError('refused', `the hub does not accept streams of type ${String(s.header.type)}`));
      return;
    }
    const project = this.edges.projectOf(edge);
    if (project === undefined) {
      s.destroy(new TunnelError('forbidden', `edge ${edge} is not enrolled`));
      return;
    }
    const blobs = this.blobs;
    // The bytes of a blob the edge sends are held against the quota from its start to its index row.
    let held: BlobReservation | undefined;
    const started = Date.now();
    const beforeOut = s.bytesOut;
    const beforeIn = s.bytesIn;
    this.active++;
    serveTransfer(s, blobs.files, {
      readable: (digest: BlobDigest) => {
        const b =
          blobs.get(project, digest) ?? (this.globalBlob(edge, digest) ? blobs.get(GLOBAL_SCOPE, digest) : undefined);
        if (!b) throw new TunnelError('not_found', `blob ${digest} not found in project ${project}`);
        return b.size;
      },
      writable(digest: BlobDigest, size: number) {
        if (blobs.get(project, digest)) return 'have';
        held = blobs.reserveEdgeUpload(project, size);
        if (!held) throw new TunnelError('budget', blobs.quotaError(project, size).message);
        return 'send';
      },
      received(digest: BlobDigest, size: number, mediaType: string) {
        blobs.recordEdgeUpload(project, edge, digest, size, mediaType, held);
      },
    })
      .then(
        () =>
          log.info(
            {
              edge,
              type: s.header.type,
              digest: s.header.digest,
              bytes: s.bytesOut + s.bytesIn,
              ms: Date.now() - started,
            },
            'transfer done',
          ),
        (err: TunnelError) =>
          log.info(
            { edge, type: s.header.type, digest: s.header.digest, code: err.code, err: err.message },
            'transfer cut',
          ),
      )
      .finally(() => {
        held?.end();
        this.active--;
        this.bytes?.inc({ direction: 'to_edge' }, s.bytesOut - beforeOut);
        this.bytes?.inc({ direction: 'from_edge' }, s.bytesIn - beforeIn);
      });
  }
}
