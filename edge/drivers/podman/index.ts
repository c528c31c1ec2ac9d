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
 * Where the parts are: plan.ts turns a unit into what podman runs; apply.ts applies it, replacing
 * the running version by new pods (images and registry access: pull.ts; volume files: volumes.ts;
 * `podman kube play`: play.ts, with its secrets: secrets.ts); pods.ts finds and removes pods;
 * actions.ts stops, starts and restarts on request; exec.ts and logs.ts reach into containers;
 * scan.ts, probes.ts and status.ts make the status.
 *
 * @example
 * ```ts
 * const driver = createPodmanDriver({ dataDir: '/var/lib/outpost/edge' });
 * await driver.start();
 * await driver.apply({ name: 'web', generation: 1, hash: 'h1', manifests });
 * ```
 */
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
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
import { restartOnRequest, startOnRequest, stopOnRequest } from './actions.js';
import { applyUnit } from './apply.js';
import { createPodman, podmanError, type Podman } from './cli.js';
import { execIn, execInteractiveIn } from './exec.js';
import { podmanLogLines } from './logs.js';
import { DEFAULT_GRACE_SECONDS } from './plan.js';
import { removePods, scanOne, targetContainer, type PodmanContext } from './pods.js';
import { ReadinessProber } from './probes.js';
import { scan } from './scan.js';
import { removeSecrets } from './secrets.js';
import { StateStore } from './state.js';
import { observe, type ContainerView } from './status.js';

export interface PodmanDriverOptions {
  /** The agent's data directory; the driver keeps its files under `DATADIR/podman`. */
  dataDir: string;
  /** A `podman system service` socket to use instead of running podman locally. */
  socketPath?: string;
  podmanBin?: string;
}

const log = createLogger('edge:driver:podman');

/** The network `podman kube play` puts pods on when it is not told another (docs/drivers.md). */
const KUBE_NETWORK = 'podman-default-kube-network';

export function createPodmanDriver(opts: PodmanDriverOptions): Driver {
  return new PodmanDriver(opts);
}

/** The driver is the context its parts work with (pods.ts `PodmanContext`). */
class PodmanDriver implements Driver, PodmanContext {
  readonly name = 'podman' as const;
  readonly store: StateStore;
  readonly podman: Podman;
  private readonly prober: ReadinessProber;
  private readonly locks = new Map<string, Promise<unknown>>();
  private ownerId: string | undefined;

  constructor(opts: PodmanDriverOptions) {
    this.store = new StateStore(join(resolve(opts.dataDir), 'podman'));
    this.podman = createPodman(opts.podmanBin ?? 'podman', opts.socketPath);
    this.prober = new ReadinessProber(this.podman);
  }

  get owner(): string {
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
    await removeSecrets(this);
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

  apply(unit: WorkloadUnit): Promise<void> {
    return this.serial(unit.name, () => applyUnit(this, unit));
  }

  remove(name: string): Promise<void> {
    return this.serial(name, async () => {
      const state = await this.store.read(name);
      await removePods(this, name, state?.graceSeconds ?? DEFAULT_GRACE_SECONDS);
      await removeSecrets(this, name);
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
      // An operation in progress (this.locks) may be what makes a pod missing or a container down.
      out.push(
        observe(
          name,
          state,
          seen.pods.filter((p) => p.workload === name),
          containers,
          Date.now(),
          this.locks.has(name),
        ),
      );
    }
    return out;
  }

  stopWorkload(name: string): Promise<void> {
    return this.serial(name, () => stopOnRequest(this, name));
  }

  startWorkload(name: string): Promise<void> {
    return this.serial(name, () => startOnRequest(this, name));
  }

  restartWorkload(name: string): Promise<void> {
    return this.serial(name, () => restartOnRequest(this, name));
  }

  logs(name: string, opts: LogOptions): AsyncIterable<string> {
    const self = this;
    return (async function* () {
      const id = await targetContainer(self, name, opts.container, false);
      yield* podmanLogLines(self.podman, id, opts);
    })();
  }

  exec(name: string, command: string[], opts: ExecOptions): Promise<ExecResult> {
    return execIn(this, name, command, opts);
  }

  execInteractive(name: string, command: string[], opts: InteractiveExecOptions): Promise<InteractiveExec> {
    return execInteractiveIn(this, name, command, opts);
  }

  async endpoint(name: string, port: number): Promise<Endpoint | null> {
    const state = await this.store.read(name);
    if (!state || !state.ports.includes(port)) return null;
    const seen = await scanOne(this, name, state);
    const ip = seen.containers.find((c) => c.state === 'running' && c.ip)?.ip;
    if (!ip) throw new DriverError(`workload ${name} has no running pod with an IP address; start it first`);
    return { host: ip, port };
  }

  /**
   * The gateway of the bridge network `podman kube play` puts the pods on, where they reach this
   * host (it exists once the first pod ran).
   */
  async hostAddresses(): Promise<string[]> {
    const out = await this.podman.ok(
      ['network', 'inspect', KUBE_NETWORK, '--format', '{{range .Subnets}}{{.Gateway}} {{end}}'],
      `reading the gateway of podman network ${KUBE_NETWORK}`,
    );
    return out.split(/\s+/).filter((a) => isIP(a) !== 0);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.locks.values()]);
  }
}
