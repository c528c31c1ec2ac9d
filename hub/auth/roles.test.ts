import { describe, expect, it } from 'vitest';
import { OutpostError } from '../../core/errors.js';
import { authorize, can, canGrant, type Action, type Role } from './roles.js';

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
      'this viewer token for project "shop" may not write in project "shop": use a token with role operator or higher for project "shop"',
    );
    expect(() => authorize({ role: 'admin', project: 'shop' }, 'admin', '*')).toThrow(
      'this admin token for project "shop" may not administer across all projects: use a token with role admin or higher for all projects (*)',
    );
    expect(() => authorize({ role: 'operator', project: 'shop' }, 'write', 'shop')).not.toThrow();
  });
});
