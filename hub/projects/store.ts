/**
 * @module Projects as objects (docs/projects.md): a Project's spec (description, quotas, default
 * rollout, members), validated and versioned as the other kinds are, and the admission every
 * object write of a project passes (`admit`, ObjectStore's project hook): refused while the project
 * is being deleted, held to its quotas, given its default rollout. A project named by an object
 * before any Project was made for it (as every project was before Projects existed) gets one
 * without quotas at that write, so nothing changes for it.
 */
import { randomUUID } from 'node:crypto';
import type { ApplyAction } from '../../core/api/types.js';
import { OutpostError } from '../../core/errors.js';
import {
  API_VERSION,
  DEFAULT_MAX_UNAVAILABLE,
  formatIssues,
  Project,
  ProjectSpec,
  type DataObject,
  type Resource,
} from '../../core/resources.js';
import type { ObjectStore } from '../objects.js';
import type { HubState } from '../state/index.js';
import type { StoredProject } from '../state/projects.js';
import { checkDataObjectBytes, checkObjectCount, checkTunnelSessions, quotaBytes } from './quotas.js';

/** What a project holds against its quotas. */
export interface ProjectUsage {
  edges: number;
  placements: number;
  workloads: number;
  blobBytes: number;
  dataObjectBytes: number;
  tunnelSessions: number;
}

const EMPTY_SPEC: ProjectSpec = { quotas: {}, members: [] };

/** Validates a Project; errors name the field path and the fix, as validateResource's do. */
export function validateProject(input: unknown): Project {
  const r = Project.safeParse(input);
  if (!r.success) {
    const issues = formatIssues(r.error);
    throw new OutpostError('invalid', issues.map((i) => `${i.path}: ${i.message}`).join('; '), { details: issues });
  }
  return r.data;
}

export class Projects {
  constructor(
    private readonly deps: {
      state: Pick<HubState, 'projects' | 'objects' | 'blobs' | 'events' | 'transaction'>;
    },
  ) {}

  /** Tunnel sessions of a project open now on this hub process (hub/tunnel/project-sessions.ts); set by the hub. */
  openSessions: (project: string) => number = () => 0;

  /** Refuses a tunnel session over the project's tunnelSessions quota (it has `open` now). */
  checkTunnelSession(project: string, open: number): void {
    checkTunnelSessions(project, this.spec(project).quotas, open);
  }

  /** Wires `admit` into the object store. */
  attach(objects: ObjectStore): void {
    objects.setProjectAdmission((o, cur) => this.admit(o, cur));
  }

  /** The spec of `name` (a project without a Project row has no quotas). */
  spec(name: string): ProjectSpec {
    const row = this.deps.state.projects.get(name);
    return row ? (row.spec as ProjectSpec) : EMPTY_SPEC;
  }

  /** A Placement's maxUnavailable when it names none: its project's default, else 25%. */
  maxUnavailable(project: string): number | string {
    return this.spec(project).rollout?.maxUnavailable ?? DEFAULT_MAX_UNAVAILABLE;
  }

  get(name: string): Project | undefined {
    const row = this.deps.state.projects.get(name);
    return row ? this.toProject(row) : undefined;
  }

  list(): Project[] {
    return this.deps.state.projects.list().map((r) => this.toProject(r));
  }

  usage(project: string): ProjectUsage {
    const { objects, blobs } = this.deps.state;
    return {
      edges: objects.count('Edge', project),
      placements: objects.count('Placement', project),
      workloads: objects.count('Workload', project),
      blobBytes: blobs.projectBytes(project),
      dataObjectBytes: this.dataObjects(project).reduce((n, o) => n + o.spec.size, 0),
      tunnelSessions: this.openSessions(project),
    };
  }

  /** The blob quota of a project when its Project sets one (else the hub's --blob-quota applies). */
  blobQuota(project: string): number | undefined {
    return quotaBytes(this.spec(project).quotas.blobBytes);
  }

