/**
 * @module The kubernetes runtime driver: runs a workload unit on a Kubernetes cluster (k3s on the
 * edge device, or the cluster the agent runs in) through its API server.
 *
 * - apply: server-side apply of every manifest with field manager `outpost` and force, each object
 *   labelled `outpost.dev/workload`, `outpost.dev/hash`, `outpost.dev/generation` (pod templates
 *   get the workload label only, see objects.ts); namespaces as described in objects.ts; then
 *   owned objects no longer in the unit are deleted (prune). Unchanged hash on the live objects:
 *   no write at all. A unit the API server rejects (invalid, unknown kind) does not throw: the
 *   workload is reported Failed with the server's message; an unreachable server throws.
 * - readiness and phases: observe.ts, one workload's observation: report.ts. Restarts: container
 *   restarts of the workload's pods.
 * - drift (drift.ts): objects someone else changed or deleted make the workload Modified, and an
 *   apply of the same hash applies them again instead of skipping. A CRD is waited for until
 *   Established before the custom resources after it.
 * - stop scales Deployments to 0 and deletes Pods; start re-applies the last unit; restart rolls
 *   Deployments (pod-template annotation, like `kubectl rollout restart`) and recreates Pods.
 * - logs and exec go through the API server (io.ts); with several pods, the first ready one.
 * - endpoint: the pod IP of a ready pod that declares the port. Reachable when the agent runs on
 *   a node of the cluster or inside it (the edge case: single-node k3s); otherwise use the API
 *   server's pod proxy instead of the endpoint.
 * - interconnect imports (imports.ts): a Service and Endpoints per import the edge consumes,
 *   pointing at the address of this host the pods reach (hostAddresses) where the agent listens.
 *
 * Where the parts are: connect.ts loads the kubeconfig and checks the server answers; objects.ts
 * turns a unit into the objects to apply; cluster.ts makes the calls on the API server's objects
 * (list owned, apply, delete, waits); apply.ts applies a unit; actions.ts stops, starts and restarts
 * on request; imports.ts publishes interconnect imports where host-address.ts says the pods reach this host; pods.ts picks the pod for logs, exec and the endpoint; state.ts is what the data dir
 * keeps; observe.ts, drift.ts and report.ts make the status.
 *
 * @example
 * const driver = createKubernetesDriver({ kubeconfig: '/etc/rancher/k3s/k3s.yaml', dataDir });
 * await driver.start();
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { KubernetesObjectApi, type KubeConfig } from '@kubernetes/client-node';
import { createLogger } from '../../../core/logger.js';
import {
  DriverError,
  type Driver,
  type Endpoint,
  type ExecOptions,
  type ExecResult,
  type InteractiveExec,
  type ImportOwner,
  type InteractiveExecOptions,
  type LogOptions,
  type PublishedImport,
  type WorkloadObservation,
  type WorkloadUnit,
} from '../driver.js';
import { restartOnRequest, startOnRequest, stopOnRequest } from './actions.js';
import { applyUnit } from './apply.js';
import { deleteObjects, owned, waitGone, type KubernetesContext } from './cluster.js';
import { connectCluster, defaultKubeconfigExists } from './connect.js';
import { nodeAddress } from './host-address.js';
import { publishImports } from './imports.js';
import { execInPod, execInPodInteractive, podLogLines } from './io.js';
import { LABEL_WORKLOAD, type KObj } from './objects.js';
import { containerOf, pickPod, podEndpoint } from './pods.js';
import { observeWorkload } from './report.js';
import { StateDir } from './state.js';

export interface KubernetesDriverOptions {
  /** Path of a kubeconfig. Default: in-cluster config when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config. */
  kubeconfig?: string;
  /**
   * Without `kubeconfig`: the admin kubeconfig of the cluster whose control plane this edge runs
   * (docs/clusters.md), asked before each use. While it names one the driver targets that cluster;
   * the driver then connects on first use (and again when the file changes), so the agent starts
   * before its cluster is made or while its components come back after a reboot.
   */
  clusterKubeconfig?: () => string | undefined;
  dataDir: string;
  /** How long `remove` and pod replacement wait for objects to be gone. Default 60 s. */
  deleteTimeoutMs?: number;
  /**
   * The address of this host the cluster's pods reach it at, for interconnect imports
   * (`outpost edge --interconnect-address`); default: a Node's InternalIP that is one of this host's.
   */
  interconnectAddress?: string;
}

