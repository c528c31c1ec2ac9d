/**
 * @module The scheduler's tables, and the only code that writes them: `assignments` (what each
 * edge's spec holds, per workload), `spec_written` (a digest of what each spec document was last
 * written with) and `rollouts` (per placement: phase, reason, the failures an operator accepted).
 *
 * Callers use the `AssignmentStore` interface (assignment-types.ts, with the types of these tables);
 * `SqlAssignmentStore` is its implementation on either database (hub/state/sql.ts `SqlDb`). What
 * the scheduler reads about edges, from tables it does not own, is scheduler-edge-reads.ts.
 *
 * Desired state: the Workload and Placement objects are the authority; an assignment is derived
 * from them (customized for its edge) and the spec document is derived from the assignments.
 * `assignments.manifests` keeps the full customized manifests, not only their content key,
 * because an assignment is what the rollout planner decided an edge may run NOW: during a rollout
 * (maxUnavailable, a failure pause, `rollout pause`) an edge holds older content than its
 * placement's current target, and after a hub restart that older content can no longer be derived
 * from the objects (only the latest revision's customization is at hand), yet a spec document may
 * have to be written again from it (a new epoch, a crash between the commit and the write).
 */
import type { Manifest } from '../../core/resources.js';
import type {
  AssignedStatus,
  Assignment,
  AssignmentKey,
  AssignmentStore,
  RolloutRecord,
  SpecAssignments,
  SpecWritten,
} from './assignment-types.js';
import {
  all,
  allOf,
  inJsonList,
  keyed,
  one,
  pgInJsonList,
  read,
  run,
  write,
  transaction,
  type Param,
  type Read,
  type SqlDb,
} from './sql.js';

// Importers of the scheduler's tables find their types and the scheduler's edge reads here too.
export type {
  AssignedStatus,
  Assignment,
  AssignmentKey,
  AssignmentStore,
  RolloutRecord,
  SpecAssignments,
  SpecWritten,
} from './assignment-types.js';
export { SqlEdgeReads, type EdgeReads } from './scheduler-edge-reads.js';

interface AssignmentRow {
  edge: string;
  workload: string;
  project: string;
  placement: string;
  revision: number;
  content_key: string;
  generation: number;
  manifests?: string;
  error: string | null;
}

function keyFromRow(r: AssignmentRow): AssignmentKey {
  return {
    edge: r.edge,
    workload: r.workload,
    project: r.project,
    placement: r.placement,
    revision: r.revision,
    contentKey: r.content_key,
    generation: r.generation,
    ...(r.error ? { error: r.error } : {}),
  };
}

const fromRow = (r: AssignmentRow): Assignment => ({
  ...keyFromRow(r),
  manifests: JSON.parse(r.manifests ?? '[]') as Manifest[],
});

const KEY_COLUMNS = 'edge, workload, project, placement, revision, content_key, generation, error';

/**
 * The one read of what the specs of `edges` are written from: the assignments, then each spec's
 * digest as a row of its own (workload null). Given ahead at an edge's handshake (hub/state/index.ts
 * `handshakeReads`).
 */
export function specInputsRead(db: SqlDb, edges: readonly string[]): Read {
  const inputs = (list: readonly string[], where: string) =>
    read(
      `SELECT * FROM (
         SELECT ${KEY_COLUMNS}, manifests, NULL AS epoch, NULL AS digest FROM assignments
         WHERE ${where}
         UNION ALL
         SELECT edge, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, epoch, digest FROM spec_written
         WHERE ${where}
       ) x ORDER BY edge, workload`,
      JSON.stringify(list),
      JSON.stringify(list),
    );
  const one = inputs(edges, inJsonList(db, 'edge'));
  // One edge's (a handshake's): read with the other handshakes' at once.
  return edges.length === 1 ? keyed(one, 'edge', edges[0]!, (all) => inputs(all, pgInJsonList('edge'))) : one;
}

export class SqlAssignmentStore implements AssignmentStore {
  constructor(private readonly db: SqlDb) {}

  private all(sql: string, ...args: Param[]): AssignmentRow[] {
    return all<AssignmentRow>(this.db, sql, ...args);
  }

  transaction<T>(fn: () => T): T {
    return transaction(this.db, fn);
  }

  handshakeReads(edge: string): Read[] {
    return [specInputsRead(this.db, [edge])];
  }

  forEdge(edge: string): Assignment[] {
    return this.all('SELECT * FROM assignments WHERE edge = ? ORDER BY workload', edge).map(fromRow);
  }

