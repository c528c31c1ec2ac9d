/**
 * @module How Outpost's kinds are named as Kubernetes resources of the `outpost.dev` group: the
 * plural a URL carries, the singular and short names kubectl accepts (the same as `outpost get`
 * takes), and the verbs each serves. Every kind is namespaced: a namespace is a project.
 */
import { KIND_NAMES } from '../../core/kind-names.js';
import { API_VERSION, KINDS, type Kind } from '../../core/resources.js';

export const GROUP = 'outpost.dev';
export const VERSION = 'v1alpha1';
export const GROUP_VERSION = API_VERSION;

export interface KubeResource {
  kind: Kind;
  plural: string;
  singular: string;
  shortNames: string[];
  verbs: string[];
}

const ALL_VERBS = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];
/** Edges are created by enrollment and leave by decommission (docs/edges.md): only their labels and spec change here. */
const EDGE_VERBS = ['get', 'list', 'patch', 'update', 'watch'];

export const RESOURCES: readonly KubeResource[] = KINDS.map((kind) => ({
  kind,
  plural: KIND_NAMES[kind].plural,
  singular: KIND_NAMES[kind].singular,
  shortNames: [KIND_NAMES[kind].short],
  verbs: kind === 'Edge' ? EDGE_VERBS : ALL_VERBS,
}));

const BY_PLURAL = new Map(RESOURCES.map((r) => [r.plural, r]));
const BY_KIND = new Map(RESOURCES.map((r) => [r.kind, r]));

export function resourceByPlural(plural: string): KubeResource | undefined {
  return BY_PLURAL.get(plural);
}

export function resourceOf(kind: Kind): KubeResource {
  return BY_KIND.get(kind)!;
}

/** `kubectl get all`-style category: `kubectl get outpost` lists every kind. */
export const CATEGORY = 'outpost';
