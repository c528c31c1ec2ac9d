/**
 * @module Token routes, all admin (docs/security.md): create join and API tokens, list and revoke
 * them, rotate the hub's first-start admin token. A project admin sees and revokes the tokens of
 * its project only; another project's token answers 404, as its objects do.
 */
import type { TokenView } from '../../core/api/views.js';
import { Hono } from 'hono';
import { parseDuration } from '../../core/durations.js';
import { OutpostError } from '../../core/errors.js';
import { isValidName } from '../../core/ids.js';
import { Labels } from '../../core/resources.js';
import type { HubAuth, Role } from '../auth/contract.js';
import { createLogger } from '../../core/logger.js';
import { actor, authorize, principal, type Env } from '../auth/middleware.js';
import { jsonBody } from '../json-body.js';

function ttlOf(ttl: string | undefined): number | undefined {
  try {
    return ttl ? parseDuration(ttl) : undefined;
  } catch (err) {
    throw new OutpostError('invalid', `ttl: ${(err as Error).message}`);
  }
}

const log = createLogger('hub:api');

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function tokenRoutes(auth: HubAuth): Hono<Env> {
  const app = new Hono<Env>();

  app.post('/tokens/join', async (c) => {
    const b = await jsonBody<{ project?: string; labels?: unknown; ttl?: string; uses?: number }>(c);
    const project = b.project ?? (principal(c).project === '*' ? 'default' : principal(c).project);
    if (!isValidName(project)) throw new OutpostError('invalid', 'project: must be a DNS label such as "default"');
    // Admin, as docs/security.md says: a join token makes an edge that receives the project's
    // workloads and Secrets, which is more than an operator's write.
    authorize(c, 'admin', project);
    const labels = Labels.safeParse(b.labels ?? {});
    if (!labels.success) throw new OutpostError('invalid', `labels: ${labels.error.issues[0]?.message}`);
    if (b.uses !== undefined && (!Number.isInteger(b.uses) || b.uses < 1))
      throw new OutpostError('invalid', 'uses: must be a positive integer');
    const t = auth.createJoinToken({ project, labels: labels.data, ttlMs: ttlOf(b.ttl), uses: b.uses });
    log.info({ token: t.id, project, by: actor(c) }, 'join token created');
    return c.json({ token: t.token, id: t.id, expiresAt: new Date(t.expiresAt).toISOString() }, 201);
  });

  app.post('/tokens/api', async (c) => {
    const b = await jsonBody<{ role?: Role; project?: string; ttl?: string; description?: string }>(c);
    const role = b.role ?? 'viewer';
    if (!['admin', 'operator', 'viewer'].includes(role))
      throw new OutpostError('invalid', 'role: must be one of admin, operator, viewer');
    const project = b.project ?? 'default';
    if (project !== '*' && !isValidName(project))
      throw new OutpostError('invalid', 'project: must be a DNS label or "*"');
    const p = principal(c);
    if (p.role !== 'admin' || (p.project !== '*' && p.project !== project))
      throw new OutpostError('forbidden', 'only an admin token of that project can create API tokens');
    // Who made it stays with it (`token list`), unless the maker describes it otherwise.
    const t = auth.createApiToken({
      role,
      project,
      ttlMs: ttlOf(b.ttl),
      description: b.description ?? `created by ${actor(c)}`,
    });
    log.info({ token: t.id, role, project, by: actor(c) }, 'API token created');
    return c.json({ token: t.token, id: t.id, role, project }, 201);
  });

  /** GET /tokens?project=P: the tokens the caller administers (a `*` admin: all, or those of P). */
  app.get('/tokens', (c) => {
    const p = principal(c);
    const only = c.req.query('project');
    const scope = p.project === '*' ? only : p.project;
    authorize(c, 'admin', scope ?? '*');
    const { api, join } = auth.listTokens();
    const mine = <T extends { project: string }>(ts: T[]) => (scope ? ts.filter((t) => t.project === scope) : ts);
    const items: TokenView[] = [
      ...mine(api).map((t) => ({ kind: 'api' as const, ...t })),
      ...mine(join).map((t) => ({ kind: 'join' as const, ...t })),
    ].map((t) => ({
      ...t,
      createdAt: new Date(t.createdAt).toISOString(),
      expiresAt: iso(t.expiresAt),
      revokedAt: iso(t.revokedAt),
    }));
    return c.json({ items });
  });

  app.delete('/tokens/:id', (c) => {
    const id = c.req.param('id');
    const { api, join } = auth.listTokens();
    const found =
      api.map((t) => ({ kind: 'api' as const, ...t })).find((t) => t.id === id) ??
      join.map((t) => ({ kind: 'join' as const, ...t })).find((t) => t.id === id);
    if (!found) throw new OutpostError('not_found', `no token with id ${id}: see \`outpost token list\``);
    // 404 for another project's token (authorize), 403 for a non-admin of this one.
    authorize(c, 'admin', found.project);
    if (found.kind === 'api' && found.id === principal(c).tokenId)
      throw new OutpostError(
        'bad_request',
        `token ${id} is the one this request is made with: revoke it with another admin token (for the hub's admin.token: outpost token rotate-admin)`,
      );
    const revoked = auth.revokeToken(found.kind, id);
    log.info({ token: id, kind: found.kind, project: found.project, by: actor(c) }, 'token revoked');
    return c.json({
      revoked: { id, kind: found.kind, project: found.project },
      ...(revoked ? {} : { alreadyRevokedAt: iso(found.revokedAt) }),
    });
  });

  app.post('/tokens/rotate-admin', (c) => {
    authorize(c, 'admin', '*');
    const r = auth.rotateAdminToken();
    return c.json({ token: r.token, id: r.id, revoked: r.revoked }, 201);
  });

  return app;
}