const log = createLogger('edge:driver:kubernetes');

export function createKubernetesDriver(opts: KubernetesDriverOptions): Driver {
  return new KubernetesDriver(opts);
}

/** The edge was enrolled without a kubeconfig and runs no cluster's control plane (yet). */
class NoCluster extends DriverError {}

/** The driver is the context its parts work with (cluster.ts `KubernetesContext`). */
class KubernetesDriver implements Driver, KubernetesContext {
  readonly name = 'kubernetes' as const;
  private kc?: KubeConfig;
  private api?: KubernetesObjectApi;
  readonly state: StateDir;
  readonly deleteTimeoutMs: number;

  constructor(private readonly opts: KubernetesDriverOptions) {
    this.state = new StateDir(join(opts.dataDir, 'kubernetes'));
    this.deleteTimeoutMs = opts.deleteTimeoutMs ?? 60_000;
  }

  async start(): Promise<void> {
    if (this.opts.clusterKubeconfig && !this.opts.kubeconfig) {
      // An edge that carries (or is to carry) a cluster: it may not answer yet; connected on first use.
      const file = this.opts.clusterKubeconfig();
      if (file || !defaultKubeconfigExists()) {
        log.info(
          { kubeconfig: file },
          file
            ? 'kubernetes driver started: it targets the cluster whose control plane this edge runs'
            : 'kubernetes driver started: no cluster yet; it targets the one whose control plane this edge will run',
        );
        return;
      }
    }
    await this.connect(this.opts.kubeconfig);
    const adopted = await this.list();
    log.info(
      { server: this.kc?.getCurrentCluster()?.server, workloads: adopted.map((w) => w.name) },
      'kubernetes driver started',
    );
  }

  /** Where the driver's kubeconfig came from when it last connected: path and modification time. */
  private connectedTo: string | undefined;

  private async connect(file: string | undefined): Promise<void> {
    const { kc } = await connectCluster(file);
    this.kc = kc;
    this.api = KubernetesObjectApi.makeApiClient(kc);
  }

  /**
   * Before each use with a cluster resolver: connected to the cluster's API as its kubeconfig is
   * now (a cluster deleted and made again has another CA). A failed connection is tried again
   * at the next use.
   */
  private async ready(): Promise<void> {
    if (!this.opts.clusterKubeconfig || this.opts.kubeconfig) return;
    const file = this.opts.clusterKubeconfig();
    if (!file) {
      if (this.api && !this.connectedTo) return; // the default kubeconfig, as started
      this.api = undefined;
      this.kc = undefined;
      this.connectedTo = undefined;
      throw new NoCluster(
        "this edge runs no cluster's control plane yet, and was enrolled without a kubeconfig: make its Cluster (docs/clusters.md) or enroll it with --kubeconfig",
      );
    }
    let stamp: string;
    try {
      stamp = `${file}@${statSync(file).mtimeMs}`;
    } catch (err) {
      throw new DriverError(`cannot read the cluster's kubeconfig ${file}`, { cause: err });
    }
    if (this.api && this.connectedTo === stamp) return;
    this.api = undefined;
    this.connectedTo = undefined;
    await this.connect(file);
    this.connectedTo = stamp;
    log.info(
      { kubeconfig: file, server: this.kc?.getCurrentCluster()?.server },
      "kubernetes driver connected to the edge's cluster",
    );
  }

