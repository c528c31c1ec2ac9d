/**
 * @module The self reviews kubectl sends: SelfSubjectAccessReview (`kubectl auth can-i VERB
 * RESOURCE`), SelfSubjectRulesReview (`kubectl auth can-i --list`) and SelfSubjectReview
 * (`kubectl auth whoami`), answered from the token's role and project (access.ts).
 */
import { OutpostError } from '../../core/errors.js';
import { ALL_PROJECTS, can } from '../auth/roles.js';
import type { ApiPrincipal } from '../auth/principal.js';
import { decide, userOf } from './access.js';
import { GROUP, RESOURCES } from './kinds.js';

type Body = Record<string, unknown>;

const SERVED = new Set(RESOURCES.map((r) => r.plural));

export function accessReview(p: ApiPrincipal, body: Body): Body {
  const spec = (body.spec ?? {}) as {
    resourceAttributes?: { namespace?: string; verb?: string; group?: string; resource?: string; subresource?: string };
    nonResourceAttributes?: { path?: string; verb?: string };
  };
  let status: { allowed: boolean; reason?: string; denied?: boolean };
  const ra = spec.resourceAttributes;
  if (ra) {
    const group = ra.group ?? '';
    const resource = ra.resource ?? '';
    const verb = ra.verb ?? '';
    const outpost = group === GROUP && (resource === '*' || SERVED.has(resource));
    const namespaces = group === '' && resource === 'namespaces' && (verb === 'get' || verb === 'list');
    if (!outpost && !namespaces)
      status = {
        allowed: false,
        reason: `the Outpost hub serves the ${GROUP} resources (${[...SERVED].join(', ')}) and namespaces, not ${resource}${group ? `.${group}` : ''}`,
      };
    else if (ra.subresource && ra.subresource !== 'status')
      status = { allowed: false, reason: `no subresource ${ra.subresource} is served` };
    else if (ra.subresource === 'status' && verb !== 'get')
      status = { allowed: false, reason: 'the status subresource is read-only: the hub writes status' };
    else if (namespaces)
      status = decide(p, {
        verb,
        resource,
        group,
        namespace: verb === 'get' ? (ra.namespace ?? p.project) : undefined,
      });
    else {
      const verbs = verb === '*' ? ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] : [verb];
      const denied = verbs
        .map((v) => decide(p, { verb: v, resource, group, namespace: ra.namespace || undefined }))
        .find((d) => !d.allowed);
      status = denied ?? { allowed: true };
    }
  } else if (spec.nonResourceAttributes) {
    // Discovery, OpenAPI and /version answer every authenticated token.
    status = { allowed: (spec.nonResourceAttributes.verb ?? 'get') === 'get' };
  } else throw new OutpostError('invalid', 'spec: give resourceAttributes or nonResourceAttributes');
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    metadata: { creationTimestamp: null },
    spec,
    status: { allowed: status.allowed, ...(status.reason ? { reason: status.reason } : {}) },
  };
}

export function rulesReview(p: ApiPrincipal, body: Body): Body {
  const namespace = ((body.spec ?? {}) as { namespace?: string }).namespace ?? '';
  const inScope = p.project === ALL_PROJECTS || p.project === namespace;
  const verbs = inScope
    ? can(p, 'write', namespace || ALL_PROJECTS)
      ? ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']
      : ['get', 'list', 'watch']
    : [];
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectRulesReview',
    metadata: { creationTimestamp: null },
    spec: { namespace },
    status: {
      resourceRules: [
        ...(verbs.length ? [{ verbs, apiGroups: [GROUP], resources: [...SERVED] }] : []),
        {
          verbs: ['create'],
          apiGroups: ['authorization.k8s.io'],
          resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
        },
        { verbs: ['create'], apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'] },
      ],
      nonResourceRules: [
        { verbs: ['get'], nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/openapi/*', '/version'] },
      ],
      incomplete: false,
    },
  };
}

export function selfReview(p: ApiPrincipal): Body {
  return {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
    metadata: { creationTimestamp: null },
    status: { userInfo: userOf(p) },
  };
}