  /** Creates or changes a Project (the caller checked that it is an admin of every project). */
  apply(
    input: unknown,
    opts: { create?: boolean; update?: boolean; actor: string },
  ): { object: Project; action: ApplyAction } {
    const p = validateProject(input);
    const { name } = p.metadata;
    const { state } = this.deps;
    return state.transaction(() => {
      const cur = state.projects.get(name);
      if (!cur) {
        if (opts.create === false)
          throw new OutpostError('not_found', `project ${name} not found: create it with outpost apply -f FILE`);
        if (p.metadata.resourceVersion)
          throw new OutpostError(
            'conflict',
            `project ${name} does not exist but the request carries resourceVersion ${p.metadata.resourceVersion}: drop resourceVersion to create it`,
          );
        state.projects.insert({
          name,
          uid: randomUUID(),
          labels: p.metadata.labels,
          annotations: p.metadata.annotations,
          spec: p.spec,
          at: new Date().toISOString(),
        });
        this.event(name, 'Created', `project ${name} created by ${opts.actor}`);
        return { object: this.get(name)!, action: 'created' as const };
      }
      if (opts.update === false)
        throw new OutpostError('conflict', `project ${name} already exists: use outpost apply to change it`);
      if (cur.deletion) throw terminating(name);
      if (p.metadata.resourceVersion && p.metadata.resourceVersion !== String(cur.resourceVersion))
        throw new OutpostError(
          'conflict',
          `project ${name} was changed by someone else (resourceVersion ${p.metadata.resourceVersion} is stale, current is ${cur.resourceVersion}): get it again, reapply your change, and retry`,
        );
      const specChanged = JSON.stringify(p.spec) !== JSON.stringify(cur.spec);
      const metaChanged =
        JSON.stringify(p.metadata.labels) !== JSON.stringify(cur.labels) ||
        JSON.stringify(p.metadata.annotations) !== JSON.stringify(cur.annotations);
      if (!specChanged && !metaChanged) return { object: this.toProject(cur), action: 'unchanged' as const };
      state.projects.update({
        name,
        labels: p.metadata.labels,
        annotations: p.metadata.annotations,
        spec: p.spec,
        specChanged,
      });
      this.event(name, 'Updated', `project ${name} updated by ${opts.actor}`);
      return { object: this.get(name)!, action: 'configured' as const };
    });
  }

  /**
   * Records the deletion of a project (hub/projects/deletion.ts works through it). Refused while it
   * has edges and the request names neither a project to move them to nor their decommissioning.
   * Asked again while it runs: the deletion as it is.
   */
  requestDeletion(name: string, o: { moveEdgesTo?: string; decommissionEdges?: boolean; actor: string }): Project {
    const { state } = this.deps;
    return state.transaction(
      () => {
        const row = state.projects.get(name);
        if (!row) throw new OutpostError('not_found', `project ${name} not found`);
        if (row.deletion) return this.toProject(row);
        if (name === 'default')
          throw new OutpostError(
            'conflict',
            'project default cannot be deleted: it is where objects without a project go; delete its objects instead',
          );
        if (o.moveEdgesTo !== undefined && o.decommissionEdges)
          throw new OutpostError('bad_request', 'give --move-edges-to or --decommission-edges, not both');
        const edges = state.objects.count('Edge', name);
        if (edges > 0 && o.moveEdgesTo === undefined && !o.decommissionEdges)
          throw new OutpostError(
            'conflict',
            `project ${name} has ${edges} edge${edges === 1 ? '' : 's'}: name a project to move ${edges === 1 ? 'it' : 'them'} to with --move-edges-to OTHER (moveEdgesTo=OTHER), or decommission ${edges === 1 ? 'it' : 'them'} with --decommission-edges (decommissionEdges=true)`,
          );
        if (o.moveEdgesTo !== undefined) {
          const to = state.projects.get(o.moveEdgesTo);
          if (o.moveEdgesTo === name)
            throw new OutpostError('bad_request', `--move-edges-to must name another project than ${name}`);
          if (!to)
            throw new OutpostError(
              'not_found',
              `project ${o.moveEdgesTo} not found: create it first (outpost apply -f) or name another with --move-edges-to`,
            );
          if (to.deletion) throw terminating(o.moveEdgesTo);
        }
        state.projects.setDeletion(name, {
          by: o.actor,
          at: Date.now(),
          ...(o.moveEdgesTo !== undefined ? { moveEdgesTo: o.moveEdgesTo } : {}),
        });
        this.event(
          name,
          'Terminating',
          `project ${name} is being deleted by ${o.actor}${o.moveEdgesTo ? `; its edges move to ${o.moveEdgesTo}` : ''}`,
        );
        return this.get(name)!;
      },
      { immediate: true },
    );
  }

