/**
 * The role × project matrix (hub/auth/roles.test.ts spells it out for `can`) over the Project routes
 * (issue #47; docs/security.md "Roles", docs/projects.md "Who"), on an in-process hub: for each role
 * (viewer, operator, admin) with a token of project shop (its own project, and project factory, not
 * its own) or of every project (`*`), each Project route (list, get, create by POST and by apply,
 * update by PUT and PATCH, delete, and the Project's events) answers as the docs say. A token of
 * shop never learns anything of factory's Project: no name in a list, no description, member or
 * quota use in any answer, and every answer about factory is the answer about a project that does
 * not exist.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hub } from '../hub/hub.js';
import { hubApi } from './fixtures/host-workloads.js';
import { startInProcessHub, stopInProcess } from './fixtures/in-process-fleet.js';

const ROLES = ['viewer', 'operator', 'admin'] as const;
/** What factory holds that no token of shop may see. */
const FACTORY_SECRETS = ['the-factory-line', 'boss@factory.example', 'factory-ops', '"workloads":1'];

const project = (name: string, spec: object = {}) => ({ kind: 'Project', metadata: { name }, spec });

type Answer = { status: number; json: any };

let dir: string;
let hub: Hub;
const admin = () => ({ url: hub.url, token: hub.adminToken });
const call = (token: string, method: string, p: string, body?: unknown): Promise<Answer> =>
  hubApi(admin(), method, p, body, token);

/** Each Project route against `name`, as a token asks it. */
const ROUTES: Record<string, (token: string, name: string) => Promise<Answer>> = {
  get: (t, n) => call(t, 'GET', `/api/v1/projects/${n}`),
  events: (t, n) => call(t, 'GET', `/api/v1/projects/${n}/events`),
  create: (t, n) => call(t, 'POST', '/api/v1/projects', project(n, { description: 'made' })),
  apply: (t, n) => call(t, 'POST', '/api/v1/apply', { objects: [project(n, { description: 'applied' })] }),
  put: (t, n) => call(t, 'PUT', `/api/v1/projects/${n}`, project(n, { description: 'put' })),
  patch: (t, n) => call(t, 'PATCH', `/api/v1/projects/${n}`, { spec: { description: 'patched' } }),
  delete: (t, n) => call(t, 'DELETE', `/api/v1/projects/${n}`),
};

beforeAll(async () => {
  ({ dir, hub } = await startInProcessHub('outpost-projects-access-'));
  for (const p of [
    project('shop', {
      description: 'the tills',
      quotas: { workloads: 5 },
      members: [{ user: 'ana@shop.example', role: 'admin' }],
    }),
    project('factory', {
      description: 'the-factory-line',
      quotas: { workloads: 7, tunnelSessions: 3 },
      members: [
        { user: 'boss@factory.example', role: 'admin' },
        { group: 'factory-ops', role: 'operator' },
      ],
    }),
  ])
    expect((await call(hub.adminToken, 'POST', '/api/v1/projects', p)).status).toBe(201);
  const w = {
    kind: 'Workload',
    metadata: { name: 'line', project: 'factory' },
    spec: { manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'line' }, data: { a: '1' } }] },
  };
  expect((await call(hub.adminToken, 'POST', '/api/v1/apply', { objects: [w] })).status).toBe(200);
});
afterAll(() => stopInProcess({ hub, dir }));

async function tokenFor(role: string, project: string): Promise<string> {
  const r = await call(hub.adminToken, 'POST', '/api/v1/tokens/api', { role, project });
  expect(r.status).toBe(201);
  return r.json.token as string;
}

const versions = async () =>
  Object.fromEntries(
    ((await call(hub.adminToken, 'GET', '/api/v1/projects')).json.items as any[]).map((p) => [
      p.metadata.name,
      p.metadata.resourceVersion,
    ]),
  );

