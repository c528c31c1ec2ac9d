/**
 * @module The hub's sessions of people signed in with the identity provider (docs/security.md,
 * "People"). A sign-in (code flow, device flow, or an ID token the caller holds: oidc.ts) makes a
 * session for one project the person is a member of; its bearer token has the API token's format
 * (`opt1.<ca-pin>.<id>.<secret>`, only the secret's sha256 stored, in people_sessions behind
 * hub/state, never in an edge's document) and stands for the same `Principal` an API token does,
 * so every role check applies unchanged. At each request the role is read again from the
 * Project's members (memberships.ts): removing a member or a group takes effect at once. The
 * person's groups are as the provider said at sign-in or at the last refresh: every `refreshMs`
 * the hub refreshes each session with the provider, which may refuse (the person left, their
 * grant was revoked) and then the session ends; a session whose refresh is overdue by one more
 * interval (the provider unreachable) is not honoured. A session ends at `sessionTtlMs` anyway.
 */
import { OutpostError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import type { ProjectMember } from '../../core/resources.js';
import { formatToken, NO_FINGERPRINT } from '../../sync/pinned-ca.js';
import type { PeopleTables, PersonSessionRow } from '../state/people.js';
import { personName, roleOf, membershipsOf, type Person } from './memberships.js';
import type { OidcRelyingParty, SignedIn } from './oidc.js';
import type { ApiPrincipal } from './principal.js';
import type { Role } from './roles.js';
import { hashSecret, newId, newSecret, secretMatches } from './token-secrets.js';

const log = createLogger('hub:people');

export interface PeopleSessionsOptions {
  tables: PeopleTables;
  rp: OidcRelyingParty;
  /** Seals the provider's refresh tokens at rest (hub/secrets.ts). */
  box: { seal(value: string): string; open(sealed: string): string };
  /** The members of a project; undefined when there is no such project. */
  members(project: string): readonly ProjectMember[] | undefined;
  /** Every project with its members (which projects a person may choose at sign-in). */
  projects(): { name: string; members: readonly ProjectMember[] }[];
  caFingerprint: string | null;
  refreshMs: number;
  sessionTtlMs: number;
  /** A session ended (logout, refused refresh): its open streams end (token-streams.ts). */
  ended(id: string): void;
}

export interface NewSession {
  token: string;
  id: string;
  person: string;
  project: string;
  role: Role;
  expiresAt: number;
}

export class PeopleSessions {
  constructor(private readonly o: PeopleSessionsOptions) {}

  /**
   * A session for `signed.person` in `project` (absent: the one project they are a member of).
   * 403 when they are a member of none or not of `project`; 400 naming the choices when several.
   */
  signIn(signed: SignedIn, project: string | undefined, now = Date.now()): NewSession {
    const { person } = signed;
    const who = personName(person);
    const mine = membershipsOf(this.o.projects(), person);
    const chosen =
      project !== undefined ? mine.find((m) => m.project === project) : mine.length === 1 ? mine[0] : undefined;
    if (!chosen) {
      if (project !== undefined || mine.length === 0)
        throw new OutpostError(
          'forbidden',
          `${who} is not a member of ${project !== undefined ? `project ${project}` : 'any project'}: ask an admin of the project to add the user or one of the groups (${person.groups.join(', ') || 'none'}) to its spec.members`,
        );
      throw new OutpostError(
        'bad_request',
        `${who} is a member of several projects (${mine.map((m) => m.project).join(', ')}): choose one (outpost login --oidc --project NAME; in the UI, the project field)`,
      );
    }
    const id = newId();
    const secret = newSecret();
    const expiresAt = now + this.o.sessionTtlMs;
    this.o.tables.insert({
      id,
      secret_hash: hashSecret(secret),
      subject: person.subject,
      email: person.email,
      member_groups: JSON.stringify(person.groups),
      project: chosen.project,
      refresh_token: signed.refreshToken === null ? null : this.o.box.seal(signed.refreshToken),
      created_at: now,
      expires_at: expiresAt,
      refresh_due: now + this.o.refreshMs,
    });
    log.info(
      { person: who, subject: person.subject, project: chosen.project, role: chosen.role, session: id },
      'signed in',
    );
    return {
      token: formatToken('api', this.o.caFingerprint ?? NO_FINGERPRINT, id, secret),
      id,
      person: who,
      project: chosen.project,
      role: chosen.role,
      expiresAt,
    };
  }

  /** The principal of session `id` with `secret`; null when unknown, wrong, ended, overdue or no longer a member. */
  verify(id: string, secret: string, now = Date.now()): ApiPrincipal | null {
    const row = this.o.tables.get(id);
    if (!row || !secretMatches(secret, row.secret_hash)) return null;
    return this.principalOf(row, now);
  }

  /** When session `id` ends (its expiry); undefined when it is not valid now (ended, overdue, no longer a member). */
  expiry(id: string, now = Date.now()): number | undefined {
    const row = this.o.tables.get(id);
    return row ? (this.principalOf(row, now)?.expiresAt ?? undefined) : undefined;
  }

  /** Which of `ids` are sessions valid now (what the open streams of each are rechecked with). */
  live(ids: readonly string[], now = Date.now()): Set<string> {
    const out = new Set<string>();
    for (const id of ids) {
      const row = this.o.tables.get(id);
      if (row && this.principalOf(row, now)) out.add(id);
    }
    return out;
  }

  /** Ends session `id` (logout): also asks the provider to revoke its refresh token, best effort. */
  async logout(id: string, now = Date.now()): Promise<boolean> {
    const row = this.o.tables.get(id);
    const ended = this.o.tables.revoke(id, now, 'logout');
    if (ended) this.o.ended(id);
    if (row?.refresh_token) {
      await this.o.rp
        .revoke(this.o.box.open(row.refresh_token))
        .catch((err: unknown) =>
          log.warn(
            { err, session: id },
            'the identity provider did not revoke the refresh token (the session ended anyway)',
          ),
        );
    }
    return ended;
  }

  /**
   * Refreshes every session whose refresh is due with the provider: the groups it names now are
   * kept, a refusal ends the session. A provider that cannot be reached leaves the session as it
   * is until it is overdue (verify refuses it then). Returns how many ended.
   */
  async refreshDue(now = Date.now()): Promise<number> {
    let ended = 0;
    for (const row of this.o.tables.due(now)) {
      const end = (why: string) => {
        if (this.o.tables.revoke(row.id, Date.now(), why)) {
          ended++;
          this.o.ended(row.id);
          log.info({ person: personName(row), session: row.id, project: row.project }, `session ended: ${why}`);
        }
      };
      if (!row.refresh_token) {
        end('the identity provider gave no refresh token: sign in again');
        continue;
      }
      let signed: SignedIn;
      try {
        signed = await this.o.rp.refresh(this.o.box.open(row.refresh_token), row.subject);
      } catch (err) {
        if (refusedByProvider(err)) end(`the identity provider refused the refresh (${(err as Error).message})`);
        else log.warn({ err, session: row.id }, 'could not refresh a session with the identity provider (retried)');
        continue;
      }
      this.o.tables.refreshed(row.id, {
        groups: JSON.stringify(signed.person.groups),
        refreshToken: signed.refreshToken === null ? null : this.o.box.seal(signed.refreshToken),
        refreshDue: Date.now() + this.o.refreshMs,
      });
      if (!roleOf(this.o.members(row.project) ?? [], signed.person))
        end(`${personName(signed.person)} is no longer a member of project ${row.project}`);
    }
    this.o.tables.prune(now - this.o.sessionTtlMs);
    return ended;
  }

  private principalOf(row: PersonSessionRow, now: number): ApiPrincipal | null {
    if (row.revoked_at !== null || row.expires_at <= now) return null;
    // One interval of grace past the due refresh: the refresh pass's pace, or a provider briefly away.
    if (row.refresh_due + this.o.refreshMs <= now) return null;
    const person: Person = {
      subject: row.subject,
      email: row.email,
      groups: JSON.parse(row.member_groups) as string[],
    };
    const role = roleOf(this.o.members(row.project) ?? [], person);
    if (!role) return null;
    return { tokenId: row.id, role, project: row.project, expiresAt: row.expires_at, person: personName(person) };
  }
}

/** An OAuth error answer of the provider (invalid_grant...), not a network failure. */
function refusedByProvider(err: unknown): boolean {
  const e = err as { error?: unknown; code?: unknown; name?: unknown };
  return typeof e?.error === 'string' || e?.name === 'ResponseBodyError';
}
