/**
 * @module What a hub is started with (`HubOptions`): the flags of `outpost hub` (main.ts) and a
 * few settings no flag sets (the document cache budget, the blob grace, the scan retry); and the
 * parsing of `--listen`. Each default is applied where its option is used.
 */
import type { S3SinkOptions } from './data/s3-sink.js';
import type { ScannerSpec } from './scan/clamd.js';

export interface HubOptions {
  dataDir: string;
  /** HOST:PORT; port 0 picks a free one. */
  listen: string;
  insecureHttp?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  requireApproval?: boolean;
  /** Extra names for the server certificate (the hub's public DNS name). */
  hosts?: string[];
  /** Connections one source address may hold, edges' sync sockets not counted (default 1,024). */
  maxConnectionsPerAddress?: number;
  /** A connection that sent no request this long after it connected is closed (default HEADERS_TIMEOUT_MS). */
  firstRequestTimeoutMs?: number;
  /** Loaded mailbox documents are evicted beyond this estimate (default HUB_DOC_CACHE_BYTES). */
  memoryBudgetBytes?: number;
  /**
   * Where blob files live (default DATA/blobs). Hub replicas on one PostgreSQL share the blob index,
   * so they must share the files too: one directory on a shared filesystem (docs/operations.md).
   */
  blobDir?: string;
  /** Bytes of blobs one project may hold (default DEFAULT_BLOB_QUOTA_BYTES). */
  blobQuotaBytes?: number;
  /** A blob upload or download with no byte moving this long is cut (default BLOB_IDLE_TIMEOUT_MS). */
  blobIdleTimeoutMs?: number;
  /** How long a blob nothing refers to is kept (default DEFAULT_BLOB_GRACE_MS). */
  blobGraceMs?: number;
  /** The catalog's malware scanner (`--scanner`); undefined: none configured, packages stay Pending. */
  scanner?: ScannerSpec;
  /** The chart renderer `outpost-helm` (`--helm`, build/helm); undefined: Helm charts are refused. */
  helm?: string;
  /** Forward the files edges export to this S3-compatible bucket (docs/data.md). */
  dataSinkS3?: S3SinkOptions;
  /** How often Pending packages are tried again while the scanner is unreachable (default SCAN_RETRY_MS). */
  scanRetryMs?: number;
  /**
   * `postgres://...`: the hub's tables in this PostgreSQL database instead of the SQLite file of
   * `dataDir` (issue #22); the edges' documents stay in `dataDir` (docs/architecture.md).
   */
  database?: string;
  /**
   * The identity key file (`--identity-key`, hub/identity/key.ts): with `database`, the replicas'
   * one CA, secrets key and release key are kept sealed in the database and written into `dataDir`.
   */
  identityKeyFile?: string;
  /**
   * With `database`: the URL the other replicas reach this one at, for tunnel requests they
   * forward (docs/tunnel.md). Default: the hub's own URL when it listens on one address, else
   * PROTO://HOSTNAME:PORT.
   */
  advertiseUrl?: string;
  /**
   * With `database`: how long an edge's lease and this replica's row last unrenewed (renewed three
   * times in it): a replica that died is taken for dead, and its edges' connections end, this long
   * after its last renewal. Every replica of one database the same (default LEASE_TTL_MS, 15 s).
   */
  replicaLeaseMs?: number;
  /**
   * People from an OpenID Connect provider (`--oidc-issuer`...: hub/modules/people.ts); absent:
   * API tokens only, as before.
   */
  oidc?: {
    issuer: string;
    clientId: string;
    /** A file whose first line is the client secret (kept out of `ps` and the unit). */
    clientSecretFile: string;
    /** The ID token claim listing the person's groups (default `groups`). */
    groupsClaim?: string;
    /** The scopes asked for at sign-in (default: openid email profile groups). */
    scopes?: string;
    /** How often sessions are refreshed with the provider (default OIDC_REFRESH_MS): the bound on a change there taking effect. */
    refreshMs?: number;
    /** The longest a session lasts (default OIDC_SESSION_TTL_MS). */
    sessionTtlMs?: number;
  };
}

export function parseListen(s: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(s);
  if (!m) throw new Error(`--listen ${s}: use HOST:PORT, e.g. 0.0.0.0:7443 or 127.0.0.1:0`);
  return { host: m[1].replace(/^\[|\]$/g, '') || '0.0.0.0', port: Number(m[2]) };
}
