/**
 * @module Data the sites send (docs/data.md): the egress declaration of a workload, and the
 * shapes the hub's data index and API use. One definition shared by the hub (validation at
 * apply, the index), the edge (the export directories, the upload ledger) and the CLI.
 *
 * A workload declares its exports in an annotation of one of its manifests (the Pod or the
 * Deployment), so the declaration travels with the manifests: customization, revisions and
 * rollback apply to it like to the rest of the workload, and nothing else in the hub needs to
 * carry it:
 *
 * @example
 * metadata:
 *   annotations:
 *     data.outpost.dev/egress: '[{"source": "/export", "target": "results", "mode": "move", "maxBytes": "500MB"}]'
 */
import { z } from 'zod';
import { DIGEST_PATTERN, parseByteSize, type BlobDigest } from './blobs.js';
import { NAME_PATTERN } from './ids.js';

export const EGRESS_ANNOTATION = 'data.outpost.dev/egress';

/** Environment variable naming the first export directory (each also gets `OUTPOST_EXPORT_DIR_<TARGET>`). */
export const EXPORT_DIR_ENV = 'OUTPOST_EXPORT_DIR';

/** Default bound of a workload's upload queue on the edge: a few hours of a camera's clips on a small device. */
export const DEFAULT_EGRESS_MAX_BYTES = 1024 ** 3;

/** A target names a directory on the edge and the first segment of each file's path on the hub. */
const TARGET_PATTERN = /^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/;

export const EgressRule = z.strictObject({
  /** Where the workload writes, inside its container (podman, kubernetes); the process driver gets an env var instead. */
  source: z
    .string()
    .regex(/^\/[^\0]*$/, 'source must be an absolute path inside the container, e.g. /export')
    .default('/export'),
  /** The export's name: the hub lists its files as `TARGET/relative/path`. */
  target: z
    .string()
    .regex(TARGET_PATTERN, 'target must be a DNS label (lower-case letters, digits, "-"), e.g. results')
    .default('export'),
  /** copy: the file stays in the export directory; move: the agent deletes it once the hub holds it. */
  mode: z.enum(['copy', 'move']).default('copy'),
  /** Bytes the queue of files not yet on the hub may hold on the edge (a number or 500MB, 2GiB). */
  maxBytes: z
    .union([z.number().int().positive(), z.string()])
    .default(DEFAULT_EGRESS_MAX_BYTES)
    .transform((v, ctx) => {
      if (typeof v === 'number') return v;
      try {
        return parseByteSize(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
});
export type EgressRule = z.infer<typeof EgressRule>;

export const EgressRules = z
  .array(EgressRule)
  .min(1, 'list at least one export')
  .max(16, 'at most 16 exports per workload')
  .refine((a) => new Set(a.map((r) => r.target)).size === a.length, 'each export needs its own target');

interface ManifestLike {
  kind?: unknown;
  metadata?: { annotations?: Record<string, unknown> } | undefined;
}

/**
 * The egress rules a workload's manifests declare: `rules` (empty when none), or `error` naming
 * the manifest, the problem and the fix. At most one manifest may carry the annotation.
 */
export function egressOf(manifests: readonly unknown[]): { rules: EgressRule[] } | { error: string } {
  let found: { at: number; text: unknown } | undefined;
  for (const [i, m] of manifests.entries()) {
    const text = (m as ManifestLike | null)?.metadata?.annotations?.[EGRESS_ANNOTATION];
    if (text === undefined) continue;
    if (found)
      return {
        error: `manifests[${i}]: ${EGRESS_ANNOTATION} is also on manifests[${found.at}]: declare the exports on one manifest`,
      };
    found = { at: i, text };
  }
  if (!found) return { rules: [] };
  const at = `manifests[${found.at}].metadata.annotations["${EGRESS_ANNOTATION}"]`;
  let json: unknown;
  try {
    json = JSON.parse(String(found.text));
  } catch {
    return {
      error: `${at}: not JSON: write a JSON list such as [{"source": "/export", "target": "results", "mode": "copy", "maxBytes": "500MB"}]`,
    };
  }
  const r = EgressRules.safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    return { error: `${at}${issue.path.length ? `[${issue.path.join('.')}]` : ''}: ${issue.message}` };
  }
  return { rules: r.data };
}

/** `OUTPOST_EXPORT_DIR_<TARGET>` for one export. */
export function exportDirEnv(target: string): string {
  return `${EXPORT_DIR_ENV}_${target.toUpperCase().replace(/-/g, '_')}`;
}

/**
 * The heartbeat gauges (not history) in which the agent tells the hub how much of its workloads'
 * exports waits on the edge, not yet on the hub.
 */
export const EGRESS_QUEUE_METRICS = { files: 'egressQueuedFiles', bytes: 'egressQueuedBytes' } as const;

/** What waits on an edge to be uploaded, as its last heartbeat said (GET .../edges/E/data-files `queue`). */
export interface EgressQueue {
  files: number;
  bytes: number;
  /** When the edge said so (the hub's clock); the edge is offline when this is old. */
  reportedAt: string;
}

/** A file a workload exported, as the hub's index lists it (GET .../edges/E/data-files). */
export interface DataFile {
  edge: string;
  workload: string;
  /** `TARGET/relative/path` */
  path: string;
  size: number;
  digest: BlobDigest;
  /** When the file was last modified on the edge. */
  modifiedAt: string;
  /** When the hub recorded it. */
  uploadedAt: string;
}

/** A relative path in an export: segments without `.`/`..`, no NUL, bounded. */
export function isExportPath(p: unknown): p is string {
  if (typeof p !== 'string' || p.length === 0 || p.length > 1024 || p.includes('\0') || p.startsWith('/')) return false;
  return p.split('/').every((s) => s.length > 0 && s !== '.' && s !== '..');
}

/**
 * The stream an edge opens after a file's blob is on the hub (sync/transfer.ts `blob-put`): the
 * hub records the file in its index and answers META `{ok: true}`, or resets with `not_found`
 * when it does not hold the blob (the edge queues the blob again).
 */
export const DataFileRecord = z.strictObject({
  type: z.literal('data-file'),
  workload: z.string().regex(NAME_PATTERN),
  path: z.string().refine(isExportPath, 'path must be relative, without . or .. segments'),
  digest: z.string().regex(DIGEST_PATTERN),
  size: z.number().int().min(0),
  modifiedAt: z.number().int().min(0),
});
export type DataFileRecord = z.infer<typeof DataFileRecord>;

export function isDataFileHeader(h: Record<string, unknown>): boolean {
  return h.type === 'data-file';
}