  client(): KubernetesObjectApi {
    if (!this.api) throw new DriverError('the kubernetes driver is not started; call start() first');
    return this.api;
  }

  async apply(unit: WorkloadUnit): Promise<void> {
    await this.ready();
    await applyUnit(this, unit, false);
  }

  async remove(name: string): Promise<void> {
    await this.ready();
    const { objects } = await owned(this, `${LABEL_WORKLOAD}=${name}`, true);
    // Namespaces last: deleting one first would take the rest with it before we could name them.
    const ordered = [
      ...objects.filter((o) => o.kind !== 'Namespace'),
      ...objects.filter((o) => o.kind === 'Namespace'),
    ];
    await deleteObjects(this, ordered);
    if (!(await waitGone(this, ordered)))
      log.warn(
        { workload: name },
        `objects of ${name} are still terminating after ${this.deleteTimeoutMs} ms; they are no longer reported`,
      );
    await this.state.delete(name);
  }

  async list(): Promise<WorkloadObservation[]> {
    try {
      await this.ready();
    } catch (err) {
      // Nothing runs on a cluster that is not there (a cluster that does not answer yet throws).
      if (err instanceof NoCluster) return [];
      throw err;
    }
    const { objects, pods } = await owned(this, LABEL_WORKLOAD);
    const records = new Map((await this.state.all()).map((r) => [r.unit.name, r]));
    const byWorkload = new Map<string, KObj[]>();
    for (const o of objects) {
      const w = o.metadata.labels?.[LABEL_WORKLOAD];
      if (w) byWorkload.set(w, [...(byWorkload.get(w) ?? []), o]);
    }
    const names = new Set([
      ...byWorkload.keys(),
      ...[...records.values()].filter((r) => r.stopped || r.error).map((r) => r.unit.name),
    ]);
    return [...names].sort().map((name) =>
      observeWorkload(
        name,
        byWorkload.get(name) ?? [],
        pods.filter((p) => p.metadata.labels?.[LABEL_WORKLOAD] === name),
        records.get(name),
      ),
    );
  }

  async stopWorkload(name: string): Promise<void> {
    await this.ready();
    await stopOnRequest(this, name);
  }

  async startWorkload(name: string): Promise<void> {
    await this.ready();
    await startOnRequest(this, name);
  }

  async restartWorkload(name: string): Promise<void> {
    await this.ready();
    await restartOnRequest(this, name);
  }

  async *logs(name: string, opts: LogOptions): AsyncIterable<string> {
    await this.ready();
    const pod = await pickPod(this, name);
    yield* podLogLines(this.kc!, pod, containerOf(pod, opts.container), opts);
  }

  async exec(name: string, command: string[], opts: ExecOptions): Promise<ExecResult> {
    await this.ready();
    if (command.length === 0) throw new DriverError('exec needs a command, e.g. ["sh", "-c", "echo hi"]');
    const pod = await pickPod(this, name);
    return execInPod(this.kc!, pod, containerOf(pod, opts.container), command, opts.signal);
  }

  async execInteractive(name: string, command: string[], opts: InteractiveExecOptions): Promise<InteractiveExec> {
    await this.ready();
    if (command.length === 0) throw new DriverError('exec needs a command, e.g. ["sh"]');
    const pod = await pickPod(this, name);
    return execInPodInteractive(this.kc!, pod, containerOf(pod, opts.container), command, opts);
  }

  async endpoint(name: string, port: number): Promise<Endpoint | null> {
    await this.ready();
    return podEndpoint(this, name, port);
  }

  async hostAddresses(): Promise<string[]> {
    if (this.opts.interconnectAddress) return [this.opts.interconnectAddress];
    await this.ready();
    return [await nodeAddress(this)];
  }

  async publishImports(imports: PublishedImport[], owner: ImportOwner): Promise<Record<string, string>> {
    await this.ready();
    return publishImports(this, imports, owner);
  }

  async close(): Promise<void> {
    this.api = undefined;
    this.kc = undefined;
  }
}
