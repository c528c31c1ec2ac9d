/**
 * @module `POST /apply`: validate every object and check every permission, then change them all
 * in one transaction (or, with `dryRun=true`, change nothing and say what would happen). The
 * answer names each object's action, how many edges it reaches (added, removed, changed), and
 * warnings: a manifest kind a driver cannot run, for the edges that would get it.
 */
import { Hono } from 'hono';
import type { ApplyResponse, ApplyResult, EdgeImpact, EffectiveRollout } from '../../core/api/types.js';
import { kindsNotRunBy } from '../../core/driver-kinds.js';
import { MAX_OBJECT_BYTES, rawDocuments, tooBigMessage } from '../../core/limits.js';
import { OutpostError } from '../../core/errors.js';
import { ExpansionError, parseManifests } from '../../core/manifest.js';
import {
  INVENTORY_LABEL_PREFIX,
  type DataObject,
  type Project,
  type Edge,
  type Placement,
  type Resource,
  type Workload,
} from '../../core/resources.js';
import { resolveMaxUnavailable } from '../../core/rollout.js';
import { selectEdges } from '../../core/selector.js';
import { checkPlacements } from '../controllers/placements.js';
import { checkDataPaths } from '../data/paths.js';
import { placementSelection } from '../clusters/selection.js';
import { authorizeObject } from '../clusters/global-templates.js';
import { schedulableEdges } from '../edges/phase.js';
import { validateResource, type ApplyAction } from '../objects.js';
import type { ObjectApi } from './context.js';
import { actor, authorize, principal, type Env } from '../auth/middleware.js';
import { authorizeAllProjects } from '../auth/roles.js';
import { validateProject } from '../projects/store.js';
import { jsonBody } from '../json-body.js';
import { registryForOutput } from '../images/registries.js';
import { gitRepoForOutput } from '../gitops/credentials.js';

/** What `objects.apply` would answer, without writing: created, configured or unchanged (409 on a stale version). */
function dryRunAction(deps: ObjectApi, v: Resource): ApplyAction {
  const cur = deps.objects.get(v.kind, v.metadata.project, v.metadata.name);
  if (!cur) {
    if (v.metadata.resourceVersion)
      throw new OutpostError(
        'conflict',
        `${v.kind} ${v.metadata.project}/${v.metadata.name} does not exist but the request carries resourceVersion ${v.metadata.resourceVersion}: drop resourceVersion to create it`,
      );
    return 'created';
  }
  if (v.metadata.resourceVersion && v.metadata.resourceVersion !== cur.metadata.resourceVersion)
    throw new OutpostError(
      'conflict',
      `${v.kind} ${v.metadata.project}/${v.metadata.name} was changed by someone else (resourceVersion ${v.metadata.resourceVersion} is stale, current is ${cur.metadata.resourceVersion}): get it again and retry`,
    );
  // Secret values are compared as stored (sealed, the same text for the same value).
  const spec =
    v.kind === 'Workload' && cur.kind === 'Workload'
      ? { ...v.spec, manifests: deps.secrets.sealForStorage(v.spec.manifests, cur.spec.manifests) }
      : v.spec;
  const same =
    JSON.stringify(spec) === JSON.stringify(cur.spec) &&
    JSON.stringify(v.metadata.labels) === JSON.stringify(cur.metadata.labels) &&
    JSON.stringify(v.metadata.annotations) === JSON.stringify(cur.metadata.annotations);
  return same ? 'unchanged' : 'configured';
}

/** The fleet of one project as the batch would leave it: placements, workloads and selectable edges. */
class ProjectView {
  readonly placements: Placement[];
  readonly workloads = new Map<string, Workload>();
  private edges?: ReturnType<typeof schedulableEdges>;

