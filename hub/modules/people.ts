/**
 * @module People from an identity provider (`outpost hub --oidc-issuer`) as one module: the
 * relying party (hub/auth/oidc.ts), the hub's sessions of people (hub/auth/people.ts) over the
 * people_sessions table, the sign-ins in progress (hub/auth/sign-in.ts), and the pass that
 * refreshes due sessions with the provider. Without an issuer the hub has none of it.
 */
import fs from 'node:fs';
import { OIDC_REFRESH_MS, OIDC_SESSION_TTL_MS } from '../../core/durations.js';
import { createLogger } from '../../core/logger.js';
import { DEFAULT_OIDC_SCOPES, OidcRelyingParty } from '../auth/oidc.js';
import { PeopleSessions } from '../auth/people.js';
import { OidcSignIn } from '../auth/sign-in.js';
import type { TokenStreams } from '../auth/token-streams.js';
import type { HubModule } from '../module.js';
import type { HubOptions } from '../options.js';
import type { Projects } from '../projects/store.js';
import type { HubState } from '../state/index.js';

const log = createLogger('hub:people');

export interface PeopleModule extends HubModule {
  readonly sessions: PeopleSessions;
  readonly signIn: OidcSignIn;
  readonly issuer: string;
  /** Runs one refresh pass now (tests; the module runs them every tick). */
  refreshNow(): Promise<number>;
}

/** The client secret of `--oidc-client-secret-file`: the file's first line. */
export function readClientSecret(file: string): string {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read --oidc-client-secret-file ${file}: ${(err as Error).message}`, { cause: err });
  }
  const secret = text.split(/\r?\n/)[0]!.trim();
  if (!secret) throw new Error(`--oidc-client-secret-file ${file} is empty: put the client secret on its first line`);
  return secret;
}

export function createPeopleModule(o: {
  oidc: NonNullable<HubOptions['oidc']>;
  state: HubState;
  projects: Projects;
  box: { seal(value: string): string; open(sealed: string): string };
  caFingerprint: string | null;
  tokenStreams: TokenStreams;
  /**
   * Whether this replica plans (hub/scheduler): only it refreshes. Two replicas refreshing one
   * session at once would present the same refresh token twice, which a provider that rotates
   * them takes for a stolen one (it revokes the grant, and the person is signed out).
   */
  leading: () => boolean;
}): PeopleModule {
  const refreshMs = o.oidc.refreshMs ?? OIDC_REFRESH_MS;
  const rp = new OidcRelyingParty({
    issuer: o.oidc.issuer,
    clientId: o.oidc.clientId,
    clientSecret: readClientSecret(o.oidc.clientSecretFile),
    groupsClaim: o.oidc.groupsClaim ?? 'groups',
    scopes: o.oidc.scopes ?? DEFAULT_OIDC_SCOPES,
  });
  const sessions = new PeopleSessions({
    tables: o.state.people,
    rp,
    box: o.box,
    members: (p) => {
      const project = o.projects.get(p);
      return project && project.status?.phase !== 'Terminating' ? project.spec.members : undefined;
    },
    projects: () => o.projects.list().map((p) => ({ name: p.metadata.name, members: p.spec.members })),
    caFingerprint: o.caFingerprint,
    refreshMs,
    sessionTtlMs: o.oidc.sessionTtlMs ?? OIDC_SESSION_TTL_MS,
    ended: (id) => o.tokenStreams.revoke(id),
  });
  const signIn = new OidcSignIn(rp, sessions);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  const refreshNow = () =>
    (running ??= sessions
      .refreshDue()
      .catch((err: unknown) => {
        log.warn({ err }, 'the refresh pass of people sessions failed (retried)');
        return 0;
      })
      .finally(() => (running = undefined)));
  return {
    name: 'people',
    sessions,
    signIn,
    issuer: o.oidc.issuer,
    refreshNow,
    start() {
      // A tenth of the interval: a due session is refreshed well inside the one interval of grace it has.
      timer = setInterval(
        () => {
          if (o.leading()) void refreshNow();
        },
        Math.max(250, Math.floor(refreshMs / 10)),
      );
      timer.unref();
      void rp.configuration().then(
        () => log.info({ issuer: o.oidc.issuer }, 'identity provider discovered'),
        () => {},
      );
    },
    async stop() {
      clearInterval(timer);
      signIn.close();
      await running;
    },
  };
}
