/**
 * @module `EdgeReads`, what the scheduler reads about edges, and `SqlEdgeReads`, those reads on
 * either database: none of them from the scheduler's own tables (hub/state/assignments.ts), so
 * this module only reads.
 */
import { edgeReads, sqlEdgeState, type EdgeState } from './edges.js';
import { all, one, type Read, type SqlDb } from './sql.js';

/**
 * What the scheduler reads about edges from tables it does not own: enrollment from the edges
 * state module, and the Edge object's labels as stored (their JSON is what a spec digest covers;
 * hub/objects.ts owns the objects table and writes it).
 */
export interface EdgeReads {
  /** The edge is enrolled (it has a runtime row). */
  exists(edge: string): boolean;
  /** Enrolled edges. */
  names(): string[];
  project(edge: string): string | undefined;
  /** The Edge object's labels as stored (JSON): what a spec document carries and its digest covers. */
  labels(edge: string): string | undefined;
  /** Which of `edges` are enrolled, with their labels as stored (undefined without an Edge object), in one read. */
  enrolled(edges: readonly string[]): Map<string, string | undefined>;
  allLabels(): Map<string, string>;
  /** What `enrolled([edge])` reads, given ahead on PostgreSQL for a turn's handshakes (hub/state/index.ts `prefetchHandshakes`). */
  handshakeReads(edge: string): Read[];
}

export class SqlEdgeReads implements EdgeReads {
  private readonly edges: EdgeState;

  constructor(private readonly db: SqlDb) {
    this.edges = sqlEdgeState(db);
  }

  exists(edge: string): boolean {
    return this.edges.exists(edge);
  }

  names(): string[] {
    return this.edges.names();
  }

  project(edge: string): string | undefined {
    return this.edges.projectOf(edge);
  }

  labels(edge: string): string | undefined {
    return one<{ labels: string }>(this.db, "SELECT labels FROM objects WHERE kind = 'Edge' AND name = ?", edge)
      ?.labels;
  }

  handshakeReads(edge: string): Read[] {
    return [edgeReads.enrolledLabels(this.db, [edge])];
  }

  enrolled(edges: readonly string[]): Map<string, string | undefined> {
    return this.edges.enrolledLabels(edges);
  }

  allLabels(): Map<string, string> {
    const rows = all<{
      name: string;
      labels: string;
    }>(this.db, "SELECT name, labels FROM objects WHERE kind = 'Edge'");
    return new Map(rows.map((r) => [r.name, r.labels]));
  }
}