  specInputs(edges: readonly string[]): Map<string, SpecAssignments> {
    const out = new Map<string, SpecAssignments>();
    if (!edges.length) return out;
    const joined = allOf<AssignmentRow & { epoch: string | null; digest: string | null }>(
      this.db,
      specInputsRead(this.db, edges),
    );
    const rows = new Map<string, AssignmentRow[]>(edges.map((e) => [e, []]));
    const written = new Map<string, SpecWritten>();
    for (const r of joined)
      if (r.workload === null) written.set(r.edge, { epoch: r.epoch!, digest: r.digest! });
      else rows.get(r.edge)?.push(r);
    for (const [edge, mine] of rows) {
      const w = written.get(edge);
      out.set(edge, {
        keys: mine.map(keyFromRow),
        withManifests: () => mine.map(fromRow),
        ...(w ? { written: w } : {}),
      });
    }
    return out;
  }

  forPlacement(project: string, placement: string): Assignment[] {
    return this.all(
      'SELECT * FROM assignments WHERE project = ? AND placement = ? ORDER BY edge, workload',
      project,
      placement,
    ).map(fromRow);
  }

  forWorkload(project: string, workload: string): Assignment[] {
    return this.all(
      'SELECT * FROM assignments WHERE project = ? AND workload = ? ORDER BY edge',
      project,
      workload,
    ).map(fromRow);
  }

  keysForPlacement(project: string, placement: string): AssignmentKey[] {
    return this.all(
      `SELECT ${KEY_COLUMNS} FROM assignments WHERE project = ? AND placement = ? ORDER BY edge, workload`,
      project,
      placement,
    ).map(keyFromRow);
  }

  keysByEdge(): Map<string, AssignmentKey[]> {
    const out = new Map<string, AssignmentKey[]>();
    for (const r of this.all(`SELECT ${KEY_COLUMNS} FROM assignments ORDER BY edge, workload`)) {
      const list = out.get(r.edge);
      if (list) list.push(keyFromRow(r));
      else out.set(r.edge, [keyFromRow(r)]);
    }
    return out;
  }

  placementsOnEdges(edges: string[]): Map<string, { project: string; placement: string }[]> {
    const out = new Map<string, { project: string; placement: string }[]>();
    for (const r of all<{ edge: string; project: string; placement: string }>(
      this.db,
      `SELECT DISTINCT edge, project, placement FROM assignments WHERE ${inJsonList(this.db, 'edge')}`,
      JSON.stringify(edges),
    ))
      (out.get(r.edge) ?? out.set(r.edge, []).get(r.edge)!).push({ project: r.project, placement: r.placement });
    return out;
  }

  heldElsewhere(project: string, placement: string, workloads: string[]): Map<string, string> {
    const rows = all<{ edge: string; workload: string; placement: string }>(
      this.db,
      `SELECT edge, workload, placement FROM assignments WHERE project = ? AND placement <> ? AND ${inJsonList(this.db, 'workload')}`,
      project,
      placement,
      JSON.stringify(workloads),
    );
    return new Map(rows.map((r) => [`${r.edge}/${r.workload}`, r.placement]));
  }

  statusForPlacement(project: string, placement: string): Map<string, AssignedStatus> {
    // The message only of Paused rows: the rollout names why an edge is held; the rest it does not read.
    const rows = all<{
      edge: string;
      workload: string;
      observed_generation: number;
      phase: string;
      held: string | null;
    }>(
      this.db,
      `SELECT s.edge, s.workload, s.observed_generation, s.phase, CASE WHEN s.phase = 'Paused' THEN s.message END AS held
       FROM workload_status s JOIN assignments a ON a.edge = s.edge AND a.workload = s.workload WHERE a.project = ? AND a.placement = ?`,
      project,
      placement,
    );
    return new Map(
      rows.map((r) => [
        `${r.edge}/${r.workload}`,
        {
          edge: r.edge,
          workload: r.workload,
          observedGeneration: r.observed_generation,
          phase: r.phase,
          ...(r.held ? { held: r.held } : {}),
        },
      ]),
    );
  }

  observedGenerations(edges: string[]): Map<string, number> {
    const out = new Map<string, number>();
    if (!edges.length) return out;
    for (const r of all<{ edge: string; workload: string; observed_generation: number }>(
      this.db,
      `SELECT edge, workload, observed_generation FROM workload_status WHERE ${inJsonList(this.db, 'edge')}`,
      JSON.stringify(edges),
    ))
      out.set(`${r.edge}/${r.workload}`, r.observed_generation);
    return out;
  }

