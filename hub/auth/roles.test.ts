import { describe, expect, it } from 'vitest';
import { OutpostError } from '../../core/errors.js';
import { authorize, authorizeAllProjects, can, canGrant, type Action, type Role } from './roles.js';

// The matrix from the module header, spelled out: [role, action, allowed in its own project].
const MATRIX: [Role, Action, boolean][] = [
  ['viewer', 'read', true],
  ['viewer', 'write', false],
  ['viewer', 'admin', false],
  ['operator', 'read', true],
  ['operator', 'write', true],
  ['operator', 'admin', false],
  ['admin', 'read', true],
  ['admin', 'write', true],
  ['admin', 'admin', true],
];

describe('can', () => {
  for (const [role, action, allowed] of MATRIX) {
    it(`${role} ${allowed ? 'may' : 'may not'} ${action} in its project, never in another`, () => {
      expect(can({ role, project: 'shop' }, action, 'shop')).toBe(allowed);
      expect(can({ role, project: 'shop' }, action, 'factory')).toBe(false);
      expect(can({ role, project: 'shop' }, action, '*')).toBe(false);
    });
    it(`${role} for all projects ${allowed ? 'may' : 'may not'} ${action} anywhere, hub-wide included`, () => {
      expect(can({ role, project: '*' }, action, 'shop')).toBe(allowed);
      expect(can({ role, project: '*' }, action, '*')).toBe(allowed);
    });
  }

  it('token creation needs admin over the target project', () => {
    expect(canGrant({ role: 'admin', project: 'shop' }, { project: 'shop' })).toBe(true);
    expect(canGrant({ role: 'admin', project: 'shop' }, { project: '*' })).toBe(false);
    expect(canGrant({ role: 'admin', project: 'shop' }, { project: 'factory' })).toBe(false);
    expect(canGrant({ role: 'operator', project: 'shop' }, { project: 'shop' })).toBe(false);
    expect(canGrant({ role: 'admin', project: '*' }, { project: '*' })).toBe(true);
  });
});

describe('authorize', () => {
  it('throws 403 saying which token would do', () => {
    let err: unknown;
    try {
      authorize({ role: 'viewer', project: 'shop' }, 'write', 'shop');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OutpostError);
    expect((err as OutpostError).status).toBe(403);
    expect((err as OutpostError).message).toBe(
      'a viewer token may not change objects in project shop: ask an admin for an operator or admin token',
    );
    expect(() => authorize({ role: 'operator', project: 'shop' }, 'admin', 'shop')).toThrow(
      'an operator token may not do this in project shop: ask an admin for an admin token',
    );
    expect(() =>
      authorize({ role: 'viewer', project: '*' }, 'write', 'shop', { doing: 'use kube on edge e1' }),
    ).toThrow('a viewer token may not use kube on edge e1 in project shop');
    expect(() => authorize({ role: 'operator', project: 'shop' }, 'write', 'shop')).not.toThrow();
  });

  it("throws 404 outside the token's project, so the token never learns what exists there", () => {
    for (const [project, words, message] of [
      ['*', {}, 'project * not found'],
      ['factory', { notFound: 'edge e1' }, 'edge e1 not found'],
    ] as const) {
      let err: unknown;
      try {
        authorize({ role: 'admin', project: 'shop' }, 'read', project, words);
      } catch (e) {
        err = e;
      }
      expect((err as OutpostError).status).toBe(404);
      expect((err as OutpostError).message).toBe(message);
    }
  });
});

describe('authorizeAllProjects', () => {
  const attempt = (role: Role, tokenProject: string, project: string): OutpostError | undefined => {
    try {
      authorizeAllProjects({ role, project: tokenProject }, project, 'sign agent releases', 'why');
    } catch (e) {
      return e as OutpostError;
    }
    return undefined;
  };

  it('lets only an admin for every project through, in any project', () => {
    expect(attempt('admin', '*', 'shop')).toBeUndefined();
    expect(attempt('admin', '*', '*')).toBeUndefined();
  });

  it('refuses a project admin in its own project with 403 naming who may; 404 in another', () => {
    const own = attempt('admin', 'shop', 'shop')!;
    expect(own.status).toBe(403);
    expect(own.message).toBe(
      "an admin token of project shop may not sign agent releases: only an admin token for every project (*), like the hub's first admin.token, may (why); ask its holder",
    );
    expect(attempt('admin', 'shop', 'factory')!.status).toBe(404);
    expect(attempt('operator', '*', 'shop')!.status).toBe(403);
    expect(attempt('viewer', 'shop', 'shop')!.message).toMatch(/^a viewer token of project shop may not/);
  });
});
