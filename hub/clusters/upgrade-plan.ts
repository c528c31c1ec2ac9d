/**
 * @module Which template version each node of a cluster is ordered to run during an upgrade
 * (docs/clusters.md, "Upgrade"), from what the nodes reported: the control plane first; the
 * workers once it runs the new version and is Ready, at most `maxUnavailable` of them at a time (a
 * worker counts from its order naming the new version until it runs it Ready), in the order of
 * their edges' names; once `failureThreshold` workers rolled back, the upgrade pauses: no further
 * worker is given the new version until the Cluster names another one. The agent-upgrade rules
 * (docs/operations.md), for nodes. Pure: every hub replica computes the same.
 */

export interface NodeProgress {
  edge: string;
  role: 'control-plane' | 'worker';
  /** The version its order names now (`NAME@VERSION`), as the node reported it. */
  ordered?: string;
  /** The version its components last ran healthy. */
  runs?: string;
  phase?: string;
  ready?: boolean;
}

export interface UpgradeRules {
  maxUnavailable: number;
  failureThreshold: number;
}

export interface UpgradePlan {
  /** Per node, the version to order (`NAME@VERSION`). */
  versions: Map<string, string>;
  /** Why the workers' upgrade is paused, when it is. */
  paused?: string;
}

const done = (n: NodeProgress, want: string) => n.runs === want && n.ready === true && n.phase === 'Ready';

export function upgradePlan(want: string, nodes: NodeProgress[], rules: UpgradeRules): UpgradePlan {
  const versions = new Map<string, string>();
  const cp = nodes.find((n) => n.role === 'control-plane');
  if (cp) versions.set(cp.edge, want);
  const workers = nodes.filter((n) => n.role === 'worker').sort((a, b) => (a.edge < b.edge ? -1 : 1));
  // A worker that runs nothing yet joins at the control plane's version (a kubelet newer than its
  // API server is outside Kubernetes' version skew policy).
  const base = cp?.runs ?? want;
  const current = (w: NodeProgress) => w.runs ?? base;
  if (!cp || !done(cp, want)) {
    for (const w of workers) versions.set(w.edge, current(w));
    return { versions };
  }
  const failed = workers.filter((w) => w.ordered === want && w.phase === 'RolledBack');
  const inFlight = workers.filter((w) => w.ordered === want && !done(w, want) && w.phase !== 'RolledBack');
  const paused =
    failed.length >= rules.failureThreshold
      ? `the upgrade to ${want} is paused: ${failed.length} worker(s) rolled back (${failed
          .map((w) => w.edge)
          .slice(0, 5)
          .join(', ')}; failureThreshold ${rules.failureThreshold}): name another template version`
      : undefined;
  let slots = paused ? 0 : rules.maxUnavailable - inFlight.length;
  for (const w of workers) {
    if (w.ordered === want || w.runs === want) versions.set(w.edge, want);
    else if (slots > 0) {
      versions.set(w.edge, want);
      slots--;
    } else versions.set(w.edge, current(w));
  }
  return { versions, ...(paused ? { paused } : {}) };
}
