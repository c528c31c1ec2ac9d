/**
 * @module The podman runtime driver: workloads as podman pods made by `podman kube play`.
 *
 * Why the CLI (execFile-style, one podman process per call) and not the libpod REST API: the CLI
 * needs no long-lived service to supervise (without systemd nobody restarts a dead
 * `podman system service`), it is the interface podman documents and keeps stable, and its error
 * messages are the ones users can paste into a search. The cost is ~50-100 ms per call, fine at an
 * edge's scale. `socketPath` switches the same commands to a remote service (`podman --url`).
 *
 * Ownership: every pod and container carries `outpost.dev/owner` (a random id kept in the data
 * directory), `outpost.dev/workload`, `outpost.dev/hash`, `outpost.dev/generation`. The driver
 * only ever lists, stops or removes what carries its owner id, so foreign pods, and pods of another
 * agent (or test run) on the same host, are never touched. Pods are independent of this process:
 * a new driver on the same data directory adopts them by label.
 *
 * Networking: declared containerPorts are not published on the host (see plan.ts); `endpoint`
 * returns the pod's IP on podman's bridge network, which the host (root) reaches directly.
 *
 * @example
 * ```ts
 * const driver = createPodmanDriver({ dataDir: '/var/lib/outpost/edge' });
 * await driver.start();
 * await driver.apply({ name: 'web', generation: 1, hash: 'h1', manifests });
 * ```
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { FAILED_RETRY_MS } from '../../../core/durations.js';
import { parseImageRef } from '../../../core/images.js';
import { createLogger } from '../../../core/logger.js';
import type {
  Driver,
  Endpoint,
  ExecOptions,
  ExecResult,
  InteractiveExec,
  InteractiveExecOptions,
  LogOptions,
  WorkloadObservation,
  WorkloadUnit,
} from '../driver.js';
import { DriverError } from '../driver.js';
import { childSession } from '../interactive.js';
import { createPodman, podmanError, type Podman } from './cli.js';
import { podmanLogLines } from './logs.js';
import {
  LABEL_HASH,
  LABEL_OWNER,
  LABEL_WORKLOAD,
  planUnit,
  secretName,
  UnsupportedUnitError,
  type PodmanPlan,
} from './plan.js';
import { ReadinessProber } from './probes.js';
import { scan, type Scan } from './scan.js';
import { StateStore, type PodmanWorkloadState } from './state.js';
import { observe, type ContainerView } from './status.js';

export interface PodmanDriverOptions {
  /** The agent's data directory; the driver keeps its files under `DATADIR/podman`. */
  dataDir: string;
  /** A `podman system service` socket to use instead of running podman locally. */
  socketPath?: string;
  podmanBin?: string;
}

/** `pod rm -f` races with the restart policy of a crash-looping container; a retry wins it. */
const REMOVE_ATTEMPTS = 4;

const log = createLogger('edge:driver:podman');

/** The registry access of one apply, as files podman reads. */
interface PullFiles {
  authFile: string;
  certDirs: Map<string, string>;
  insecure: Set<string>;
}

/** podman pull flags for an image on `host`. */
function pullFlags(access: PullFiles | undefined, host: string): string[] {
  if (!access) return [];
  const cert = access.certDirs.get(host);
  return [
    '--authfile',
    access.authFile,
    ...(cert ? ['--cert-dir', cert] : []),
    ...(access.insecure.has(host) ? ['--tls-verify=false'] : []),
  ];
}

export function createPodmanDriver(opts: PodmanDriverOptions): Driver {
  return new PodmanDriver(opts);
}

class PodmanDriver implements Driver {
  readonly name = 'podman' as const;
  private readonly store: StateStore;
  private readonly podman: Podman;
  private readonly prober: ReadinessProber;
  private readonly locks = new Map<string, Promise<unknown>>();
  private ownerId: string | undefined;

  constructor(opts: PodmanDriverOptions) {
    this.store = new StateStore(join(resolve(opts.dataDir), 'podman'));
    this.podman = createPodman(opts.podmanBin ?? 'podman', opts.socketPath);
    this.prober = new ReadinessProber(this.podman);
  }