  put(a: Assignment): void {
    // Part of the pass's unit of work (sql.ts write): on PostgreSQL with its next statement or
    // COMMIT, one round trip for all of them; a refusal fails the pass's transaction.
    write(
      this.db,
      `INSERT INTO assignments (edge, workload, project, placement, revision, content_key, generation, manifests, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(edge, workload) DO UPDATE SET project = excluded.project, placement = excluded.placement, revision = excluded.revision, content_key = excluded.content_key, generation = excluded.generation, manifests = excluded.manifests, error = excluded.error`,
      a.edge,
      a.workload,
      a.project,
      a.placement,
      a.revision,
      a.contentKey,
      a.generation,
      JSON.stringify(a.manifests),
      a.error ?? null,
    );
  }

  remove(edge: string, workload: string, placement?: string): void {
    if (placement === undefined)
      write(this.db, 'DELETE FROM assignments WHERE edge = ? AND workload = ?', edge, workload);
    else
      write(
        this.db,
        'DELETE FROM assignments WHERE edge = ? AND workload = ? AND placement = ?',
        edge,
        workload,
        placement,
      );
  }

  removePlacement(project: string, placement: string): void {
    run(this.db, 'DELETE FROM assignments WHERE project = ? AND placement = ?', project, placement);
  }

  forgetEdge(edge: string): void {
    this.transaction(() => {
      run(this.db, 'DELETE FROM assignments WHERE edge = ?', edge);
      run(this.db, 'DELETE FROM spec_written WHERE edge = ?', edge);
    });
  }

  allSpecWritten(): Map<string, SpecWritten> {
    const rows = all<{
      edge: string;
      epoch: string;
      digest: string;
    }>(this.db, 'SELECT edge, epoch, digest FROM spec_written');
    return new Map(rows.map((r) => [r.edge, { epoch: r.epoch, digest: r.digest }]));
  }

  recordSpecWritten(edge: string, w: SpecWritten): void {
    // Read back only by the spec writer, after the next statement has carried it (sql.ts write).
    write(
      this.db,
      'INSERT INTO spec_written (edge, epoch, digest) VALUES (?, ?, ?) ON CONFLICT(edge) DO UPDATE SET epoch = excluded.epoch, digest = excluded.digest',
      edge,
      w.epoch,
      w.digest,
    );
  }

  rolloutRecord(project: string, placement: string): RolloutRecord | undefined {
    const r = one<{ phase: string; reason: string; acknowledged: string; progress: string | null }>(
      this.db,
      'SELECT phase, reason, acknowledged, progress FROM rollouts WHERE project = ? AND placement = ?',
      project,
      placement,
    );
    if (!r) return undefined;
    const acked = JSON.parse(r.acknowledged) as unknown;
    // Rows from before any resume hold '[]' (the column default): no acknowledged failures.
    const acknowledged = acked && typeof acked === 'object' && !Array.isArray(acked) ? acked : {};
    return {
      phase: r.phase,
      reason: r.reason,
      acknowledged: acknowledged as Record<string, string>,
      ...(r.progress ? { progress: r.progress } : {}),
    };
  }

  saveRollout(project: string, placement: string, phase: string, reason: string, progress?: string): void {
    run(
      this.db,
      "INSERT INTO rollouts (project, placement, phase, reason, acknowledged, updated_at, progress) VALUES (?, ?, ?, ?, '{}', ?, ?) ON CONFLICT(project, placement) DO UPDATE SET phase = excluded.phase, reason = excluded.reason, updated_at = excluded.updated_at, progress = excluded.progress",
      project,
      placement,
      phase,
      reason,
      Date.now(),
      progress ?? null,
    );
  }

  acknowledge(project: string, placement: string, failures: Record<string, string>): void {
    run(
      this.db,
      "INSERT INTO rollouts (project, placement, phase, reason, acknowledged, updated_at) VALUES (?, ?, 'Progressing', 'resumed', ?, ?) ON CONFLICT(project, placement) DO UPDATE SET acknowledged = excluded.acknowledged, updated_at = excluded.updated_at",
      project,
      placement,
      JSON.stringify(failures),
      Date.now(),
    );
  }

  removeRollout(project: string, placement: string): void {
    run(this.db, 'DELETE FROM rollouts WHERE project = ? AND placement = ?', project, placement);
  }
}

/** Read helpers for callers holding only the database (the API, the status views). */
export function assignmentsForEdge(db: SqlDb, edge: string): Assignment[] {
  return new SqlAssignmentStore(db).forEdge(edge);
}

export function assignmentsForPlacement(db: SqlDb, project: string, placement: string): Assignment[] {
  return new SqlAssignmentStore(db).forPlacement(project, placement);
}

export function assignmentsForWorkload(db: SqlDb, project: string, workload: string): Assignment[] {
  return new SqlAssignmentStore(db).forWorkload(project, workload);
}
