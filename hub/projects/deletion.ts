/**
 * @module A project's deletion (docs/projects.md, "Deleting a project"): a recorded state (the
 * Project's `deletion`, hub/state/projects.ts) that the hub works through in passes, at start too,
 * so a hub killed midway finishes it when it runs again. Each pass does what the last one left, in
 * order, and says what is left (the Project's status shows it):
 *
 * 1. its placements are deleted (the scheduler withdraws their workloads from the edges), and the
 *    pass waits until every edge of the project confirms: no assignment left, and its report
 *    names none of the project's workloads;
 * 2. its Clusters are deleted, and the pass waits until they are gone (their nodes tear down on
 *    the edges: hub/clusters/deletion.ts);
 * 3. its GitRepos, AgentUpgrades, DataObjects, ServiceImports and ServiceExports, workloads,
 *    registries and ClusterTemplates are deleted, its packages forgotten, its blobs removed, its
 *    API and join tokens revoked;
 * 4. its edges are moved to the project named in the request, or decommissioned;
 * 5. the Project goes.
 *
 * Every step names the project in its reads and writes: another project's rows are never touched.
 */
import { createLogger } from '../../core/logger.js';
import type { Edge, Kind, Workload } from '../../core/resources.js';
import type { HubAuth } from '../auth/contract.js';
import type { HubBlobs } from '../blobs/index.js';
import type { EdgeLifecycle } from '../edges/lifecycle.js';
import type { ObjectStore } from '../objects.js';
import type { HubState } from '../state/index.js';
import type { Projects } from './store.js';

const log = createLogger('hub:projects');

/** How often a pass runs while a project is being deleted (the edges' confirmations come with their reports). */
const PASS_INTERVAL_MS = 1_000;

/** Kinds deleted once the edges confirmed, in this order: a GitRepo first, so it applies nothing again. */
const AFTER_EDGES: Kind[] = [
  'GitRepo',
  'AgentUpgrade',
  'DataObject',
  'ServiceImport',
  'ServiceExport',
  'Workload',
  'Registry',
  'ClusterTemplate',
];

export interface DeletionDeps {
  state: HubState;
  objects: ObjectStore;
  projects: Projects;
  blobs: HubBlobs;
  edges: EdgeLifecycle;
  auth: HubAuth;
  markEdge(name: string): void;
  /** With replicas, only the leader runs passes. */
  leading(): boolean;
}

export class ProjectDeletions {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** What each project being deleted has left, as the last pass found it. */
  private readonly left = new Map<string, string>();

  constructor(private readonly deps: DeletionDeps) {}

  /** Resumes the deletions a previous run of the hub recorded. */
  start(): void {
    this.kick();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** What the last pass left of `project`'s deletion, in words ("2 edges still hold workloads"). */
  remaining(project: string): string | undefined {
    return this.left.get(project);
  }

  /** Runs a pass soon, and again every PASS_INTERVAL_MS while any project is being deleted. */
  kick(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.passes(), 0);
    this.timer.unref();
  }

  /** One pass over every project being deleted. */
  async passes(): Promise<void> {
    if (this.running) return;
    this.running = true;
    let more = false;
    try {
      if (!this.deps.leading()) more = this.deps.state.projects.terminating().length > 0;
      else
        for (const project of this.deps.state.projects.terminating()) {
          try {
            const left = await this.pass(project);
            if (left === undefined) this.left.delete(project);
            else {
              this.left.set(project, left);
              more = true;
            }
          } catch (err) {
            more = true;
            this.left.set(project, `a step failed, retried: ${(err as Error).message}`);
            log.warn({ err, project }, 'a step of a project deletion failed; the next pass retries it');
          }
        }
    } catch (err) {
      // The projects being deleted could not be read (the database away): the next pass reads
      // them again. Never a rejection: a timer starts the passes, and nothing would catch it.
      more = true;
      log.warn({ err }, 'could not read the projects being deleted; the next pass reads them again');
    } finally {
      this.running = false;
    }
    if (more && this.timer !== undefined) {
      this.timer = setTimeout(() => void this.passes(), PASS_INTERVAL_MS);
      this.timer.unref();
    }
  }