  private get owner(): string {
    if (!this.ownerId) throw new DriverError('the podman driver is not started; call start() first');
    return this.ownerId;
  }

  async start(): Promise<void> {
    const r = await this.podman.run(['info', '--format', '{{.Host.OCIRuntime.Name}}']);
    if (r.code !== 0) {
      throw new DriverError(
        `podman does not work here: ${podmanError(r.stderr)}; run build/setup.sh (it installs podman and writes /etc/outpost/containers.conf)`,
      );
    }
    this.ownerId = await this.store.owner();
    // Play secrets live only during an apply; an agent killed mid-apply leaves them behind.
    await this.removeSecrets();
    log.info({ owner: this.ownerId, runtime: r.stdout.trim() }, 'podman driver started');
  }

  /** Runs `fn` after every earlier operation on the same workload. */
  private serial<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(name) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.locks.set(name, tail);
    void tail.then(() => {
      if (this.locks.get(name) === tail) this.locks.delete(name);
    });
    return next;
  }

  private async scanOne(name: string, state?: PodmanWorkloadState): Promise<Scan> {
    return scan(this.podman, this.owner, name, new Map(state ? [[name, state]] : []));
  }

  apply(unit: WorkloadUnit): Promise<void> {
    return this.serial(unit.name, () => this.applyNow(unit));
  }

  /**
   * A new version is made next to the running one: images first (pulled if missing), then the new
   * pods created stopped, started, and only then the old pods removed. Whatever fails on the way,
   * the old pods keep serving and the workload reports Failed with the reason (docs/drivers.md).
   */
  private async applyNow(unit: WorkloadUnit): Promise<void> {
    const state = await this.store.read(unit.name);
    const seen = await this.scanOne(unit.name, state);
    const current = seen.pods.filter((p) => p.labels[LABEL_HASH] === unit.hash);
    const expected = (state?.templates ?? []).reduce((n, t) => n + t.replicas, 0);
    if (
      current.length > 0 &&
      current.length === seen.pods.length &&
      (!state || (state.hash === unit.hash && !state.error)) &&
      current.length >= expected
    ) {
      if (!state || state.generation !== unit.generation) await this.adoptState(unit, state);
      return;
    }
    if (state?.hash === unit.hash && state.error && Date.now() - state.attemptedAt < FAILED_RETRY_MS) return;

    let plan: PodmanPlan;
    try {
      plan = planUnit(unit, this.owner, this.store.volumeRoot(unit.name, unit.hash));
    } catch (err) {
      if (!(err instanceof UnsupportedUnitError)) throw err;
      await this.store.write({
        ...emptyState(unit),
        ...(state ? pick(state) : {}),
        name: unit.name,
        generation: unit.generation,
        hash: unit.hash,
        error: err.message,
        attemptedAt: Date.now(),
      });
      log.warn({ workload: unit.name, err: err.message }, 'workload cannot run on podman');
      return;
    }
    if (plan.ignored.length)
      log.info({ workload: unit.name, ignored: plan.ignored }, 'kinds the podman driver does not create');

    const old = seen.pods.filter((p) => p.labels[LABEL_HASH] !== unit.hash);
    const oldHash = old[0]?.labels[LABEL_HASH];
    // Pods of this very version are what is left of an earlier try: they are replaced, never a fallback.
    if (current.length) await this.removePods(unit.name, state?.graceSeconds ?? plan.graceSeconds, current);
    await this.writeVolumes(unit, plan);
    // Registry credentials exist on disk (0600) only while images are pulled and played.
    const access = await this.writePullAccess(unit.name, plan);
    let error: string | undefined;
    try {
      error =
        (await this.ensureImages(unit.name, plan, access)) ??
        (await this.play(unit, plan, old, state?.graceSeconds ?? plan.graceSeconds, access));
    } finally {
      await rm(this.pullDir(unit.name), { recursive: true, force: true });
    }
    if (!error && old.length) {
      await this.removePods(unit.name, state?.graceSeconds ?? plan.graceSeconds, old).catch((err) =>
        log.warn({ workload: unit.name, err }, 'removing the previous version after an update'),
      );
    }
    const keepOld = error !== undefined && old.length > 0 && state !== undefined;
    await this.store.write({
      name: unit.name,
      generation: unit.generation,
      hash: unit.hash,
      ...(error ? { error } : {}),
      attemptedAt: Date.now(),
      // After a failed update the pods that run are the previous version's: keep what status needs of it.
      ...(keepOld
        ? { templates: state.templates, ports: state.ports, graceSeconds: state.graceSeconds, probes: state.probes }
        : { templates: plan.templates, ports: plan.ports, graceSeconds: plan.graceSeconds, probes: plan.probes }),
      claims: [...new Set([...(state?.claims ?? []), ...plan.claims])],
    });
    const keep = error
      ? oldHash && this.store.volumeRoot(unit.name, oldHash)
      : this.store.volumeRoot(unit.name, unit.hash);
    await this.pruneVolumes(unit.name, keep || undefined);
  }

  private pullDir(workload: string): string {
    return join(this.store.root, 'pull', workload);
  }

  /**
   * Writes the plan's registry access for podman: `auth.json` (podman's --authfile) and one
   * `--cert-dir` per registry with a CA bundle, under DATADIR/podman/pull/WORKLOAD (0700/0600).
   */
  private async writePullAccess(workload: string, plan: PodmanPlan): Promise<PullFiles | undefined> {
    if (!plan.pull) return undefined;
    const dir = this.pullDir(workload);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const authFile = join(dir, 'auth.json');
    await writeFile(authFile, plan.pull.authJson, { mode: 0o600 });
    const certDirs = new Map<string, string>();
    for (const [host, pem] of plan.pull.ca) {
      const d = join(dir, 'certs', host.replace(/[^A-Za-z0-9.-]/g, '_'));
      await mkdir(d, { recursive: true, mode: 0o700 });
      await writeFile(join(d, 'ca.crt'), pem, { mode: 0o600 });
      certDirs.set(host, d);
    }
    return { authFile, certDirs, insecure: plan.pull.insecure };
  }

  /** Every image of the plan present locally, pulling those that are not; the error message otherwise. */
  private async ensureImages(
    workload: string,
    plan: PodmanPlan,
    access: PullFiles | undefined,
  ): Promise<string | undefined> {
    const failed: { image: string; why: string }[] = [];
    for (const image of plan.images) {
      if ((await this.podman.run(['image', 'exists', image])).code === 0) continue;
      const r = await this.podman.run(['pull', '--quiet', ...pullFlags(access, parseImageRef(image).registry), image]);
      if (r.code !== 0) failed.push({ image, why: podmanError(r.stderr) });
    }
    if (failed.length === 0) return undefined;
    log.warn({ workload, images: failed }, 'images missing; the running version is kept');
    return (
      `image ${failed.map((f) => f.image).join(', ')} is not on this edge and could not be pulled (is a registry reachable from here?); ` +
      `build or load it locally (podman load -i FILE, podman import) or fix the image name. podman said: ${failed.map((f) => f.why).join('; ')}`
    );
  }

  /** Same hash already running: refresh the state file (new generation, or a lost file) without touching pods. */
  private async adoptState(unit: WorkloadUnit, state: PodmanWorkloadState | undefined): Promise<void> {
    let plan: Partial<PodmanPlan> = {};
    try {
      plan = planUnit(unit, this.owner, this.store.volumeRoot(unit.name, unit.hash));
    } catch {
      // It runs, so it planned once; keep what the state file had.
    }
    await this.store.write({
      ...emptyState(unit),
      ...(state ? pick(state) : {}),
      ...(plan.templates
        ? {
            templates: plan.templates,
            ports: plan.ports!,
            graceSeconds: plan.graceSeconds!,
            probes: plan.probes!,
            claims: plan.claims!,
          }
        : {}),
      name: unit.name,
      generation: unit.generation,
      hash: unit.hash,
      attemptedAt: state?.attemptedAt ?? Date.now(),
      ...(state?.stopped ? { stopped: true } : {}),
    });
  }

  private async writeVolumes(unit: WorkloadUnit, plan: PodmanPlan): Promise<void> {
    const root = this.store.volumeRoot(unit.name, unit.hash);
    await rm(root, { recursive: true, force: true });
    for (const v of plan.volumes) {
      const dir = join(root, v.dir);
      await mkdir(dir, { recursive: true, mode: 0o755 });
      for (const f of v.files) {
        const file = join(dir, f.path);
        await mkdir(dirname(file), { recursive: true, mode: 0o755 });
        await writeFile(file, f.content, { mode: f.mode });
      }
    }
  }

  private async pruneVolumes(name: string, keep: string | undefined): Promise<void> {
    const dir = this.store.volumesOf(name);
    const entries = await readdir(dir).catch(() => [] as string[]);
    for (const e of entries) if (join(dir, e) !== keep) await rm(join(dir, e), { recursive: true, force: true });
  }

  /**
   * Creates the new pods stopped and starts them; returns the error message for phase Failed, or
   * undefined on success. `old` (the previous version's pods) keep running unless the new ones
   * cannot start beside them (a hostPort both hold): then the old ones are stopped for one more
   * try, and started again if the new ones still fail.
   */
  private async play(
    unit: WorkloadUnit,
    plan: PodmanPlan,
    old: Scan['pods'],
    graceSeconds: number,
    access: PullFiles | undefined,
  ): Promise<string | undefined> {
    const file = join(this.store.root, 'play', `${unit.name}.yaml`);
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    const claims: string[] = [];
    for (const c of plan.claimDocs)
      if ((await this.podman.run(['volume', 'exists', c.volume])).code !== 0) claims.push(c.yaml);
    await writeFile(file, [...claims, plan.yaml].join('---\n'), { mode: 0o600 });
    let created = false;
    try {
      for (const s of plan.secrets) {
        await this.podman.run(['secret', 'rm', s.name]);
        // `secret create NAME -` insists on a FIFO for stdin and Node's pipes are socket pairs: use a file.
        const dataFile = join(dirname(file), `${s.name}.json`);
        await writeFile(dataFile, s.data, { mode: 0o600 });
        try {
          await this.podman.ok(
            [
              'secret',
              'create',
              '--label',
              `${LABEL_OWNER}=${this.owner}`,
              '--label',
              `${LABEL_WORKLOAD}=${unit.name}`,
              s.name,
              dataFile,
            ],
            `creating podman secret ${s.name}`,
          );
        } finally {
          await rm(dataFile, { force: true });
        }
      }
      // The images were pulled above; the authfile is for a pull kube play makes by its own policy.
      const r = await this.podman.run([
        'kube',
        'play',
        '--start=false',
        ...(access ? ['--authfile', access.authFile] : []),
        file,
      ]);
      created = true;
      if (r.code !== 0) {
        const message = await this.explainPlayFailure(plan, podmanError(r.stderr));
        log.warn({ workload: unit.name, err: message }, 'podman kube play failed');
        return message;
      }
      let started = await this.startPods(unit);
      if (started !== undefined && old.length) {
        log.warn(
          { workload: unit.name, err: started },
          'the new version cannot start beside the old; stopping the old',
        );
        await this.podman.run(['pod', 'stop', '-t', String(graceSeconds), ...old.map((p) => p.id)]);
        started = await this.startPods(unit);
        if (started !== undefined) {
          const back = await this.podman.run(['pod', 'start', ...old.map((p) => p.id)]);
          if (back.code !== 0)
            log.error(
              { workload: unit.name, err: podmanError(back.stderr) },
              'the previous version did not start again',
            );
        }
      }
      if (started !== undefined) {
        log.warn({ workload: unit.name, err: started }, 'the new version did not start');
        return `the new version did not start: ${started}`;
      }
      created = false;
      log.info({ workload: unit.name, hash: unit.hash, generation: unit.generation }, 'workload played');
      return undefined;
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    } finally {
      // A failed play leaves half-made pods (state Created) behind; the old version's are not touched.
      if (created)
        await this.removePods(unit.name, 0, await this.podsOfHash(unit.name, unit.hash)).catch((err) =>
          log.warn({ workload: unit.name, err }, 'cleaning up after a failed play'),
        );
      // Env values from secrets are copied into the containers at creation; the secrets are not needed after.
      await this.removeSecrets(unit.name).catch((err) =>
        log.warn({ workload: unit.name, err }, 'removing play secrets'),
      );
    }
  }

  /** Starts the (created) pods of the unit's version; the error message if any did not start. */
  private async startPods(unit: WorkloadUnit): Promise<string | undefined> {
    const pods = await this.podsOfHash(unit.name, unit.hash);
    if (pods.length === 0) return 'podman kube play made no pod';
    const r = await this.podman.run(['pod', 'start', ...pods.map((p) => p.id)]);
    return r.code === 0 ? undefined : podmanError(r.stderr);
  }

  private async podsOfHash(name: string, hash: string): Promise<Scan['pods']> {
    return (await this.scanOne(name)).pods.filter((p) => p.labels[LABEL_HASH] === hash);
  }

  private async explainPlayFailure(plan: PodmanPlan, podmanSaid: string): Promise<string> {
    const images = new Set<string>();
    for (const m of /image: *"?([^\s"]+)/g[Symbol.matchAll](plan.yaml)) images.add(m[1]);
    const missing: string[] = [];
    for (const img of images) if ((await this.podman.run(['image', 'exists', img])).code !== 0) missing.push(img);
    if (missing.length === 0) return `podman kube play failed: ${podmanSaid}`;
    return (
      `image ${missing.join(', ')} is not on this edge and could not be pulled (is a registry reachable from here?); ` +
      `build or load it locally (podman load -i FILE, podman import) or fix the image name. podman said: ${podmanSaid}`
    );
  }

  private async podIds(name: string): Promise<string[]> {
    const out = await this.podman.ok(
      [
        'pod',
        'ps',
        '-q',
        '--no-trunc',
        '--filter',
        `label=${LABEL_OWNER}=${this.owner}`,
        '--filter',
        `label=${LABEL_WORKLOAD}=${name}`,
      ],
      `listing pods of ${name}`,
    );
    return out.split('\n').filter(Boolean);
  }

  /** Removes the workload's pods (only those of `subset` when given). */
  private async removePods(name: string, graceSeconds: number, subset?: { id: string }[]): Promise<void> {
    const only = subset && new Set(subset.map((p) => p.id));
    let lastError = '';
    for (let attempt = 0; attempt < REMOVE_ATTEMPTS; attempt++) {
      const ids = (await this.podIds(name)).filter((id) => !only || only.has(id));
      if (ids.length === 0) return;
      const r = await this.podman.run(['pod', 'rm', '-f', '-t', String(graceSeconds), ...ids]);
      if (r.code === 0) return;
      lastError = podmanError(r.stderr);
      await new Promise((res) => setTimeout(res, 200 * (attempt + 1)));
    }
    throw new DriverError(`removing the pods of ${name}: ${lastError}; try 'podman pod rm -f' on them by hand`);
  }

  private async removeSecrets(workload?: string): Promise<void> {
    // podman 4.3 cannot filter secrets by label ("invalid filter"): narrow by our name prefix,
    // then check each one's labels before removing it.
    const prefix = workload ? secretName(this.owner, workload, '') : `outpost.${this.owner}.`;
    const names = (await this.podman.ok(['secret', 'ls', '--format', '{{.Name}}'], 'listing podman secrets')).split(
      '\n',
    );
    const ids = names.filter((n) => n.startsWith(prefix));
    if (ids.length === 0) return;
    const specs = JSON.parse(await this.podman.ok(['secret', 'inspect', ...ids], 'inspecting secrets')) as {
      ID: string;
      Spec?: { Labels?: Record<string, string> | null };
    }[];
    const ours = specs
      .filter(
        (s) =>
          s.Spec?.Labels?.[LABEL_OWNER] === this.owner && (!workload || s.Spec?.Labels?.[LABEL_WORKLOAD] === workload),
      )
      .map((s) => s.ID);
    if (ours.length) await this.podman.ok(['secret', 'rm', ...ours], 'removing podman secrets');
  }

  remove(name: string): Promise<void> {
    return this.serial(name, async () => {
      const state = await this.store.read(name);
      await this.removePods(name, state?.graceSeconds ?? 10);
      await this.removeSecrets(name);
      for (const claim of state?.claims ?? []) {
        const r = await this.podman.run(['volume', 'rm', '-f', claim]);
        if (r.code !== 0 && !/no such volume/i.test(r.stderr))
          log.warn({ workload: name, volume: claim, err: podmanError(r.stderr) }, 'removing a claim volume');
      }
      await this.store.delete(name);
      log.info({ workload: name }, 'workload removed');
    });
  }

  async list(): Promise<WorkloadObservation[]> {
    const states = new Map((await this.store.all()).map((s) => [s.name, s]));
    const seen = await scan(this.podman, this.owner, undefined, states);
    const names = new Set(
      [...states.keys(), ...seen.pods.map((p) => p.workload), ...seen.containers.map((c) => c.workload)].filter(
        Boolean,
      ),
    );
    this.prober.prune(new Set(seen.containers.map((c) => c.id)));
    const out: WorkloadObservation[] = [];
    for (const name of [...names].sort()) {
      const state = states.get(name);
      const containers: ContainerView[] = await Promise.all(
        seen.containers
          .filter((c) => c.workload === name)
          .map(async (c) => {
            const probe = state?.probes[`${c.template}/${c.container}`];
            if (!probe || c.state !== 'running') return c;
            return { ...c, probe: await this.prober.check(c.id, c.startedAt, probe, c.ip) };
          }),
      );
      out.push(
        observe(
          name,
          state,
          seen.pods.filter((p) => p.workload === name),
          containers,
        ),
      );
    }
    return out;
  }

  private async podAction(name: string, action: 'stop' | 'start', graceSeconds: number): Promise<void> {
    const ids = await this.podIds(name);
    if (ids.length === 0) throw new DriverError(`workload ${name} has no pods on this edge; apply it first`);
    const args = action === 'stop' ? ['pod', 'stop', '-t', String(graceSeconds), ...ids] : ['pod', 'start', ...ids];
    await this.podman.ok(args, `${action === 'stop' ? 'stopping' : 'starting'} the pods of ${name}`);
  }

  private async setStopped(name: string, stopped: boolean): Promise<PodmanWorkloadState | undefined> {
    const state = await this.store.read(name);
    if (state && Boolean(state.stopped) !== stopped) await this.store.write({ ...state, stopped });
    return state;
  }

  stopWorkload(name: string): Promise<void> {
    return this.serial(name, async () => {
      const state = await this.setStopped(name, true);
      await this.podAction(name, 'stop', state?.graceSeconds ?? 10);
    });
  }

  startWorkload(name: string): Promise<void> {
    return this.serial(name, async () => {
      await this.podAction(name, 'start', 0);
      await this.setStopped(name, false);
    });
  }

  restartWorkload(name: string): Promise<void> {
    // `podman pod restart` has no stop timeout flag; stop + start honours the workload's grace period.
    return this.serial(name, async () => {
      const state = await this.store.read(name);
      await this.podAction(name, 'stop', state?.graceSeconds ?? 10);
      await this.podAction(name, 'start', 0);
      await this.setStopped(name, false);
    });
  }

  /** The container a log or exec request means: `container` by name, else the first of the first pod. */
  private async target(name: string, container: string | undefined, running: boolean): Promise<string> {
    const seen = await this.scanOne(name, await this.store.read(name));
    const all = [...seen.containers].sort((a, b) => a.pod.localeCompare(b.pod));
    const pick = container ? all.filter((c) => c.container === container) : all;
    const chosen = running ? pick.find((c) => c.state === 'running') : pick[0];
    if (chosen) return chosen.id;
    if (all.length === 0) throw new DriverError(`workload ${name} has no containers on this edge`);
    if (container && pick.length === 0)
      throw new DriverError(
        `workload ${name} has no container named ${container}; it has ${[...new Set(all.map((c) => c.container))].join(', ')}`,
      );
    throw new DriverError(
      `workload ${name} has no running container${container ? ` named ${container}` : ''}; start it first`,
    );
  }

  logs(name: string, opts: LogOptions): AsyncIterable<string> {
    const self = this;
    return (async function* () {
      const id = await self.target(name, opts.container, false);
      yield* podmanLogLines(self.podman, id, opts);
    })();
  }

  async exec(name: string, command: string[], opts: ExecOptions): Promise<ExecResult> {
    if (command.length === 0) throw new DriverError('exec needs a command');
    const id = await this.target(name, opts.container, true);
    const r = await this.podman.run(['exec', id, ...command], { signal: opts.signal });
    // 125 is podman's own failure (exec could not start); 126/127 are the command's, as in a shell.
    if (r.code === 125 && /^Error:/m.test(r.stderr)) throw new DriverError(`exec in ${name}: ${podmanError(r.stderr)}`);
    return { exitCode: r.code, stdout: r.stdout, stderr: r.stderr };
  }

  /**
   * `podman exec -i [-t]`. Ending the session closes stdin and then stops the podman client; a
   * command that reads its input (a shell, cat) sees the end of it and ends. Podman 4.3 gives no
   * handle on the exec'd process, so one that ignores stdin (sleep) runs on in the container until
   * it ends by itself (docs/drivers.md).
   */
  async execInteractive(name: string, command: string[], opts: InteractiveExecOptions): Promise<InteractiveExec> {
    if (command.length === 0) throw new DriverError('exec needs a command');
    const id = await this.target(name, opts.container, true);
    // `podman exec -t` from a client without a terminal gives the session a 0x0 terminal (`stty
    // size` fails, full-screen programs break): set the client's size (80x24 by default) through
    // the container's /bin/sh, when it has one.
    let argv = command;
    if (opts.tty && (await this.podman.run(['exec', id, '/bin/sh', '-c', ':'])).code === 0) {
      const { cols, rows } = opts.size ?? { cols: 80, rows: 24 };
      argv = [
        '/bin/sh',
        '-c',
        'stty rows "$1" cols "$2" 2>/dev/null; shift 2; exec "$@"',
        'outpost-exec',
        String(rows),
        String(cols),
        ...command,
      ];
    }
    const child = this.podman.spawn(['exec', '-i', ...(opts.tty ? ['-t'] : []), id, ...argv]);
    const kill = (): void => {
      child.stdin?.end();
      child.kill('SIGTERM');
    };
    return childSession(child, `podman exec in ${name}`, kill, opts.signal);
  }

  async endpoint(name: string, port: number): Promise<Endpoint | null> {
    const state = await this.store.read(name);
    if (!state || !state.ports.includes(port)) return null;
    const seen = await this.scanOne(name, state);
    const ip = seen.containers.find((c) => c.state === 'running' && c.ip)?.ip;
    if (!ip) throw new DriverError(`workload ${name} has no running pod with an IP address; start it first`);
    return { host: ip, port };
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.locks.values()]);
  }
}

function emptyState(unit: WorkloadUnit): PodmanWorkloadState {
  return {
    name: unit.name,
    generation: unit.generation,
    hash: unit.hash,
    attemptedAt: Date.now(),
    templates: [],
    ports: [],
    graceSeconds: 10,
    probes: {},
    claims: [],
  };
}

function pick(s: PodmanWorkloadState): Partial<PodmanWorkloadState> {
  return { templates: s.templates, ports: s.ports, graceSeconds: s.graceSeconds, probes: s.probes, claims: s.claims };
}
