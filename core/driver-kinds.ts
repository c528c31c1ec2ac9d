/**
 * @module Which Kubernetes kinds each edge driver runs, so the hub can warn at apply time about a
 * manifest an edge would refuse (the drivers' planners refuse the same kinds: test/driver-kinds
 * checks that they agree). The kubernetes driver hands everything to its cluster.
 */
/** The runtime drivers an edge can run (`outpost edge --driver`): the one list. */
export const DRIVER_NAMES = ['process', 'podman', 'kubernetes'] as const;
export type DriverName = (typeof DRIVER_NAMES)[number];

export const DRIVER_KINDS: Readonly<Record<DriverName, readonly string[] | 'all'>> = {
  process: ['Pod', 'Deployment', 'ConfigMap', 'Secret', 'Service'],
  podman: ['Pod', 'Deployment', 'ConfigMap', 'Secret', 'PersistentVolumeClaim', 'Service'],
  kubernetes: 'all',
};

/** The kinds among `kinds` that `driver` cannot run (none for an unknown driver: it may be newer than the hub). */
export function kindsNotRunBy(driver: string, kinds: readonly string[]): string[] {
  const runs = (DRIVER_KINDS as Readonly<Record<string, readonly string[] | 'all'>>)[driver];
  if (!runs || runs === 'all') return [];
  return [...new Set(kinds.filter((k) => !runs.includes(k)))];
}
