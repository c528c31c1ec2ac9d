/**
 * @module What the API routes need from the hub (dependency injection from the composition root),
 * the authenticated principal, and the one place where errors become HTTP responses.
 */
import type { ScanVerdict } from '../scan/clamd.js';
import type {
  AgentUpgradeStatusView,
  DataObjectStatusView,
  PlacementStagingView,
  ReplicaView,
  ServedByView,
} from '../../core/api/views.js';
import type { EgressQueue } from '../../core/data.js';
import type { Context } from 'hono';
import { OutpostError } from '../../core/errors.js';
import type { SignedRelease } from '../../core/release.js';
import type { AgentUpgrade, DataObject, Kind } from '../../core/resources.js';
import type { ReplicaStore } from '../../sync/store.js';
import type { JoinTokenInfo } from '../auth/join-tokens.js';
import type { ApiPrincipal } from '../auth/principal.js';
import { authorize as authorizeIn, type Action, type Role } from '../auth/roles.js';
import type { ApiTokenInfo } from '../auth/tokens.js';
import type { Catalog } from '../catalog/index.js';
import type { Scheduler } from '../scheduler/index.js';
import type { ObjectStore } from '../objects.js';
import type { HubSecrets } from '../secrets.js';
import type { EdgeLifecycle } from '../edges/lifecycle.js';
import type { HubState } from '../state/index.js';
import type { ChangeFeed } from './stream.js';

export type { Action, Role };

export type Principal = ApiPrincipal;

export type ApiTokenView = ApiTokenInfo;

export type JoinTokenView = JoinTokenInfo;

export interface HubAuth {
  verifyApiToken(token: string): Principal | null;
  /**
   * Holds an open long-lived request (a stream, a tunnel session, a transfer) of `p` until the
   * returned release is called; `close` ends it first if its token is revoked (on any replica) or
   * its credential expires (hub/auth/token-streams.ts).
   */
  hold(p: Principal, close: (reason: string) => void): () => void;
  createApiToken(opts: { role: Role; project: string; ttlMs?: number; description?: string }): {
    token: string;
    id: string;
    expiresAt?: number;
  };
  /** Without ttlMs the token expires after the default (24 h). */
  createJoinToken(opts: { project: string; labels: Record<string, string>; ttlMs?: number; uses?: number }): {
    token: string;
    id: string;
    expiresAt: number;
  };
  /** Every API and join token, without secrets. */
  listTokens(): { api: ApiTokenView[]; join: JoinTokenView[] };
  /** Revokes an API or join token by id (an API token's open streams end); false when it was already revoked. */
  revokeToken(kind: 'api' | 'join', id: string): boolean;
  /** New admin token for all projects into DATA/admin.token; the one it held is revoked (its streams end). */
  rotateAdminToken(): { token: string; id: string; revoked: string | null };
  /** Throws OutpostError('unauthorized', why) when expired, used up or unknown. */
  consumeJoinToken(token: string): { project: string; labels: Record<string, string> };
  /** `sealKey`: the public key the edge made at enrollment, Secrets for it are sealed to. */
  issueEdgeCredential(edge: string, sealKey?: string): string;
  /** Revokes the edge's credential and remembers it as decommissioned (the edge is told so when it dials). */
  decommissionEdgeCredential(edge: string): void;
}

export interface HubDeps {
  /** The hub's tables (hub/state/): the API reads and writes them only through these. */
  state: HubState;
  /** An edge's life: enroll, approve, label, drain, decommission (hub/edges/lifecycle.ts). */
  edges: EdgeLifecycle;
  /** Live updates for the UI's stream (hub/api/stream.ts). */
  changes: ChangeFeed;
  store: ReplicaStore;
  objects: ObjectStore;
  scheduler: Scheduler;
  auth: HubAuth;
  /** Redacts, reveals and seals Secret values (hub/secrets.ts). */
  secrets: HubSecrets;
  version: string;
  /** The hub's replicas (hub/replicas/directory.ts; a SQLite hub is the only one): the API names them. */
  replicas: {
    /** The replica answering. */
    self(): { id: string; url: string };
    /** Every replica, its edges counted in `project` (`*`: all). */
    list(project: string): ReplicaView[];
    /** The replica an edge's connection is on, with its URL. */
    servedBy(replica: string): ServedByView;
  };
  requireApproval: boolean;
  /** Why the hub cannot serve now (its database is unreachable); undefined when it can. For /readyz. */
  unready(): string | undefined;
  caPem?: string;
  metricsText(): Promise<string>;
  metricsContentType: string;
  /** Versioned packages and their deployments (hub/catalog/). */
  catalog?: Catalog;
  /** Signs agent releases (hub/upgrades/releases.ts); its public key goes to edges at enrollment. */
  releases?: {
    publicKeyPem: string;
    /** Scans the binary (fail-closed) and signs its release. */
    sign(
      project: string,
      digest: string,
      version: string,
      scope: string,
    ): Promise<SignedRelease & { scan: ScanVerdict }>;
  };
  /** AgentUpgrade rollouts (hub/upgrades/controller.ts): their status per edge, what a delete changes. */
  upgrades?: {
    status(u: AgentUpgrade): AgentUpgradeStatusView;
    /** What deleting it changes on its edges, in words (the delete's answer). */
    deleteChanges(u: AgentUpgrade): string[];
  };
  /** The upload queues edges last reported (hub/data/index.ts). */
  uploads?: { queue(edge: string): EgressQueue | undefined };
  /** DataObject deliveries (hub/data/delivery.ts): their status per edge. */
  deliveries?: { status(o: DataObject): DataObjectStatusView };
  /** Pre-staging progress per placement (hub/images/staging.ts). */
  imageStaging?: { progress(project: string, placement: string): PlacementStagingView | undefined };
}

export type Env = { Variables: { principal: Principal } };

export const KIND_PATHS: Record<string, Kind> = {
  edges: 'Edge',
  workloads: 'Workload',
  placements: 'Placement',
  agentupgrades: 'AgentUpgrade',
  registries: 'Registry',
  dataobjects: 'DataObject',
};

export function kindFromPath(s: string): Kind {
  const k = KIND_PATHS[s];
  if (!k) throw new OutpostError('not_found', `unknown kind "${s}": use ${Object.keys(KIND_PATHS).join(', ')}`);
  return k;
}

export function principal(c: Context<Env>): Principal {
  return c.get('principal');
}

/** The request's principal, if it may do `action` in `project` (404 outside its project, 403 else: hub/auth/roles.ts). */
export function authorize(c: Context<Env>, action: Action, project: string): Principal {
  const p = principal(c);
  authorizeIn(p, action, project);
  return p;
}

export async function jsonBody<T = unknown>(c: Context): Promise<T> {
  try {
    return (await c.req.json()) as T;
  } catch {
    throw new OutpostError('bad_request', 'the request body is not valid JSON');
  }
}
