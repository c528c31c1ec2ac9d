/**
 * @module The kinds the CLI accepts and how they are spelled: singular, plural or short, in any
 * case (`edge`, `edges`, `e`; `workload`, `workloads`, `wl`; `placement`, `placements`, `pl`; `registry`,
 * `registries`, `reg`; `dataobject`, `dataobjects`, `do`; `gitrepo`, `gitrepos`, `gr`; `serviceexport`,
 * `serviceexports`, `svcx`; `serviceimport`, `serviceimports`, `svci`; `clustertemplate`, `clustertemplates`,
 * `ct`; `cluster`, `clusters`, `cl`), and
 * `KIND/NAME` (`placement/eu`) as kubectl accepts it. `get` and `describe` take packages
 * (`package`, `packages`, `pkg`) too, which are published to the catalog rather than applied.
 */
import { InvalidArgumentError } from 'commander';
import { KIND_NAMES } from '../core/kind-names.js';
import { KINDS, type Kind } from '../core/resources.js';

export interface KindInfo {
  kind: Kind;
  /** Singular lower case: `placement`; used in messages and output (`placement/eu created`). */
  singular: string;
  /** The URL segment: `placements`. */
  path: string;
}

export const KIND_INFO = Object.fromEntries(
  KINDS.map((kind) => [kind, { kind, singular: KIND_NAMES[kind].singular, path: KIND_NAMES[kind].plural }]),
) as Record<Kind, KindInfo>;

const ALIASES: Record<string, Kind> = Object.fromEntries(
  KINDS.flatMap((kind) => {
    const n = KIND_NAMES[kind];
    return [n.singular, n.plural, n.short].map((alias) => [alias, kind]);
  }),
);

export const KIND_HELP = KINDS.map((kind) => {
  const n = KIND_NAMES[kind];
  return `${n.singular}|${n.plural}|${n.short}`;
}).join(', ');

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
