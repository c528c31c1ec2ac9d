/**
 * @module GitRepos (docs/gitops.md, "Git as a source"): the hub fetches each GitRepo's ref every
 * `spec.interval` (or at once on its webhook or `outpost gitrepo sync`), reads the manifest files
 * its paths select from the commit, and applies them in one transaction with pruning
 * (hub/gitops/sync.ts). One sync of a GitRepo at a time; what it learned is its status
 * (hub/state/git-repos.ts), each sync's outcome an event of the GitRepo.
 *
 * With hub replicas on PostgreSQL, only the leader polls; a manual or webhook sync runs where it
 * is asked (the sync state and the objects are shared, each sync one transaction).
 *
 * @example
 * const gitRepos = new GitRepos({ dataDir, state, objects, box: secrets.box });
 * gitRepos.start();
 * await gitRepos.sync('default', 'fleet-config', 'manual');
 */
import fs from 'node:fs';
import path from 'node:path';
import type { GitRepoStatusView, GitRepoSyncError } from '../../core/api/views.js';
import { parseDuration } from '../../core/durations.js';
import { OutpostError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import type { GitRepo } from '../../core/resources.js';
import type { ObjectChange, ObjectStore } from '../objects.js';
import type { SecretBox } from '../secrets.js';
import type { HubState } from '../state/index.js';
import { sqlGitRepoStates, type GitRepoStates } from '../state/git-repos.js';
import { openCredentials } from './credentials.js';
import { DEFAULT_GIT_LIMITS, fetchHead, GitError, listTree, readBlobs, type GitLimits } from './git.js';
import { formatSyncError } from '../../core/gitops.js';
import { objectsOfFile, type SourcedResource } from './parse.js';
import { isChartFile, pathMatcher } from './paths.js';
import { applyCommit, driftOf, ownedView } from './sync.js';

const log = createLogger('hub:gitops');

/** How often the loop looks for GitRepos whose interval has passed (their interval is at least 10 s). */
const TICK_MS = 2_000;

export type SyncTrigger = 'poll' | 'manual' | 'webhook';

export interface GitReposOptions {
  dataDir: string;
  state: Pick<HubState, 'transaction' | 'events' | 'edges' | 'gitRepos' | 'clusters'>;
  objects: ObjectStore;
  box: SecretBox;
  /** With replicas: whether this one polls. */
  leading?: () => boolean;
  limits?: Partial<GitLimits>;
}

export class GitRepos {
  readonly states: GitRepoStates;
  private readonly limits: GitLimits;
  private readonly running = new Map<string, Promise<GitRepoStatusView>>();
  private readonly lastPoll = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly o: GitReposOptions) {
    this.states = o.state.gitRepos;
    this.limits = { ...DEFAULT_GIT_LIMITS, ...o.limits };
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await Promise.allSettled([...this.running.values()]);
  }

  private dirOf(project: string, name: string): string {
    return path.join(this.o.dataDir, 'gitops', project, name);
  }

  /** In the write transaction of a GitRepo's change: a new or changed one syncs at the next tick, a deleted one's state goes. */
  /** Its module's hook (hub/module.ts): a GitRepo changed or deleted, an owned object changed by hand. */
  onObjectChange(c: ObjectChange): void {
    if (c.kind !== 'GitRepo') return;
    const k = `${c.project}/${c.name}`;
    this.lastPoll.delete(k);
    if (!c.after) {
      this.states.delete(c.project, c.name);
      // Its objects stay (docs/gitops.md); its clone goes once the delete is committed.
      setImmediate(() => fs.rmSync(this.dirOf(c.project, c.name), { recursive: true, force: true }));
    }
  }

  /**
   * The poll loop's turn (every TICK_MS): starts the syncs whose interval has passed. Never throws:
   * a database that cannot be read now (a hub replica cut off from PostgreSQL) is logged, and the
   * next turn reads again; a throw here would end the hub (a timer's callback).
   */
  tick(): void {
    if (this.stopped || (this.o.leading && !this.o.leading())) return;
    let repos: GitRepo[];
    try {
      repos = this.o.objects.list<GitRepo>('GitRepo', '*');
    } catch (err) {
      log.warn({ err }, 'could not read the GitRepos to poll; read again at the next tick');
      return;
    }
    const now = Date.now();
    for (const r of repos) {
      if (r.spec.paused) continue;
      const k = `${r.metadata.project}/${r.metadata.name}`;
      if (this.running.has(k)) continue;
      const last = this.lastPoll.get(k);
      if (last !== undefined && now - last < parseDuration(r.spec.interval)) continue;
      this.lastPoll.set(k, now);
      this.sync(r.metadata.project, r.metadata.name, 'poll').catch((err: unknown) =>
        log.warn({ err, gitRepo: k }, 'a GitRepo sync failed; the next poll tries again'),
      );
    }
  }

  /** Fetches and applies now; one sync of a GitRepo at a time (a second waits for the first, then runs). */
  sync(project: string, name: string, trigger: SyncTrigger): Promise<GitRepoStatusView> {
    const k = `${project}/${name}`;
    const before = this.running.get(k) ?? Promise.resolve(undefined);
    const next = before
      .catch(() => undefined)
      .then(() => this.syncNow(project, name, trigger))
      .finally(() => {
        if (this.running.get(k) === next) this.running.delete(k);
      });
    this.running.set(k, next);
    return next;
  }

  private async syncNow(project: string, name: string, trigger: SyncTrigger): Promise<GitRepoStatusView> {
    const repo = this.o.objects.get<GitRepo>('GitRepo', project, name);
    if (!repo) throw new OutpostError('not_found', `GitRepo ${project}/${name} not found`);
    if (repo.spec.paused && trigger !== 'poll')
      throw new OutpostError('conflict', `GitRepo ${name} is paused: set spec.paused to false to sync it`);
    this.lastPoll.set(`${project}/${name}`, Date.now());
    const dir = this.dirOf(project, name);
    const prev = this.states.get(project, name);
    let commit: string;
    try {
      commit = await fetchHead(dir, repo.spec, openCredentials(this.o.box, repo.spec), this.limits);
    } catch (err) {
      const message = err instanceof GitError ? err.message : `fetching: ${(err as Error).message}`;
      this.o.state.transaction(() => {
        this.states.fetched(project, name, Date.now(), { error: message });
        // One event per new error, not one per poll of a repository that stays away.
        if (prev?.fetchError !== message)
          this.o.state.events.record({ project, kind: 'GitRepo', name, reason: 'FetchFailed', message });
      });
      log.warn({ gitRepo: `${project}/${name}`, repo: repo.spec.repo, error: message }, 'GitRepo fetch failed');
      return this.status(repo);
    }
    this.o.state.transaction(() => this.states.fetched(project, name, Date.now(), { head: commit }));
    const paths = JSON.stringify(repo.spec.paths);
    const drift = prev ? driftOf(this.o.objects, project, prev.owned) : [];
    if (prev?.appliedCommit === commit && prev.appliedPaths === paths && drift.length === 0 && !prev.failedCommit)
      return this.status(repo);

    let outcome: ReturnType<typeof applyCommit>;
    try {
      const { objects, errors } = await this.read(dir, commit, repo);
      outcome = applyCommit(this.sd, repo, commit, objects, paths, errors);
    } catch (err) {
      outcome = { applied: false, errors: [{ message: (err as Error).message }] };
    }
    if (!outcome.applied) {
      const errors = outcome.errors;
      this.o.state.transaction(() => {
        const same = prev?.failedCommit === commit && JSON.stringify(prev.errors) === JSON.stringify(errors);
        this.states.failed(project, name, commit, errors);
        if (!same)
          this.o.state.events.record({
            project,
            kind: 'GitRepo',
            name,
            reason: 'SyncFailed',
            message: `commit ${commit.slice(0, 12)} not applied (nothing of it was${prev?.appliedCommit ? `; ${prev.appliedCommit.slice(0, 12)} stays applied` : ''}): ${errors
              .slice(0, 3)
              .map(formatSyncError)
              .join('; ')}${errors.length > 3 ? `; and ${errors.length - 3} more` : ''}`,
          });
      });
    } else if (drift.length && prev?.appliedCommit === commit) {
      this.o.state.events.record({
        project,
        kind: 'GitRepo',
        name,
        reason: 'DriftReverted',
        message: `Git's version put back for ${drift.map((x) => `${x.kind} ${x.name} (${x.change} by hand)`).join(', ')}`,
      });
    }
    log.info({ gitRepo: `${project}/${name}`, commit, trigger, applied: outcome.applied }, 'GitRepo synced');
    return this.status(repo);
  }

  private get sd() {
    return { state: this.o.state, objects: this.o.objects, states: this.states };
  }

  /** The commit's objects that the GitRepo's paths select, or every problem by file and line. */
  private async read(
    dir: string,
    commit: string,
    repo: GitRepo,
  ): Promise<{ objects: SourcedResource[]; errors: GitRepoSyncError[] }> {
    const match = pathMatcher(repo.spec.paths);
    const tree = await listTree(dir, commit, this.limits);
    const errors: GitRepoSyncError[] = [];
    // A chart's directory is one package, not loose manifests (its templates are not YAML yet).
    const charts = tree.filter((f) => isChartFile(f.path) && match(f.path)).map((f) => path.posix.dirname(f.path));
    for (const c of charts)
      errors.push({
        file: c === '.' ? 'Chart.yaml' : `${c}/Chart.yaml`,
        message:
          'not yet: Helm charts from Git are not supported yet (issue #45, part 2): leave the chart out of spec.paths',
      });
    const inChart = (p: string) => charts.some((c) => c === '.' || p.startsWith(`${c}/`));
    const files = tree.filter((f) => match(f.path) && !inChart(f.path));
    for (const f of files)
      if (f.special)
        errors.push({
          file: f.path,
          message: `is a ${f.special === 'symlink' ? 'symbolic link' : 'submodule'}: not followed; put the manifests in the repository itself`,
        });
    const total = files.reduce((n, f) => n + f.size, 0);
    if (total > this.limits.maxManifestBytes)
      errors.push({
        message: `the files spec.paths selects are ${Math.round(total / 1048576)} MiB together, over the hub's ${Math.round(this.limits.maxManifestBytes / 1048576)} MiB limit: narrow spec.paths`,
      });
    if (errors.length) return { objects: [], errors };
    const regular = files.filter((f) => !f.special).sort((a, b) => a.path.localeCompare(b.path));
    const texts = await readBlobs(
      dir,
      regular.map((f) => f.sha),
      this.limits,
    );
    const objects: SourcedResource[] = [];
    for (const f of regular) {
      const r = objectsOfFile(f.path, texts.get(f.sha) ?? '', repo.metadata.project);
      objects.push(...r.objects);
      errors.push(...r.errors);
    }
    return { objects, errors };
  }

  /** The GitRepo's status as the API shows it. */
  status(repo: GitRepo): GitRepoStatusView {
    const { project, name } = repo.metadata;
    const s = this.states.get(project, name);
    const drift = s ? driftOf(this.o.objects, project, s.owned) : [];
    const state = repo.spec.paused
      ? 'Paused'
      : !s || (!s.appliedCommit && !s.failedCommit && !s.fetchError)
        ? 'Pending'
        : s.fetchError
          ? 'FetchFailed'
          : s.failedCommit
            ? 'Error'
            : drift.length
              ? 'Drifted'
              : 'Synced';
    const iso = (ms: number | undefined) => (ms === undefined ? {} : { at: new Date(ms).toISOString() });
    return {
      state,
      ...(s?.appliedCommit ? { commit: s.appliedCommit } : {}),
      ...(s?.appliedAt !== undefined ? { appliedAt: iso(s.appliedAt).at } : {}),
      ...(s?.head ? { head: s.head } : {}),
      ...(s?.fetchedAt !== undefined ? { fetchedAt: iso(s.fetchedAt).at } : {}),
      ...(s?.fetchError ? { fetchError: s.fetchError } : {}),
      ...(s?.failedCommit ? { failedCommit: s.failedCommit } : {}),
      errors: s?.errors ?? [],
      objects: s?.owned.length ?? 0,
      owned: ownedView(s?.owned ?? []),
      drift,
      ...(repo.spec.webhookSecret ? { webhook: `/api/v1/hooks/git/${project}/${name}` } : {}),
    };
  }
}
