/**
 * @module A 10,000-edge fleet written straight into an in-process hub's SQLite file, the way the
 * hub itself stores one, without 10,000 agents (which one machine cannot run):
 *
 * - Edge objects through `hub.objects.apply` and their runtime facts through `hub.state.edges`
 *   (approved, or not for the ones waiting for approval) with an `Enrolled` event: what `POST /enroll` writes per edge,
 *   minus the credential, which no page shows. The scheduler then creates the mailbox (spec and
 *   report documents) and the assignments of every edge the placement selects, as it does for
 *   enrolled edges. Only the 2,000 edges that get the workload have mailbox documents: see below.
 * - Connection facts as heartbeats and connects leave them: `connected_since`/`last_seen` on
 *   `edge_runtime` and one row in `connections` per edge that ever connected (open for the online
 *   ones, closed for the offline ones). Heartbeats only ever touch `last_seen`, and `touch()` does
 *   the same here so the online edges stay online however long the test runs.
 * - Workload statuses through `hub.state.status`, the hub's projection of the edges' report
 *   documents (hub/controllers/status.ts). The report documents themselves stay empty: the
 *   API reads statuses from the projection only (local overrides, which it reads from the
 *   documents, are empty on all of these edges).
 *
 * Every expected count is computed from the generated data here, not read back from the hub.
 */
import type { Hub } from '../../hub/hub.js';
import { API_VERSION, type Edge } from '../../core/resources.js';

export const REGIONS = ['eu', 'us', 'ap'] as const;

export interface SeededEdge {
  name: string;
  labels: Record<string, string>;
  phase: 'Online' | 'Offline' | 'Pending';
  /** What a canary edge reports for the workload. */
  reports?: 'Ready' | 'Progressing' | 'Failed';
}

export interface Fleet {
  edges: SeededEdge[];
  counts: { total: number; Online: number; Offline: number; Pending: number };
  /** Edges the placement selects (ring=canary): all approved. */
  canary: SeededEdge[];
  /** What an online edge's heartbeat does: last_seen = now, for every connected edge. */
  touch(): void;
}

const name = (i: number) => `edge-${String(i).padStart(5, '0')}`;

/**
 * Edge i: region by i % 3, tier large when i % 4 === 0, waiting for approval when i % 10 === 9,
 * otherwise online or offline in runs of 7 (one run in three offline), so phases, regions and
 * tiers all mix; every 5th (i % 5 === 0, never a pending one) is in ring=canary, and of those one
 * in 200 reports Failed and one in 50 Progressing.
 */
export function fleetPlan(n: number): SeededEdge[] {
  const out: SeededEdge[] = [];
  for (let i = 0; i < n; i++) {
    const labels: Record<string, string> = { region: REGIONS[i % 3], tier: i % 4 === 0 ? 'large' : 'small' };
    const phase = i % 10 === 9 ? 'Pending' : Math.floor(i / 7) % 3 === 2 ? 'Offline' : 'Online';
    const e: SeededEdge = { name: name(i), labels, phase };
    if (i % 5 === 0) {
      labels.ring = 'canary';
      const k = i / 5;
      e.reports = k % 200 === 7 ? 'Failed' : k % 50 === 3 ? 'Progressing' : 'Ready';
    }
    out.push(e);
  }
  return out;
}
export const WORKLOAD = 'shop-app';
export const PLACEMENT = 'shop-canary';