describe('the role × project matrix over the Project routes', () => {
  it('a token of project shop: reads its own Project, changes none, and never learns of factory', async () => {
    const before = await versions();
    let asked = 0;
    const leaks: string[] = [];
    for (const role of ROLES) {
      const t = await tokenFor(role, 'shop');
      const list = await call(t, 'GET', '/api/v1/projects');
      asked++;
      expect(list.status).toBe(200);
      expect(list.json.items.map((p: any) => p.metadata.name)).toEqual(['shop']);
      expect(list.json.items[0].status.usage).toMatchObject({ workloads: 0 });
      expect(list.json.items[0].spec.members).toEqual([{ user: 'ana@shop.example', role: 'admin' }]);
      if (FACTORY_SECRETS.some((s) => JSON.stringify(list.json).includes(s))) leaks.push(`${role} list`);

      // Its own project: read, never written (403 naming who may).
      for (const [route, ask] of Object.entries(ROUTES)) {
        const r = await ask(t, 'shop');
        asked++;
        const read = route === 'get' || route === 'events';
        expect(r.status, `${role} of shop: ${route} shop: ${JSON.stringify(r.json)}`).toBe(read ? 200 : 403);
        if (!read) expect(r.json.error.message).toMatch(/only an admin token for every project \(\*\)/);
        if (JSON.stringify(r.json).match(/factory/)) leaks.push(`${role} ${route} shop`);
      }

      // Another project: every answer is the one about a project that does not exist.
      for (const [route, ask] of Object.entries(ROUTES)) {
        const there = await ask(t, 'factory');
        const nowhere = await ask(t, 'nosuch');
        asked += 2;
        expect(there.status, `${role} of shop: ${route} factory: ${JSON.stringify(there.json)}`).toBe(404);
        expect(JSON.stringify(there.json)).toBe(JSON.stringify(nowhere.json).replaceAll('nosuch', 'factory'));
        if (FACTORY_SECRETS.some((s) => JSON.stringify(there.json).includes(s))) leaks.push(`${role} ${route} factory`);
      }
    }
    console.log(`a token of shop asked the Project routes ${asked} times: ${leaks.length} leaks`);
    expect(leaks).toEqual([]);
    expect(await versions()).toEqual(before);
  });

  it('a viewer or operator of every project reads every Project and changes none', async () => {
    const before = await versions();
    for (const role of ['viewer', 'operator'] as const) {
      const t = await tokenFor(role, '*');
      const list = await call(t, 'GET', '/api/v1/projects');
      expect(list.json.items.map((p: any) => p.metadata.name)).toEqual(['default', 'factory', 'shop']);
      const factory = list.json.items.find((p: any) => p.metadata.name === 'factory');
      expect(factory.status.usage).toMatchObject({ workloads: 1 });
      for (const [route, ask] of Object.entries(ROUTES)) {
        for (const name of ['factory', 'made-by-' + role]) {
          const r = await ask(t, name);
          const read = route === 'get' || route === 'events';
          // A project's events are its log, there (empty) for a name no Project has yet.
          const expected = route === 'events' ? 200 : read ? (name === 'factory' ? 200 : 404) : 403;
          expect(r.status, `${role} of *: ${route} ${name}: ${JSON.stringify(r.json)}`).toBe(expected);
          if (!read) expect(r.json.error.message).toMatch(/only an admin token for every project \(\*\)/);
        }
      }
    }
    expect(await versions()).toEqual(before);
  });

  it('an admin of every project creates, changes and deletes Projects', async () => {
    const t = await tokenFor('admin', '*');
    expect((await ROUTES.create!(t, 'made')).status).toBe(201);
    expect((await ROUTES.apply!(t, 'made')).status).toBe(200);
    expect((await ROUTES.put!(t, 'made')).status).toBe(200);
    const patched = await ROUTES.patch!(t, 'made');
    expect(patched.status).toBe(200);
    expect(patched.json.spec.description).toBe('patched');
    expect((await ROUTES.get!(t, 'made')).status).toBe(200);
    expect((await ROUTES.events!(t, 'made')).status).toBe(200);
    expect((await ROUTES.get!(t, 'factory')).json.spec.members).toHaveLength(2);
    expect((await ROUTES.delete!(t, 'made')).status).toBe(202);
    await expect.poll(async () => (await ROUTES.get!(t, 'made')).status, { timeout: 20_000, interval: 200 }).toBe(404);
  });
});