  constructor(
    private readonly deps: ObjectApi,
    readonly project: string,
    batch: Resource[],
  ) {
    const mine = batch.filter((b) => b.metadata.project === project);
    const batchPl = new Map(
      mine.filter((b): b is Placement => b.kind === 'Placement').map((p) => [p.metadata.name, p]),
    );
    this.placements = [
      ...deps.objects.list<Placement>('Placement', project).filter((p) => !batchPl.has(p.metadata.name)),
      ...batchPl.values(),
    ];
    for (const w of mine) if (w.kind === 'Workload') this.workloads.set(w.metadata.name, w);
  }

  workload(name: string): Workload | undefined {
    return this.workloads.get(name) ?? this.deps.objects.get<Workload>('Workload', this.project, name);
  }

  selected(p: Placement): string[] {
    this.edges ??= schedulableEdges(
      this.deps.objects.list<Edge>('Edge', this.project),
      this.deps.state.edges.liveness(this.project),
    );
    return selectEdges(this.edges, placementSelection(this.deps.state.clusters, this.project, p.spec));
  }
}

/**
 * A Placement's rollout as it will run on the edges it selects now. `given`: the object as sent,
 * before defaults, to tell a maxUnavailable the operator chose from the default.
 */
function effectiveRollout(
  deps: ObjectApi,
  v: Resource,
  given: unknown,
  edges: number | undefined,
): EffectiveRollout | undefined {
  if (v.kind !== 'Placement') return undefined;
  const r = { ...v.spec.rollout };
  r.maxUnavailable ??= deps.projects.maxUnavailable(v.metadata.project);
  const asGiven = (given as { spec?: { rollout?: { maxUnavailable?: unknown } } } | null)?.spec?.rollout;
  const total = edges ?? 0;
  return {
    maxUnavailable: r.maxUnavailable,
    defaulted: asGiven?.maxUnavailable === undefined,
    batch: total === 0 ? 0 : resolveMaxUnavailable(r.maxUnavailable, total),
    edges: total,
    failureThreshold: r.failureThreshold,
  };
}

function rolloutOf(
  deps: ObjectApi,
  v: Resource,
  given: unknown,
  edges: number | undefined,
): { rollout?: EffectiveRollout } {
  const rollout = effectiveRollout(deps, v, given, edges);
  return rollout ? { rollout } : {};
}

function impactOf(deps: ObjectApi, view: ProjectView, v: Resource, action: ApplyAction): EdgeImpact | undefined {
  const { project, name } = v.metadata;
  if (v.kind === 'Workload') {
    const before = new Set(deps.state.assignments.forWorkload(project, name).map((a) => a.edge));
    const after = new Set(
      view.placements.filter((p) => p.spec.workloads.includes(name)).flatMap((p) => view.selected(p)),
    );
    const cur = deps.objects.get<Workload>('Workload', project, name);
    // Secret values compared as stored (sealed), or every workload holding one would look changed.
    const manifestsChange =
      !cur ||
      JSON.stringify(cur.spec.manifests) !==
        JSON.stringify(deps.secrets.sealForStorage(v.spec.manifests, cur.spec.manifests));
    return {
      total: after.size,
      added: [...after].filter((e) => !before.has(e)).length,
      removed: [...before].filter((e) => !after.has(e)).length,
      changed: manifestsChange && action !== 'unchanged' ? [...after].filter((e) => before.has(e)).length : 0,
    };
  }
  if (v.kind === 'Placement') {
    const before = new Set(deps.state.assignments.forPlacement(project, name).map((a) => a.edge));
    const after = new Set(view.selected(v));
    const cur = deps.objects.get<Placement>('Placement', project, name);
    const contentChange = !!cur && JSON.stringify(cur.spec) !== JSON.stringify(v.spec);
    return {
      total: after.size,
      added: [...after].filter((e) => !before.has(e)).length,
      removed: [...before].filter((e) => !after.has(e)).length,
      // A changed workload list or customization may change what the kept edges run.
      changed:
        contentChange &&
        (JSON.stringify(cur.spec.workloads) !== JSON.stringify(v.spec.workloads) ||
          JSON.stringify(cur.spec.customization) !== JSON.stringify(v.spec.customization))
          ? [...after].filter((e) => before.has(e)).length
          : 0,
    };
  }
  return undefined;
}

