/**
 * @module Who calls the Kubernetes API and what they may do: the hub's API tokens (bearer), and
 * the REST API's roles × projects mapped onto Kubernetes verbs (get, list and watch are `read`;
 * create, update, patch and delete are `write`). A namespace is a project; a project's token may
 * not reach another namespace, nor list across namespaces. Denials are 403 Forbidden, as
 * Kubernetes RBAC answers, given before any object is looked up, so they tell nothing of what
 * another project holds.
 */
import { OutpostError } from '../../core/errors.js';
import { bearerToken } from '../../core/http.js';
import { ALL_PROJECTS, can, type Action } from '../auth/roles.js';
import type { ApiPrincipal } from '../auth/principal.js';
import { KubeError } from './status.js';

export const READ_VERBS = new Set(['get', 'list', 'watch']);
export const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export function actionOf(verb: string): Action | undefined {
  return READ_VERBS.has(verb) ? 'read' : WRITE_VERBS.has(verb) ? 'write' : undefined;
}

/** The Kubernetes user name of a token or a person's session: what `kubectl auth whoami` prints and messages name. */
export function userOf(p: ApiPrincipal): { username: string; groups: string[] } {
  return {
    username: p.person ? `outpost:person:${p.person}` : `outpost:token:${p.tokenId}`,
    groups: [`outpost:role:${p.role}`, `outpost:project:${p.project}`, 'system:authenticated'],
  };
}

export function principalOfRequest(
  verify: (token: string) => ApiPrincipal | null,
  header: string | undefined,
): ApiPrincipal {
  const token = bearerToken(header);
  if (!token)
    throw new OutpostError(
      'unauthorized',
      'missing bearer token: put an Outpost API token in the kubeconfig (outpost kubeconfig prints one that has it)',
    );
  const p = verify(token);
  if (!p)
    throw new OutpostError(
      'unauthorized',
      'the token is not valid (unknown, expired or revoked): ask an admin for a new one and run outpost kubeconfig again',
    );
  return p;
}

export interface Attributes {
  verb: string;
  /** The resource as URLs name it, with `group` (`''` for the core group). */
  resource: string;
  group: string;
  /** Undefined for a request across all namespaces (or of a cluster-scoped resource). */
  namespace?: string;
}

/** Whether `p` may do it, and why not (Kubernetes' words, then ours). */
export function decide(p: ApiPrincipal, a: Attributes): { allowed: boolean; reason?: string } {
  const action = actionOf(a.verb);
  const user = userOf(p).username;
  const where = a.namespace === undefined ? 'at the cluster scope' : `in the namespace "${a.namespace}"`;
  const deny = (why: string) => ({
    allowed: false,
    reason: `User "${user}" cannot ${a.verb} resource "${a.resource}" in API group "${a.group}" ${where}: ${why}`,
  });
  if (!action) return deny(`the Outpost hub serves no verb "${a.verb}"`);
  if (a.namespace === undefined) {
    if (p.project !== ALL_PROJECTS)
      return deny(
        `a token of project ${p.project} sees only the namespace ${p.project}: add -n ${p.project} (or a token for every project)`,
      );
    return can(p, action, ALL_PROJECTS) ? { allowed: true } : deny(`a ${p.role} token may not ${a.verb}`);
  }
  if (p.project !== ALL_PROJECTS && p.project !== a.namespace)
    return deny(`a token of project ${p.project} sees only the namespace ${p.project}`);
  if (can(p, action, a.namespace)) return { allowed: true };
  return deny(
    `${p.role === 'viewer' ? 'a' : 'an'} ${p.role} token may only get, list and watch: ask an admin for an operator or admin token`,
  );
}

/** Throws 403 Forbidden (a Kubernetes Status) unless `p` may do it. */
export function authorizeKube(p: ApiPrincipal, a: Attributes): void {
  const d = decide(p, a);
  if (d.allowed) return;
  const what = a.group ? `${a.resource}.${a.group}` : a.resource;
  throw new KubeError(403, 'Forbidden', `${what} is forbidden: ${d.reason}`, { group: a.group, kind: a.resource });
}
