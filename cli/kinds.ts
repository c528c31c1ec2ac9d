/**
 * @module The kinds the CLI accepts and how they are spelled: singular, plural or short, in any
 * case (`edge`, `edges`, `e`; `workload`, `workloads`, `wl`; `placement`, `placements`, `pl`; `registry`,
 * `registries`, `reg`; `dataobject`, `dataobjects`, `do`; `gitrepo`, `gitrepos`, `gr`; `clustertemplate`,
 * `clustertemplates`, `ct`; `cluster`, `clusters`, `cl`), and
 * `KIND/NAME` (`placement/eu`) as kubectl accepts it. `get` and `describe` take packages
 * (`package`, `packages`, `pkg`) too, which are published to the catalog rather than applied.
 */
import { InvalidArgumentError } from 'commander';
import type { Kind } from '../core/resources.js';

export interface KindInfo {
  kind: Kind;
  /** Singular lower case: `placement`; used in messages and output (`placement/eu created`). */
  singular: string;
  /** The URL segment: `placements`. */
  path: string;
}

export const KIND_INFO: Record<Kind, KindInfo> = {
  Edge: { kind: 'Edge', singular: 'edge', path: 'edges' },
  Workload: { kind: 'Workload', singular: 'workload', path: 'workloads' },
  Placement: { kind: 'Placement', singular: 'placement', path: 'placements' },
  AgentUpgrade: { kind: 'AgentUpgrade', singular: 'agentupgrade', path: 'agentupgrades' },
  Registry: { kind: 'Registry', singular: 'registry', path: 'registries' },
  DataObject: { kind: 'DataObject', singular: 'dataobject', path: 'dataobjects' },
  GitRepo: { kind: 'GitRepo', singular: 'gitrepo', path: 'gitrepos' },
  ClusterTemplate: { kind: 'ClusterTemplate', singular: 'clustertemplate', path: 'clustertemplates' },
  Cluster: { kind: 'Cluster', singular: 'cluster', path: 'clusters' },
};

const ALIASES: Record<string, Kind> = {
  edge: 'Edge',
  edges: 'Edge',
  e: 'Edge',
  workload: 'Workload',
  workloads: 'Workload',
  wl: 'Workload',
  placement: 'Placement',
  placements: 'Placement',
  pl: 'Placement',
  agentupgrade: 'AgentUpgrade',
  agentupgrades: 'AgentUpgrade',
  au: 'AgentUpgrade',
  registry: 'Registry',
  registries: 'Registry',
  reg: 'Registry',
  dataobject: 'DataObject',
  dataobjects: 'DataObject',
  do: 'DataObject',
  gitrepo: 'GitRepo',
  gitrepos: 'GitRepo',
  gr: 'GitRepo',
  clustertemplate: 'ClusterTemplate',
  clustertemplates: 'ClusterTemplate',
  ct: 'ClusterTemplate',
  cluster: 'Cluster',
  clusters: 'Cluster',
  cl: 'Cluster',
};

export const KIND_HELP =
  'edge|edges|e, workload|workloads|wl, placement|placements|pl, registry|registries|reg, agentupgrade|agentupgrades|au, dataobject|dataobjects|do, gitrepo|gitrepos|gr, clustertemplate|clustertemplates|ct, cluster|clusters|cl';

/** Packages are no object kind (they are published, not applied), but `get` and `describe` name them as one. */
export interface PackageKindInfo {
  kind: 'Package';
  singular: 'package';
  path: 'packages';
}
export const PACKAGE_KIND: PackageKindInfo = { kind: 'Package', singular: 'package', path: 'packages' };
const PACKAGE_ALIASES = new Set(['package', 'packages', 'pkg']);

/** Resolves a kind as typed; throws commander's InvalidArgumentError (exit code 2) for anything else. */
export function parseKind(s: string): KindInfo {
  const k = ALIASES[s.trim().toLowerCase()];
  if (!k) throw new InvalidArgumentError(`unknown kind "${s}": use one of ${KIND_HELP}`);
  return KIND_INFO[k];
}

/** `placement/eu` -> kind and name; `placement` -> kind only. */
export function parseKindArg(s: string): { info: KindInfo; name?: string } {
  const slash = s.indexOf('/');
  if (slash < 0) return { info: parseKind(s) };
  const name = s.slice(slash + 1);
  if (name === '') throw new InvalidArgumentError(`"${s}" has no name after "/": write KIND/NAME, e.g. placement/eu`);
  return { info: parseKind(s.slice(0, slash)), name };
}

/** `parseKindArg` for `get` and `describe`, which take packages too: `package/web`, `pkg`. */
export function parseKindOrPackageArg(s: string): { info: KindInfo | PackageKindInfo; name?: string } {
  const slash = s.indexOf('/');
  if (PACKAGE_ALIASES.has((slash < 0 ? s : s.slice(0, slash)).trim().toLowerCase())) {
    const name = slash < 0 ? undefined : s.slice(slash + 1);
    if (name === '') throw new InvalidArgumentError(`"${s}" has no name after "/": write KIND/NAME, e.g. package/web`);
    return { info: PACKAGE_KIND, ...(name === undefined ? {} : { name }) };
  }
  return parseKindArg(s);
}

/** The kind a command only accepts one of (`rollout pause placement NAME`), with its aliases. */
export function expectKind(expected: Kind): (s: string) => KindInfo {
  return (s: string) => {
    const info = parseKind(s);
    if (info.kind !== expected)
      throw new InvalidArgumentError(`this command works on ${KIND_INFO[expected].singular}s, not ${info.singular}s`);
    return info;
  };
}
