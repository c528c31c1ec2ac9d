/**
 * @module Which serving edge an interconnect connection goes to (docs/interconnect.md): the one
 * rule, a pure function of what the hub knows at open. Edges that are online and whose workload is
 * Ready come first, those in the consuming edge's `region` label before the others; online edges
 * whose workload is not (yet) Ready only when no Ready one is left. Within a tier the connections
 * go round robin. The relay tries them in this order until one connects (failover at open).
 */

/** One edge that runs the export's workload, as the relay sees it at open. */
export interface ServingCandidate {
  edge: string;
  online: boolean;
  /** The workload's reported phase there (Ready, Progressing, ...). */
  phase?: string;
  /** The edge's `region` label. */
  region?: string;
}

/** The label whose value is a site's locality. */
export const REGION_LABEL = 'region';

/** A Ready workload on an online edge may take connections first. */
export const isHealthy = (c: Pick<ServingCandidate, 'online' | 'phase'>): boolean => c.online && c.phase === 'Ready';

/**
 * The serving edges to try, best first: healthy in the consumer's region, healthy elsewhere, then
 * online but not Ready. Offline edges are left out. `turn` rotates each tier (round robin).
 */
export function servingOrder(
  candidates: readonly ServingCandidate[],
  region: string | undefined,
  turn: number,
): string[] {
  const tiers: ServingCandidate[][] = [[], [], []];
  for (const c of candidates) {
    if (!c.online) continue;
    if (!isHealthy(c)) tiers[2]!.push(c);
    else if (region !== undefined && c.region === region) tiers[0]!.push(c);
    else tiers[1]!.push(c);
  }
  return tiers.flatMap((t) => {
    if (!t.length) return [];
    const k = turn % t.length;
    return [...t.slice(k), ...t.slice(0, k)].map((c) => c.edge);
  });
}
