/**
 * @module A 10,000-edge fleet written straight into an in-process hub's SQLite file, the way the
 * hub itself stores one, without 10,000 agents (which one machine cannot run):
 *
 * - Edge objects through `hub.objects.apply` and their `edge_runtime` rows (approved, or not for
 *   the ones waiting for approval) with an `Enrolled` event: what `POST /enroll` writes per edge,
 *   minus the credential, which no page shows. The scheduler then creates the mailbox (spec and
 *   report documents) and the assignments of every edge the placement selects, as it does for
 *   enrolled edges. Only the 2,000 edges that get the workload have mailbox documents: see below.
 * - Connection facts as heartbeats and connects leave them: `connected_since`/`last_seen` on
 *   `edge_runtime` and one row in `connections` per edge that ever connected (open for the online
 *   ones, closed for the offline ones). Heartbeats only ever touch `last_seen`, and `touch()` does
 *   the same here so the online edges stay online however long the test runs.
 * - Workload statuses as `workload_status` rows, which is the hub's projection of the edges'
 *   report documents (hub/controllers/status.ts). The report documents themselves stay empty: the
 *   API reads statuses from the projection only (local overrides, which it reads from the
 *   documents, are empty on all of these edges).
 *
 * Every expected count is computed from the generated data here, not read back from the hub.
 */
import type { Hub } from '../../hub/hub.js';
import { inTransaction } from '../../sync/sqlite.js';
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
  const db = hub.store.db;
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
  inTransaction(db, () => {
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

  const insertRuntime = db.prepare(
    'INSERT INTO edge_runtime (name, project, approved, enrolled_at, last_seen, connected_since, disconnected_at, agent_version, remote_address, inventory) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const insertConnection = db.prepare(
    'INSERT INTO connections (edge, connected_at, disconnected_at, reason, remote_address) VALUES (?, ?, ?, ?, ?)',
  );
  const insertEvent = db.prepare(
    'INSERT INTO events (at, project, kind, name, reason, message) VALUES (?, ?, ?, ?, ?, ?)',
  );
  inTransaction(db, () => {
    edges.forEach((e, i) => {
      const enrolled = now - 48 * HOUR + i;
      const addr = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      const inventory = JSON.stringify({
        driver: 'process',
        os: 'linux',
        arch: i % 2 ? 'arm64' : 'amd64',
        cpus: 4,
        memoryBytes: 8 * 1024 ** 3,
        runtimes: ['process'],
        agentVersion: '0.1.0',
        hostname: e.name,
      });
      if (e.phase === 'Pending') {
        // Connected, waiting for an operator to approve it.
        insertRuntime.run(e.name, 'default', 0, enrolled, now, now - HOUR, null, '0.1.0', addr, inventory);
      } else if (e.phase === 'Online') {
        // Connected at a spread of times over the last 6 hours, so the chart has a slope.
        const since = now - ((i * 7919) % (6 * HOUR));
        insertRuntime.run(e.name, 'default', 1, enrolled, now, since, null, '0.1.0', addr, inventory);
        insertConnection.run(e.name, since, null, null, addr);
      } else {
        const gone = now - HOUR - ((i * 7919) % (5 * HOUR));
        insertRuntime.run(e.name, 'default', 1, enrolled, gone, null, gone, '0.1.0', addr, inventory);
        insertConnection.run(e.name, gone - 12 * HOUR, gone, '1006 connection lost', addr);
      }
      insertEvent.run(enrolled, 'default', 'Edge', e.name, 'Enrolled', `edge ${e.name} enrolled`);
    });
  });
  hub.scheduler.markPlacement('default', PLACEMENT);
  await hub.scheduler.idle();

  // What the canary edges report on the generation the scheduler wrote (the projection of their
  // report documents): most Ready, a few Failed or still Progressing, so the broken list has rows.
  const byName = new Map(edges.map((e) => [e.name, e]));
  const assigned = db
    .prepare('SELECT edge, workload, generation FROM assignments WHERE project = ? AND placement = ?')
    .all('default', PLACEMENT) as { edge: string; workload: string; generation: number }[];
  const insertStatus = db.prepare(
    'INSERT INTO workload_status (edge, workload, observed_generation, phase, message, since, restarts, objects) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  inTransaction(db, () => {
    for (const a of assigned) {
      const phase = byName.get(a.edge)?.reports ?? 'Ready';
      const message =
        phase === 'Failed' ? 'container main exited with code 1' : phase === 'Progressing' ? 'starting' : undefined;
      const objects = JSON.stringify({
        [`Pod/${WORKLOAD}`]: { ready: phase === 'Ready', ...(message ? { message } : {}) },
      });
      insertStatus.run(
        a.edge,
        a.workload,
        a.generation,
        phase,
        phase === 'Failed' ? message : null,
        now - HOUR,
        phase === 'Failed' ? 4 : 0,
        objects,
      );
    }
  });
  // A report re-plans the rollouts of the placements on that edge (Scheduler.markStatus).
  hub.scheduler.markPlacement('default', PLACEMENT);
  await hub.scheduler.idle();

  const touchStmt = db.prepare('UPDATE edge_runtime SET last_seen = ? WHERE connected_since IS NOT NULL');
  const touch = () => void touchStmt.run(Date.now());
  touch();
  const counts = { total: edges.length, Online: 0, Offline: 0, Pending: 0 };
  for (const e of edges) counts[e.phase]++;
  return { edges, counts, canary: edges.filter((e) => e.labels.ring === 'canary'), touch };
}