const listNames = (names: string[]) =>
  names.length <= 5 ? names.join(', ') : `${names.slice(0, 5).join(', ')} and ${names.length - 5} more`;

/** Warnings about manifests that the drivers of the edges that would get them cannot run. */
function driverWarnings(deps: ObjectApi, views: Map<string, ProjectView>, batch: Resource[]): string[] {
  const out = new Set<string>();
  // Each project's edges read once (their inventory labels name the driver), not edge by edge:
  // a placement over 10,000 edges was 10,000 reads per apply.
  const fleets = new Map<string, ReturnType<typeof deps.state.edges.liveness>>();
  const driverOf = (project: string, edge: string) => {
    let live = fleets.get(project);
    if (!live) fleets.set(project, (live = deps.state.edges.liveness(project)));
    return live.get(edge)?.inventoryLabels?.[`${INVENTORY_LABEL_PREFIX}driver`];
  };
  for (const v of batch) {
    if (v.kind === 'Edge') continue;
    const view = views.get(v.metadata.project)!;
    const pairs: [Placement, string][] =
      v.kind === 'Placement'
        ? v.spec.workloads.map((w) => [v, w])
        : view.placements.filter((p) => p.spec.workloads.includes(v.metadata.name)).map((p) => [p, v.metadata.name]);
    for (const [p, wname] of pairs) {
      const w = view.workload(wname);
      if (!w) continue;
      const kinds = w.spec.manifests.map((m) => m.kind);
      const byProblem = new Map<string, string[]>();
      for (const edge of view.selected(p)) {
        const driver = driverOf(v.metadata.project, edge);
        if (!driver) continue;
        const bad = kindsNotRunBy(driver, kinds);
        if (bad.length === 0) continue;
        const key = `${driver}\u0000${bad.join(', ')}`;
        byProblem.set(key, [...(byProblem.get(key) ?? []), edge]);
      }
      for (const [key, edges] of byProblem) {
        const [driver, bad] = key.split('\u0000');
        out.add(
          `workload ${wname} (placement ${p.metadata.name}): the ${driver} driver cannot run ${bad}; edge${edges.length > 1 ? 's' : ''} ${listNames(edges)} would report it as failed: place it on edges with a driver that runs it (kubernetes runs every kind)`,
        );
      }
    }
  }
  return [...out];
}

/** Thrown to roll back a server-side dry run once its checks ran. */
class DryRunDone extends Error {}

/**
 * The rules that need a request written whole (inside its transaction): placements
 * (hub/controllers/placements.ts) and the paths of DataObjects (hub/data/paths.ts). Returns the
 * warnings, or throws the refusal with details by object index, as validation reports them (the
 * CLI names file and document).
 */
function crossObjectRules(deps: ObjectApi, valid: Resource[]): string[] {
  const { state, objects } = deps;
  const written = <T extends Resource>(kind: T['kind']): T[] =>
    valid.filter((v) => v.kind === kind).map((v) => objects.get<T>(kind, v.metadata.project, v.metadata.name)!);
  const byIndex = (kind: Resource['kind'], err: unknown, nameOf: (d: Record<string, string>) => string): never => {
    if (!(err instanceof OutpostError) || !Array.isArray(err.details)) throw err;
    const details = (err.details as Record<string, string>[]).map((d) => ({
      index: valid.findIndex(
        (v) => v.kind === kind && v.metadata.project === d.project && v.metadata.name === nameOf(d),
      ),
      path: d.path!,
      message: d.message!,
    }));
    throw new OutpostError(err.code, err.message, { details });
  };
  let warnings: string[];
  try {
    warnings = checkPlacements(state.edges, objects, written<Placement>('Placement'), state.clusters);
  } catch (err) {
    return byIndex('Placement', err, (d) => d.placement!);
  }
  try {
    checkDataPaths(state.edges, objects, written<DataObject>('DataObject'));
  } catch (err) {
    return byIndex('DataObject', err, (d) => d.name!);
  }
  return warnings;
}

