/**
 * @module Blob digests and references: the one definition of what names a blob (`sha256:` and 64
 * hex digits) shared by the hub's store, the edge's store, transfers and the API.
 */
export type BlobDigest = string & { readonly __brand: 'BlobDigest' };

export const DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;

export function isDigest(s: unknown): s is BlobDigest {
  return typeof s === 'string' && DIGEST_PATTERN.test(s);
}

/** Throws a message that names the expected form. */
export function parseDigest(s: string): BlobDigest {
  if (!isDigest(s))
    throw new Error(
      `invalid blob digest "${s.slice(0, 100)}": use sha256: and 64 lower-case hex digits (what \`outpost blob push\` prints)`,
    );
  return s;
}

export function digestHex(d: BlobDigest): string {
  return d.slice('sha256:'.length);
}

/** A blob as the hub lists it. */
export interface BlobInfo {
  digest: BlobDigest;
  size: number;
  mediaType: string;
  project: string;
  /** `token:ID` for an API upload, `edge:NAME` for one an edge sent. */
  uploadedBy: string;
  createdAt: string;
  /** What refers to it (`AgentUpgrade/name`, `Edge/name`); none: it is collected after the grace period. */
  references: string[];
  /** The malware scanner's last verdict, for a blob the hub scans before use (agent binaries). */
  scan?: BlobScan;
}

/** A verdict of the hub's malware scanner (hub/scan/clamd.ts) on a blob. */
export interface BlobScan {
  state: 'Clean' | 'Quarantined';
  signature?: string;
  engine: string;
  scannedAt: string;
}

export const DEFAULT_MEDIA_TYPE = 'application/octet-stream';
export const AGENT_MEDIA_TYPE = 'application/vnd.outpost.agent';

/** Media types are `type/subtype` plus optional parameters, bounded. */
export function isMediaType(s: string): boolean {
  return s.length <= 255 && /^[\w.+-]+\/[\w.+-]+(\s*;\s*[\w.+-]+=[\w.+"-]+)*$/.test(s);
}

const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1e3,
  kb: 1e3,
  m: 1e6,
  mb: 1e6,
  g: 1e9,
  gb: 1e9,
  t: 1e12,
  tb: 1e12,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
};

/** `500MB`, `20GiB`, `1048576`: a byte count for flags such as `--blob-quota`. */
export function parseByteSize(s: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(s);
  const unit = m ? UNITS[m[2].toLowerCase()] : undefined;
  if (!m || unit === undefined)
    throw new Error(`invalid size "${s}": use a number of bytes with an optional unit, e.g. 500MB, 20GiB`);
  return Math.floor(Number(m[1]) * unit);
}
