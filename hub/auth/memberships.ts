/**
 * @module Which role a person signed in with the identity provider has in a project: the Project's
 * `members` (core/resources.ts ProjectMember) name users (the ID token's subject, or its email
 * when the provider says it is verified) and groups (the configured groups claim), each with a
 * role; a person matching several gets the highest. Pure: the sessions (people.ts) read the
 * members at every request, so removing a member takes effect at the person's next request.
 */
import type { ProjectMember } from '../../core/resources.js';
import type { Role } from './roles.js';

/** Who signed in, as the provider said at sign-in or at the last refresh. */
export interface Person {
  subject: string;
  /** Only a verified email (email_verified: true) is kept: an unverified one could be anyone's. */
  email: string | null;
  groups: string[];
}

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

/**
 * The highest role the members give `person`; undefined when none names them.
 *
 * @example
 * roleOf([{ group: 'shop-devs', role: 'operator' }], { subject: 's1', email: null, groups: ['shop-devs'] }); // 'operator'
 */
export function roleOf(members: readonly ProjectMember[], person: Person): Role | undefined {
  const email = person.email?.toLowerCase();
  let best: Role | undefined;
  for (const m of members) {
    const hit =
      m.user !== undefined
        ? m.user === person.subject || (email !== undefined && m.user.toLowerCase() === email)
        : person.groups.includes(m.group!);
    if (hit && (best === undefined || RANK[m.role] > RANK[best])) best = m.role;
  }
  return best;
}

/** Each project (by name) in which `person` has a role, with that role. */
export function membershipsOf(
  projects: readonly { name: string; members: readonly ProjectMember[] }[],
  person: Person,
): { project: string; role: Role }[] {
  return projects.flatMap((p) => {
    const role = roleOf(p.members, person);
    return role ? [{ project: p.name, role }] : [];
  });
}

/** How a person is named in audit events and logs: their email, else their subject. */
export function personName(p: Pick<Person, 'subject' | 'email'>): string {
  return p.email ?? p.subject;
}
