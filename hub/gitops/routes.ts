/**
 * @module The GitRepos' API routes (docs/api.md): `POST /projects/P/gitrepos/NAME/sync` (an
 * operator's token: fetch and apply now, answer the status), and the webhook
 * `POST /hooks/git/P/NAME`, outside the token authentication: a push event signed with the
 * GitRepo's `spec.webhookSecret` as GitHub and Gitea sign them (`X-Hub-Signature-256:
 * sha256=HMAC-SHA256(secret, body)`, or Gitea's `X-Gitea-Signature`, the same HMAC in hex).
 */
import crypto from 'node:crypto';
import { Hono } from 'hono';
import { OutpostError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import type { GitRepo } from '../../core/resources.js';
import { authorize, type Env } from '../auth/middleware.js';
import type { SecretBox } from '../secrets.js';
import { openWebhookSecret } from './credentials.js';
import type { GitRepos } from './index.js';

const log = createLogger('hub:gitops');

export function gitRepoRoutes(gitRepos: GitRepos): Hono<Env> {
  const app = new Hono<Env>();
  app.post('/projects/:project/gitrepos/:name/sync', async (c) => {
    const project = c.req.param('project');
    authorize(c, 'write', project);
    return c.json(await gitRepos.sync(project, c.req.param('name'), 'manual'));
  });
  return app;
}

/** True when `signature` (hex, with or without `sha256=`) is the HMAC-SHA256 of `body` under `secret`. */
export function signatureMatches(secret: string, body: Buffer, signature: string | undefined): boolean {
  if (!signature) return false;
  const given = Buffer.from(signature.replace(/^sha256=/, ''), 'hex');
  const want = crypto.createHmac('sha256', secret).update(body).digest();
  return given.length === want.length && crypto.timingSafeEqual(given, want);
}

/**
 * The webhook: refused with 401 alike for an unknown GitRepo, one without a webhook secret and a
 * bad signature (the answer does not tell which GitRepos exist). A push starts a sync and is
 * answered 202 at once (GitHub gives a hook 10 s); a `ping` is answered 200.
 */
export function gitWebhookRoute(
  gitRepos: Pick<GitRepos, 'sync'>,
  get: (project: string, name: string) => GitRepo | undefined,
  box: SecretBox,
): Hono {
  const app = new Hono();
  app.post('/hooks/git/:project/:name', async (c) => {
    const project = c.req.param('project');
    const name = c.req.param('name');
    const body = Buffer.from(await c.req.arrayBuffer());
    const repo = get(project, name);
    const secret = repo ? openWebhookSecret(box, repo.spec) : undefined;
    const sig = c.req.header('x-hub-signature-256') ?? c.req.header('x-gitea-signature');
    if (!secret || !signatureMatches(secret, body, sig)) {
      log.warn(
        { project, name, signed: !!sig },
        'refused a Git webhook: no GitRepo with a webhook secret matches its signature',
      );
      throw new OutpostError(
        'unauthorized',
        'the webhook signature does not match: sign with the GitRepo spec.webhookSecret (X-Hub-Signature-256: sha256=HMAC-SHA256)',
      );
    }
    const event = c.req.header('x-github-event') ?? c.req.header('x-gitea-event') ?? 'push';
    if (event === 'ping') return c.json({ ok: true, event });
    gitRepos
      .sync(project, name, 'webhook')
      .catch((err: unknown) => log.warn({ err, project, name }, 'a GitRepo sync asked by its webhook failed'));
    return c.json({ accepted: true, event }, 202);
  });
  return app;
}