/** Seeds `n` edges, a workload and a placement onto ring=canary, and statuses for what it assigned. */
export async function seedFleet(hub: Hub, n: number): Promise<Fleet> {
  const edges = fleetPlan(n);
  const now = Date.now();
  const HOUR = 3_600_000;

  hub.objects.apply({
    apiVersion: API_VERSION,
    kind: 'Workload',
    metadata: { name: WORKLOAD, project: 'default', labels: {}, annotations: {} },
    spec: {
      manifests: [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: WORKLOAD },
          spec: { containers: [{ name: 'main', image: 'busybox', command: ['/bin/busybox', 'httpd', '-f'] }] },
        },
      ],
    },
  } as never);
  hub.objects.apply({
    apiVersion: API_VERSION,
    kind: 'Placement',
    metadata: { name: PLACEMENT, project: 'default', labels: {}, annotations: {} },
    // A failure threshold above the seeded failures, so the rollout completes instead of pausing.
    spec: {
      edgeSelector: { matchLabels: { ring: 'canary' } },
      workloads: [WORKLOAD],
      rollout: { maxUnavailable: '100%', failureThreshold: 100, paused: false },
    },
  } as never);

  // The Edge objects first, in one transaction, and the scheduler's pass over them before their
  // runtime rows exist: it then skips the spec documents of all 10,000 (3 ms of Automerge each,
  // 30 s in all here), and the placement below creates the mailboxes of the 2,000 edges it puts
  // its workload on, as it would. The other 8,000 carry no workload and have no mailbox documents
  // in this seed; the edge list reads those documents only for local overrides.
  hub.state.transaction(() => {
    for (const e of edges)
      hub.objects.apply(
        {
          apiVersion: API_VERSION,
          kind: 'Edge',
          metadata: { name: e.name, project: 'default', labels: e.labels, annotations: {} },
          spec: { unschedulable: false },
        } as Edge,
        { update: false, actor: 'enrollment' },
      );
  });
  await hub.scheduler.idle();

  // Through the hub's edges state (hub/state/edges.ts), as enrollment, connects, disconnects and
  // heartbeats write it.
  const { edges: runtime, events, status } = hub.state;
  // Their connections on the hub itself, as its own would be.
  const replica = hub.replicaId;
  hub.state.transaction(() => {
    edges.forEach((e, i) => {
      const enrolled = now - 48 * HOUR + i;
      const remoteAddress = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      const agentVersion = '0.1.0';
      runtime.enroll({ name: e.name, project: 'default', approved: e.phase !== 'Pending', at: enrolled });
      runtime.storeInventory(e.name, {
        driver: 'process',
        os: 'linux',
        arch: i % 2 ? 'arm64' : 'amd64',
        cpus: 4,
        memoryBytes: 8 * 1024 ** 3,
        runtimes: ['process'],
        agentVersion,
        hostname: e.name,
      });
      if (e.phase === 'Pending') {
        // Connected, waiting for an operator to approve it.
        runtime.connected(e.name, { at: now - HOUR, agentVersion, remoteAddress, replica, connection: `c-${e.name}` });
        runtime.touch([[e.name, now]]);
      } else if (e.phase === 'Online') {
        // Connected at a spread of times over the last 6 hours, so the chart has a slope.
        runtime.connected(e.name, {
          at: now - ((i * 7919) % (6 * HOUR)),
          agentVersion,
          remoteAddress,
          replica,
          connection: `c-${e.name}`,
        });
        runtime.touch([[e.name, now]]);
      } else {
        const gone = now - HOUR - ((i * 7919) % (5 * HOUR));
        runtime.connected(e.name, {
          at: gone - 12 * HOUR,
          agentVersion,
          remoteAddress,
          replica,
          connection: `c-${e.name}`,
        });
        runtime.disconnected(e.name, gone, 'connection lost (1006)', `c-${e.name}`);
        runtime.touch([[e.name, gone]]);
      }
      events.record({
        at: enrolled,
        project: 'default',
        kind: 'Edge',
        name: e.name,
        reason: 'Enrolled',
        message: `edge ${e.name} enrolled`,
      });
    });
  });
  hub.scheduler.markPlacement('default', PLACEMENT);
  await hub.scheduler.idle();

  // What the canary edges report on the generation the scheduler wrote (the projection of their
  // report documents): most Ready, a few Failed or still Progressing, so the broken list has rows.
  const byName = new Map(edges.map((e) => [e.name, e]));
  hub.state.transaction(() => {
    for (const a of status.byPlacement('default', PLACEMENT)) {
      const phase = byName.get(a.edge)?.reports ?? 'Ready';
      const message =
        phase === 'Failed' ? 'container main exited with code 1' : phase === 'Progressing' ? 'starting' : undefined;
      status.project(a.edge, [
        {
          workload: a.workload,
          observedGeneration: a.generation,
          phase,
          ...(phase === 'Failed' ? { message } : {}),
          since: now - HOUR,
          restarts: phase === 'Failed' ? 4 : 0,
          objects: { [`Pod/${WORKLOAD}`]: { ready: phase === 'Ready', ...(message ? { message } : {}) } },
        },
      ]);
    }
  });
  // A report re-plans the rollouts of the placements on that edge (Scheduler.markStatus).
  hub.scheduler.markPlacement('default', PLACEMENT);
  await hub.scheduler.idle();

  const connected = edges.filter((e) => e.phase !== 'Offline').map((e) => e.name);
  const touch = () => {
    const at = Date.now();
    hub.state.transaction(() => runtime.touch(connected.map((n) => [n, at] as const)));
  };
  touch();
  const counts = { total: edges.length, Online: 0, Offline: 0, Pending: 0 };
  for (const e of edges) counts[e.phase]++;
  return { edges, counts, canary: edges.filter((e) => e.labels.ring === 'canary'), touch };
}
