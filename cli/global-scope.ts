/**
 * @module `--global` of `get`, `describe` and `delete` (docs/clusters.md, "Global templates"): the
 * hub-wide scope (metadata.project "*") holds global ClusterTemplates only.
 */
import { GLOBAL_SCOPE, type Kind } from '../core/resources.js';
import { UsageError } from './errors.js';

export const GLOBAL_HELP =
  'a global ClusterTemplate (the hub-wide scope, metadata.project "*", which every project\'s clusters may use)';

/** `--global`: the session works in the hub-wide scope, for ClusterTemplates only. */
export function inGlobalScope<S extends { project: string } | undefined>(
  s: S,
  kind: Kind | string,
  global?: boolean,
): S {
  if (!global) return s;
  if (kind !== 'ClusterTemplate')
    throw new UsageError('--global goes with clustertemplates only: the other kinds live in a project');
  if (s) s.project = GLOBAL_SCOPE;
  return s;
}