  /**
   * The admission of an object write into its project, in the write's transaction: refused while
   * the project is being deleted; a new Edge, Placement or Workload and a DataObject's bytes held
   * to the quotas (under the project's quota lock); a Placement without maxUnavailable or
   * skipOfflineAfter given the project's default.
   */
  admit(o: Resource, cur: Resource | undefined): Resource {
    const { state } = this.deps;
    const project = o.metadata.project;
    let row = state.projects.get(project);
    if (row?.deletion && !cur) throw terminating(project);
    if (!row) {
      state.projects.insert({
        name: project,
        uid: randomUUID(),
        labels: {},
        annotations: {},
        spec: EMPTY_SPEC,
        at: new Date().toISOString(),
      });
      row = state.projects.get(project)!;
    }
    const spec = row.spec as ProjectSpec;
    const q = spec.quotas;
    if (
      !cur &&
      (o.kind === 'Edge' || o.kind === 'Placement' || o.kind === 'Workload') &&
      q[QUOTA_OF[o.kind]] !== undefined
    ) {
      state.projects.lockQuota(project);
      checkObjectCount(project, q, o.kind, () => state.objects.count(o.kind, project));
    }
    if (o.kind === 'DataObject' && q.dataObjectBytes !== undefined) {
      state.projects.lockQuota(project);
      checkDataObjectBytes(project, q, o, this.dataObjects(project));
    }
    if (o.kind === 'Placement') {
      const r = o.spec.rollout;
      const d = spec.rollout;
      if (r.maxUnavailable === undefined || (r.skipOfflineAfter === undefined && d?.skipOfflineAfter !== undefined))
        return {
          ...o,
          spec: {
            ...o.spec,
            rollout: {
              ...r,
              maxUnavailable: r.maxUnavailable ?? d?.maxUnavailable ?? DEFAULT_MAX_UNAVAILABLE,
              ...((r.skipOfflineAfter ?? d?.skipOfflineAfter)
                ? { skipOfflineAfter: r.skipOfflineAfter ?? d?.skipOfflineAfter }
                : {}),
            },
          },
        };
    }
    return o;
  }

  private dataObjects(project: string): DataObject[] {
    return this.deps.state.objects
      .list('DataObject', project, {})
      .map((r) => ({ kind: 'DataObject', metadata: { name: r.name }, spec: r.spec }) as DataObject);
  }

  private event(project: string, reason: string, message: string): void {
    this.deps.state.events.record({ project, kind: 'Project', name: project, reason, message });
  }

  private toProject(r: StoredProject): Project {
    return {
      apiVersion: API_VERSION,
      kind: 'Project',
      metadata: {
        name: r.name,
        labels: r.labels,
        annotations: r.annotations,
        resourceVersion: String(r.resourceVersion),
        generation: r.generation,
        uid: r.uid,
        creationTimestamp: r.createdAt,
      },
      spec: { ...EMPTY_SPEC, ...(r.spec as ProjectSpec) },
      status: {
        phase: r.deletion ? 'Terminating' : 'Active',
        usage: this.usage(r.name),
        ...(r.deletion
          ? {
              deletion: {
                requestedBy: r.deletion.by,
                requestedAt: new Date(r.deletion.at).toISOString(),
                ...(r.deletion.moveEdgesTo ? { moveEdgesTo: r.deletion.moveEdgesTo } : {}),
              },
            }
          : {}),
      },
    };
  }
}

const QUOTA_OF = { Edge: 'edges', Placement: 'placements', Workload: 'workloads' } as const;

export function terminating(project: string): OutpostError {
  return new OutpostError(
    'conflict',
    `project ${project} is being deleted (phase Terminating): nothing new may be created in it; see its progress with outpost get project ${project}`,
  );
}
