/**
 * @module Discovery: what kubectl and client-go read first to map kinds to URLs. Both forms are
 * served: the aggregated one (`apidiscovery.k8s.io/v2`, one answer for every group, which kubectl
 * 1.33 asks for in its Accept header) and the older per-group documents (`/apis`,
 * `/apis/GROUP`, `/apis/GROUP/VERSION`). Besides `outpost.dev`, the core group serves
 * `namespaces` (the projects) and `authorization.k8s.io` / `authentication.k8s.io` the self
 * reviews `kubectl auth can-i` and `kubectl auth whoami` send.
 */
import type { Context } from 'hono';
import { CATEGORY, GROUP, GROUP_VERSION, RESOURCES, VERSION } from './kinds.js';

interface Res {
  name: string;
  singularName: string;
  namespaced: boolean;
  kind: string;
  group?: string;
  version?: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
}

interface GroupDoc {
  name: string;
  version: string;
  resources: Res[];
}

const OUTPOST: GroupDoc = {
  name: GROUP,
  version: VERSION,
  resources: RESOURCES.flatMap((r) => [
    {
      name: r.plural,
      singularName: r.singular,
      namespaced: true,
      kind: r.kind,
      verbs: r.verbs,
      shortNames: r.shortNames,
      categories: [CATEGORY],
    },
    { name: `${r.plural}/status`, singularName: '', namespaced: true, kind: r.kind, verbs: ['get'] },
  ]),
};

const CORE: GroupDoc = {
  name: '',
  version: 'v1',
  resources: [
    {
      name: 'namespaces',
      singularName: 'namespace',
      namespaced: false,
      kind: 'Namespace',
      verbs: ['get', 'list'],
      shortNames: ['ns'],
    },
  ],
};

const AUTHORIZATION: GroupDoc = {
  name: 'authorization.k8s.io',
  version: 'v1',
  resources: [
    {
      name: 'selfsubjectaccessreviews',
      singularName: 'selfsubjectaccessreview',
      namespaced: false,
      kind: 'SelfSubjectAccessReview',
      verbs: ['create'],
    },
    {
      name: 'selfsubjectrulesreviews',
      singularName: 'selfsubjectrulesreview',
      namespaced: false,
      kind: 'SelfSubjectRulesReview',
      verbs: ['create'],
    },
  ],
};

const AUTHENTICATION: GroupDoc = {
  name: 'authentication.k8s.io',
  version: 'v1',
  resources: [
    {
      name: 'selfsubjectreviews',
      singularName: 'selfsubjectreview',
      namespaced: false,
      kind: 'SelfSubjectReview',
      verbs: ['create'],
    },
  ],
};

/** The named groups, in the order discovery lists them (kubectl prefers earlier groups for a short name). */
const GROUPS = [OUTPOST, AUTHORIZATION, AUTHENTICATION];

const gv = (g: GroupDoc) => (g.name ? `${g.name}/${g.version}` : g.version);

function resourceList(g: GroupDoc) {
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv(g), resources: g.resources };
}

function apiGroup(g: GroupDoc) {
  const v = { groupVersion: gv(g), version: g.version };
  return { name: g.name, versions: [v], preferredVersion: v };
}

/** One group in the aggregated form (apidiscovery.k8s.io/v2 APIGroupDiscovery). */
function aggregated(g: GroupDoc) {
  const top = g.resources.filter((r) => !r.name.includes('/'));
  return {
    metadata: { name: g.name, creationTimestamp: null },
    versions: [
      {
        version: g.version,
        freshness: 'Current',
        resources: top.map((r) => ({
          resource: r.name,
          responseKind: { group: g.name, version: g.version, kind: r.kind },
          scope: r.namespaced ? 'Namespaced' : 'Cluster',
          singularResource: r.singularName,
          verbs: r.verbs,
          ...(r.shortNames ? { shortNames: r.shortNames } : {}),
          ...(r.categories ? { categories: r.categories } : {}),
          ...(g.resources.some((s) => s.name === `${r.name}/status`)
            ? {
                subresources: [
                  {
                    subresource: 'status',
                    responseKind: { group: g.name, version: g.version, kind: r.kind },
                    verbs: ['get'],
                  },
                ],
              }
            : {}),
        })),
      },
    ],
  };
}

const AGGREGATED_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** Whether the client asks for aggregated discovery (v2; the v2beta1 kubectl also offers is not served). */
function wantsAggregated(c: Context): boolean {
  const accept = c.req.header('accept') ?? '';
  return accept.split(',').some((a) => {
    const p = a.replace(/\s/g, '');
    return p.includes('g=apidiscovery.k8s.io') && p.includes('v=v2;') && p.includes('as=APIGroupDiscoveryList');
  });
}

function aggregatedList(groups: GroupDoc[]) {
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items: groups.map(aggregated),
  };
}

const json = (c: Context, body: unknown, type = 'application/json') =>
  c.body(JSON.stringify(body), 200, { 'content-type': type });

export const discovery = {
  /** GET /api */
  legacy(c: Context) {
    if (wantsAggregated(c)) return json(c, aggregatedList([CORE]), AGGREGATED_V2);
    return json(c, {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: new URL(c.req.url).host }],
    });
  },
  /** GET /api/v1 */
  legacyV1: (c: Context) => json(c, resourceList(CORE)),
  /** GET /apis */
  groups(c: Context) {
    if (wantsAggregated(c)) return json(c, aggregatedList(GROUPS), AGGREGATED_V2);
    return json(c, { kind: 'APIGroupList', apiVersion: 'v1', groups: GROUPS.map(apiGroup) });
  },
  /** GET /apis/:group, or undefined for a group not served. */
  group(c: Context, name: string) {
    const g = GROUPS.find((x) => x.name === name);
    return g && json(c, { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(g) });
  },
  /** GET /apis/:group/:version, or undefined for one not served. */
  version(c: Context, name: string, version: string) {
    const g = GROUPS.find((x) => x.name === name && x.version === version);
    return g && json(c, resourceList(g));
  },
};

export { GROUP_VERSION };
