/**
 * @module Who may do what. A principal is an API token's role and project; an action is one of
 * three levels, each including the ones below it:
 *
 * | action | what it covers                                                          | viewer | operator | admin |
 * |--------|-------------------------------------------------------------------------|:------:|:--------:|:-----:|
 * | read   | list/get edges, workloads, placements, status, events, logs             |   ✓    |    ✓     |   ✓   |
 * | write  | create/update/delete workloads and placements; edge labels, drain;      |        |    ✓     |   ✓   |
 * |        | pause/resume rollouts; exec and port-forward through the tunnel         |        |          |       |
 * | admin  | create/list/revoke API and join tokens; approve and decommission edges  |        |          |   ✓   |
 * | (`*`)  | admin for every project only: rotate admin.token, sign agent releases   |        |          |   ✓   |
 *
 * Scope: a token acts only inside its project; project `*` (admin tokens made by the hub at first
 * start) covers every project and the hub-wide actions, which callers check against project `*`.
 * Exec and port-forward count as write, not read: they run code on the edge, which an operator
 * could do anyway by deploying a workload. Token creation is admin in the target project, so an
 * admin of one project can mint tokens for that project only, never for `*`.
 */
import { ROLES, type Role } from '../../core/api/types.js';
import { OutpostError } from '../../core/errors.js';

export { ROLES, type Role };
export type Action = 'read' | 'write' | 'admin';

/** The project value that means "every project" (and hub-wide actions). */
export const ALL_PROJECTS = '*';

export interface Principal {
  role: Role;
  project: string;
}

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };
const NEEDS: Record<Action, number> = { read: 1, write: 2, admin: 3 };

export function isRole(s: string): s is Role {
  return (ROLES as readonly string[]).includes(s);
}

/**
 * Whether `principal` may perform `action` in `project` (`*` for hub-wide actions).
 *
 * @example
 * can({ role: 'operator', project: 'shop' }, 'write', 'shop'); // true
 * can({ role: 'operator', project: 'shop' }, 'admin', 'shop'); // false
 */
export function can(principal: Principal, action: Action, project: string): boolean {
  const inScope = principal.project === ALL_PROJECTS || principal.project === project;
  return inScope && RANK[principal.role] >= NEEDS[action];
}

const DOING: Record<Action, string> = { read: 'read', write: 'change objects', admin: 'do this' };

/**
 * Throws unless `principal` may perform `action` in `project`: 404 (not 403) when the project is
 * outside the token's scope, so a token never learns another project's objects exist; 403 naming
 * the token that would do. `doing` names the act in the message (default by action), `notFound`
 * the thing that is not found (default the project).
 *
 * @example
 * authorize({ role: 'viewer', project: 'shop' }, 'write', 'shop');
 * // throws forbidden: a viewer token may not change objects in project shop: ask an admin for an operator or admin token
 */
export function authorize(
  principal: Principal,
  action: Action,
  project: string,
  words: { doing?: string; notFound?: string } = {},
): void {
  if (principal.project !== ALL_PROJECTS && principal.project !== project)
    throw new OutpostError('not_found', `${words.notFound ?? `project ${project}`} not found`);
  if (can(principal, action, project)) return;
  throw new OutpostError(
    'forbidden',
    `${principal.role === 'viewer' ? 'a' : 'an'} ${principal.role} token may not ${words.doing ?? DOING[action]} in project ${project}: ask an admin for ${action === 'admin' ? 'an admin token' : 'an operator or admin token'}`,
  );
}

/**
 * Throws unless `principal` is an admin for every project (`*`): for acts in `project` whose effect
 * reaches past that project's objects, such as signing an agent release (the release key is the
 * one key every edge of every project trusts, and the agent runs on the host, outside what a
 * project's workloads may do). 404 when `project` is outside the token's scope, as `authorize`;
 * 403 naming who may otherwise. `why` says what makes the act fleet-wide.
 *
 * @example
 * authorizeAllProjects({ role: 'admin', project: 'shop' }, 'shop', 'sign agent releases', 'a release decides what code runs as the edge agent');
 * // throws forbidden: an admin token of project shop may not sign agent releases: only an admin token for every project (*), ...
 */
export function authorizeAllProjects(principal: Principal, project: string, doing: string, why: string): void {
  if (principal.project !== ALL_PROJECTS && principal.project !== project)
    throw new OutpostError('not_found', `project ${project} not found`);
  if (principal.project === ALL_PROJECTS && principal.role === 'admin') return;
  throw new OutpostError(
    'forbidden',
    `${principal.role === 'viewer' ? 'a' : 'an'} ${principal.role} token of project ${principal.project} may not ${doing}: only an admin token for every project (*), like the hub's first admin.token, may (${why}); ask its holder`,
  );
}

/** Whether `principal` may create a token with `grant` (admin over the grant's project). */
export function canGrant(principal: Principal, grant: { project: string }): boolean {
  return can(principal, 'admin', grant.project);
}
