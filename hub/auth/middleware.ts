/**
 * @module The API's authentication: the middleware that verifies a request's bearer token into its
 * principal (every route under /api/v1 but enrollment), refusing a missing, unknown, expired or
 * revoked token with 401; and what a route asks of that principal.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { HubAuth, Principal } from './contract.js';
import { actorOf, principalFromHeader } from './principal.js';
import { authorize as authorizeIn, type Action } from './roles.js';

export type Env = { Variables: { principal: Principal } };

/** Sets the request's principal from its `Authorization` header. */
export function authenticate(auth: Pick<HubAuth, 'verifyApiToken'>): MiddlewareHandler<Env> {
  return async (c, next) => {
    c.set(
      'principal',
      principalFromHeader((t) => auth.verifyApiToken(t), c.req.header('authorization')),
    );
    await next();
  };
}

export function principal(c: Context<Env>): Principal {
  return c.get('principal');
}

/** Who makes the request, as events and audit lines name them: the person, or the token (principal.ts actorOf). */
export function actor(c: Context<Env>): string {
  return actorOf(principal(c));
}

/** The request's principal, if it may do `action` in `project` (404 outside its project, 403 else: hub/auth/roles.ts). */
export function authorize(c: Context<Env>, action: Action, project: string): Principal {
  const p = principal(c);
  authorizeIn(p, action, project);
  return p;
}