/**
 * Applies object `index` of the request: an error it raises with details (a package placement's
 * catalog check, hub/catalog/render.ts) names that object's index, so the CLI names its file,
 * document and line as for the other checks.
 */
function applyAt<T>(index: number, apply: () => T): T {
  try {
    return apply();
  } catch (err) {
    if (!(err instanceof OutpostError) || !Array.isArray(err.details)) throw err;
    const details = (err.details as Record<string, unknown>[]).map((d) => ({ index, ...d }));
    throw new OutpostError(err.code, err.message, { cause: err, details });
  }
}

export function applyRoutes(deps: ObjectApi): Hono<Env> {
  const app = new Hono<Env>();
  const { objects, state } = deps;

  app.post('/apply', async (c) => {
    const defaultProject = c.req.query('project') ?? 'default';
    const dryRun = c.req.query('dryRun') === 'true' || c.req.query('dryRun') === 'All';
    const type = c.req.header('content-type') ?? '';
    let raw: unknown[];
    if (type.includes('yaml')) {
      const text = await c.req.text();
      // Sizes before parsing: a parser spends far more than the text's size on a text refused anyway.
      const big = rawDocuments(text).filter((d) => d.bytes > MAX_OBJECT_BYTES);
      if (big.length > 0) {
        const details = big.map((d) => ({
          index: d.index - 1,
          path: '',
          message: tooBigMessage(`document ${d.index} (line ${d.line}${d.label ? `, ${d.label}` : ''})`, d.bytes),
        }));
        throw new OutpostError('too_large', details.map((d) => d.message).join('; '), { details });
      }
      try {
        raw = parseManifests(text);
      } catch (err) {
        throw new OutpostError(err instanceof ExpansionError ? 'too_large' : 'bad_request', (err as Error).message);
      }
    } else {
      const body = await jsonBody<{ objects?: unknown[] }>(c);
      if (!Array.isArray(body.objects)) throw new OutpostError('bad_request', 'the body must be {"objects": [...]}');
      raw = body.objects;
    }
    // Validate every object and check every permission before changing anything.
    const errors: { index: number; path: string; message: string }[] = [];
    const valid: Resource[] = [];
    /** Each valid object as sent (before defaults), by position in `valid`. */
    const given: unknown[] = [];
    let tooLarge = false;
    /** Project documents (docs/projects.md), applied before the objects: a file may make a project and fill it. */
    const projectDocs: { index: number; project: Project }[] = [];
    raw.forEach((o, index) => {
      const obj = o as { kind?: unknown; metadata?: Record<string, unknown> } | null;
      if (obj && typeof obj === 'object' && obj.kind === 'Project') {
        try {
          projectDocs.push({ index, project: validateProject(obj) });
        } catch (err) {
          for (const d of ((err as OutpostError).details ?? []) as { path: string; message: string }[])
            errors.push({ index, path: d.path, message: d.message });
        }
        return;
      }
      const withProject =
        obj && typeof obj === 'object'
          ? { ...obj, metadata: { ...(obj.metadata ?? {}), project: obj.metadata?.project ?? defaultProject } }
          : obj;
      try {
        const v = validateResource(withProject);
        if (v.kind === 'Edge' && !objects.get('Edge', v.metadata.project, v.metadata.name))
          throw new OutpostError('invalid', `Edge ${v.metadata.name} is not enrolled: edges join with a join token`);
        valid.push(v);
        given.push(o);
      } catch (err) {
        if (err instanceof OutpostError && err.code === 'too_large') tooLarge = true;
        if (err instanceof OutpostError && Array.isArray(err.details))
          for (const d of err.details as { path: string; message: string }[])
            errors.push({ index, path: d.path, message: d.message });
        else errors.push({ index, path: '', message: (err as Error).message });
      }
    });
    if (errors.length) {
      throw new OutpostError(
        tooLarge ? 'too_large' : 'invalid',
        errors.map((e) => `object ${e.index + 1}: ${e.path ? `${e.path}: ` : ''}${e.message}`).join('; '),
        { details: errors },
      );
    }
    for (const { project } of projectDocs)
      authorizeAllProjects(
        principal(c),
        project.metadata.name,
        'create or change projects',
        "a project's quotas and members bound what its own admins may do",
      );
    for (const v of valid) authorizeObject(principal(c), 'write', v.kind, v.metadata.project);
    const applyProjects = () =>
      projectDocs.map(({ index, project }): ApplyResult => {
        const r = applyAt(index, () => deps.projects.apply(project, { actor: actor(c) }));
        return {
          kind: 'Project',
          project: project.metadata.name,
          name: project.metadata.name,
          action: r.action,
          resourceVersion: r.object.metadata.resourceVersion,
        };
      });
    const views = new Map<string, ProjectView>();
    for (const v of valid)
      if (!views.has(v.metadata.project))
        views.set(v.metadata.project, new ProjectView(deps, v.metadata.project, valid));
    const warnings = driverWarnings(deps, views, valid);
    const impacts = dryRun
      ? valid.map((v) => {
          const action = dryRunAction(deps, v);
          return { action, edges: impactOf(deps, views.get(v.metadata.project)!, v, action) };
        })
      : valid.map((v) => ({
          action: undefined,
          edges: impactOf(deps, views.get(v.metadata.project)!, v, 'configured'),
        }));
    if (dryRun) {
      // The rules across objects need the request applied: apply it in a transaction always rolled back.
      let projectResults: ApplyResult[] = [];
      try {
        state.transaction(() => {
          projectResults = applyProjects().map(({ resourceVersion: _, ...r }) => r);
          valid.forEach((v, i) => applyAt(i, () => objects.apply(v, { actor: actor(c) })));
          warnings.push(...crossObjectRules(deps, valid));
          throw new DryRunDone();
        });
      } catch (err) {
        if (!(err instanceof DryRunDone)) throw err;
      }
      const results: ApplyResult[] = [
        ...projectResults,
        ...valid.map((v, i) => ({
          kind: v.kind,
          project: v.metadata.project,
          name: v.metadata.name,
          action: impacts[i].action!,
          ...(impacts[i].edges ? { edges: impacts[i].edges } : {}),
          ...rolloutOf(deps, v, given[i], impacts[i].edges?.total),
          // As the hub would store it (defaults filled in), for `outpost diff`.
          object: {
            apiVersion: v.apiVersion,
            kind: v.kind,
            metadata: {
              name: v.metadata.name,
              project: v.metadata.project,
              labels: v.metadata.labels,
              annotations: v.metadata.annotations,
            },
            // Secret values redacted, as every answer has them: a diff never prints one.
            spec:
              v.kind === 'Workload'
                ? { ...v.spec, manifests: deps.secrets.redact(v.spec.manifests) }
                : v.kind === 'Registry'
                  ? registryForOutput(deps.secrets.box, v, false).spec
                  : v.kind === 'GitRepo'
                    ? gitRepoForOutput(deps.secrets.box, v, false).spec
                    : v.spec,
          },
        })),
      ];
      return c.json({ dryRun: true, results, warnings } satisfies ApplyResponse);
    }
    const results = state.transaction(
      () => {
        const made = applyProjects();
        const out = valid.map((v, i): ApplyResult => {
          const r = applyAt(i, () => objects.apply(v, { actor: actor(c) }));
          const edges = impacts[i].edges;
          return {
            kind: v.kind,
            project: v.metadata.project,
            name: v.metadata.name,
            action: r.action,
            resourceVersion: r.object.metadata.resourceVersion,
            ...(edges && r.action !== 'unchanged' ? { edges } : {}),
            ...(r.action !== 'unchanged' ? rolloutOf(deps, v, given[i], edges?.total) : {}),
          };
        });
        // These rules see the whole request applied (a placement may come before its workload).
        warnings.push(...crossObjectRules(deps, valid));
        return [...made, ...out];
      },
      { immediate: true },
    );
    return c.json({ results, ...(warnings.length ? { warnings } : {}) } satisfies ApplyResponse);
  });

  return app;
}
