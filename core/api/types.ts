/**
 * @module The hub API's response contract: the JSON shapes the hub answers with, imported by the
 * hub (which builds them), the CLI and the UI (which read them). docs/api.md describes the routes.
 * Object kinds themselves (Edge, Workload, Placement) are core/resources.ts.
 */
import type { BlobDigest } from '../blobs.js';
import type { ErrorCode } from '../errors.js';
import type { PackageManifest, Parameter } from '../package.js';
import type { PackagePlacementView } from './views.js';

/** API token roles, weakest first (hub/auth/roles.ts says what each may do). */
export const ROLES = ['viewer', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** `GET /api/v1/whoami`: the calling token. `project` is `*` for a token over all projects. */
export interface WhoAmI {
  role: Role;
  project: string;
  tokenId: string;
  /** For a person signed in with the identity provider: who (their email, else subject); `tokenId` is their session's id. */
  person?: string;
  /** The hub replica that answered (the UI names it in its header; `outpost get replicas` lists them all). */
  replica?: { id: string; url: string };
}

/** Every list route (`GET /api/v1/projects/P/KIND`, events, tokens...). */
export interface ListResponse<T> {
  items: T[];
  /** How many objects there are in all (list of objects). */
  total?: number;
  /** With a filter (labelSelector, q, state, local): how many match it over all pages. */
  matched?: number;
  /** Pass as `continue` for the next page; absent on the last one. */
  continue?: string;
}

export type ApplyAction = 'created' | 'configured' | 'unchanged';

/** What an apply does (or would do, on a dry run) to the edges that run the object's workloads. */
export interface EdgeImpact {
  /** Edges that have (or would have) the object's workloads after the change. */
  total: number;
  /** Edges that would get it and do not have it now. */
  added: number;
  /** Edges that have it now and would lose it. */
  removed: number;
  /** Edges that keep it and whose manifests would change. */
  changed: number;
}

/** The rollout an object's apply results in, as `apply` and `diff` show it (ApplyResult). */
export interface EffectiveRollout {
  /** As given, or the default. */
  maxUnavailable: number | string;
  /** Whether `maxUnavailable` is the default (the object names none). */
  defaulted: boolean;
  /** Edges ordered at once: maxUnavailable of the edges the object selects now. */
  batch: number;
  edges: number;
  failureThreshold: number;
}

/** One object of an apply. */
export interface ApplyResult {
  kind: string;
  project: string;
  name: string;
  action: ApplyAction;
  resourceVersion?: string;
  edges?: EdgeImpact;
  /** A Placement's rollout as it will run: how many edges at a time, and whether that is the default. */
  rollout?: EffectiveRollout;
  /** On a dry run: the object as it would be stored. */
  object?: Record<string, unknown>;
}

/** `POST /api/v1/apply`. */
export interface ApplyResponse {
  dryRun?: true;
  results: ApplyResult[];
  /** E.g. a manifest kind a driver cannot run, for the edges that would get it. */
  warnings?: string[];
}

/** Every error answer (core/errors.ts ERROR_CODES lists the codes and statuses). */
export interface ErrorResponse {
  error: { code: ErrorCode; message: string; details?: unknown };
}

/** A package version's malware scan verdict (hub/scan/clamd.ts, docs/catalog.md). */
export const SCAN_STATES = ['Pending', 'Clean', 'Quarantined'] as const;
export type ScanState = (typeof SCAN_STATES)[number];
export interface PackageScan {
  state: ScanState;
  /** The signature that quarantined it. */
  signature?: string;
  /** The scanner and its signature database version. */
  engine?: string;
  scannedAt?: string;
  error?: string;
}

/** A published package version (`POST /projects/P/packages` answers with one). */
export interface PackageVersion {
  project: string;
  name: string;
  version: string;
  digest: BlobDigest;
  description?: string;
  publishedBy: string;
  publishedAt: string;
  scan: PackageScan;
}

/** `GET /projects/P/packages/NAME`: each version with what a deploy form needs, and where it runs. */
export interface PackageVersionView extends PackageVersion {
  parameters: Parameter[];
  profiles: PackageManifest['spec']['profiles'];
  dependsOn: PackageManifest['spec']['dependsOn'];
  /** The placements that deploy this version, with the edges it runs on through each (list of versions only). */
  placements?: PackagePlacementView[];
  /** A Helm chart: its version, the subcharts it carries with theirs, and the OCI reference it was pulled from. */
  chart?: {
    version: string;
    appVersion?: string;
    dependencies: { name: string; version: string }[];
    source?: { reference: string; manifestDigest: string };
  };
}

/** `GET /projects/P/packages`: a package, its newest version and how many there are. */
export interface PackageSummary {
  name: string;
  project: string;
  latest: string;
  versions: number;
  description?: string;
  scan: PackageScan;
  icon?: string;
}