  /** Does what is left of `project`'s deletion; answers what still is (undefined: done, the Project is gone). */
  async pass(project: string): Promise<string | undefined> {
    const { state, objects, blobs, auth } = this.deps;
    const row = state.projects.get(project);
    if (!row?.deletion) return undefined;
    const by = `the deletion of project ${project}`;

    // 1. Placements withdrawn, and the edges confirming.
    for (const p of objects.list('Placement', project)) objects.delete('Placement', project, p.metadata.name, by);
    const workloads = objects.list<Workload>('Workload', project).map((w) => w.metadata.name);
    const edges = objects.list<Edge>('Edge', project).map((e) => e.metadata.name);
    const holding = edges.filter(
      (e) =>
        state.assignments.forEdge(e).some((a) => a.project === project) ||
        workloads.some((w) => state.status.reported(e, w) !== undefined),
    );
    if (holding.length) return `${holding.length} edge${holding.length === 1 ? '' : 's'} still hold workloads`;

    // 2. Its clusters: a delete makes each Deleting (a second is idempotent), and it goes once its
    // nodes tore down on the edges, which must be here to do it (as for the workloads above).
    for (const c of objects.list('Cluster', project)) objects.delete('Cluster', project, c.metadata.name, by);
    const clusters = objects.count('Cluster', project);
    if (clusters) return `${clusters} cluster${clusters === 1 ? '' : 's'} still being deleted (their nodes tear down)`;

    // 3. Everything else of it.
    for (const kind of AFTER_EDGES)
      for (const o of objects.list(kind, project)) objects.delete(kind, project, o.metadata.name, by);
    state.catalog.forgetProject(project);
    state.clusters.forgetProject(project);
    await blobs.removeProject(project);
    const tokens = auth.listTokens();
    for (const t of tokens.api) if (t.project === project && t.revokedAt === null) auth.revokeToken('api', t.id);
    for (const t of tokens.join) if (t.project === project && t.revokedAt === null) auth.revokeToken('join', t.id);

    // 4. The edges: moved, or decommissioned.
    const to = row.deletion.moveEdgesTo;
    for (const e of edges) {
      if (to) this.move(project, e, to);
      else this.deps.edges.decommission(project, e, by);
    }
    const still = objects.count('Edge', project);
    if (still) return `${still} edge${still === 1 ? '' : 's'} still to ${to ? `move to ${to}` : 'decommission'}`;

    // 5. The Project.
    state.transaction(() => {
      state.projects.remove(project);
      state.events.record({
        project,
        kind: 'Project',
        name: project,
        reason: 'Deleted',
        message: `project ${project} deleted${to ? `, its edges moved to ${to}` : ''} (asked by ${row.deletion!.by})`,
      });
    });
    log.info({ project, moveEdgesTo: to }, 'project deleted');
    return undefined;
  }

  /** An edge into another project, with its labels; the target's quotas hold (an edge over them waits). */
  private move(from: string, name: string, to: string): void {
    const { state, objects } = this.deps;
    const e = objects.get<Edge>('Edge', from, name);
    if (!e) return;
    state.transaction(() => {
      objects.forget('Edge', from, name);
      objects.apply(
        { ...e, metadata: { ...e.metadata, project: to, resourceVersion: undefined, uid: undefined } },
        { update: false, actor: `the deletion of project ${from}` },
      );
      state.edges.moveProject(name, to);
      state.events.record({
        project: to,
        kind: 'Edge',
        name,
        reason: 'Moved',
        message: `edge ${name} moved here from project ${from}, which is being deleted`,
      });
    });
    this.deps.markEdge(name);
  }
}
