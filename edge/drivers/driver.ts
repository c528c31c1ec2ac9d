/**
 * @module The seam between the edge reconciler and a local runtime. One interface, three
 * implementations (process, podman, kubernetes), one acceptance suite (`test/fixtures/driver-suite.ts`)
 * that each implementation runs.
 *
 * Contract, in the words the reconciler relies on:
 * - `apply` is idempotent: applying a unit whose `hash` equals what is running does nothing
 *   (no restart). A different hash replaces the workload's objects.
 * - Workloads survive the agent: after the agent process dies (even kill -9) and a new driver
 *   is started on the same data directory, `list()` reports the workloads still running, adopted
 *   with their hash, and they were not restarted.
 * - `remove` is idempotent and removes every object the workload owns.
 * - `list` reports only workloads that Outpost owns (by label/state file), never foreign ones.
 * - `execInteractive` is optional (`outpost exec -it` needs it). It resolves once the command
 *   runs (rejects with a DriverError when the workload or container is not there); bytes written
 *   to `stdin` reach the command and ending `stdin` is its end of input; `stdout`/`stderr` end
 *   before `exit` settles, so a caller that awaits `exit` has seen all output. `exit` resolves
 *   with the exit code (128 + signal number for a signal, as a shell reports it), or rejects when
 *   the runtime lost the session without one. Aborting `signal` ends the command (and what it
 *   started) and settles `exit`. With `tty`, the runtime allocates a terminal when it can (then
 *   stderr arrives merged into stdout); a driver that cannot says so in docs/tunnel.md.
 */
import type { DriverName } from '../../core/driver-kinds.js';
import type { Manifest } from '../../core/resources.js';
import type { ObjectStatus } from '../../core/mailbox.js';
import type { ReportedPhase } from '../../core/status.js';

export type { DriverName };

export interface WorkloadUnit {
  /** Workload name, unique on the edge (DNS-1123 label). */
  name: string;
  /** The hub's generation for this workload on this edge; reported back as observedGeneration. */
  generation: number;
  /** Customized manifests with local overrides applied. Pod, Deployment, ConfigMap, Secret, Service... */
  manifests: Manifest[];
  /** Stable hash of `manifests`: the driver compares it to decide whether anything must change. */
  hash: string;
}

export interface WorkloadObservation {
  name: string;
  /** Generation of the unit the running objects came from. */
  generation: number;
  hash: string;
  phase: ReportedPhase;
  message?: string;
  /** Total container/process restarts since the workload was applied. */
  restarts: number;
  /** Keyed `Kind/name` (and `Kind/name/container` where useful). */
  objects: Record<string, ObjectStatus>;
  /**
   * Drift: applied objects or fields someone else changed or deleted (`Deployment/web:
   * spec.replicas`), with phase Modified unless something worse. The reconciler applies the unit
   * again, and the driver puts them back (kubernetes: changed or deleted objects; podman: pods
   * removed and containers left down on site; process: none).
   */
  modified?: string[];
  /**
   * Stopped on request (`stopWorkload`), until `startWorkload` or an apply of another version; the
   * driver keeps it across agent restarts, phase Paused. The reconciler starts such a workload
   * when nothing holds it stopped any more (no remote stop, no pause on site).
   */
  stopped?: boolean;
}

export interface LogOptions {
  container?: string;
  tail?: number;
  follow?: boolean;
  signal?: AbortSignal;
  /** Only lines written at or after this time (epoch ms on the edge's clock): `logs --since`. */
  sinceMs?: number;
  /** Prefix each line with its RFC 3339 time: `logs --timestamps`. */
  timestamps?: boolean;
}

export interface ExecOptions {
  container?: string;
  signal?: AbortSignal;
}

export interface InteractiveExecOptions extends ExecOptions {
  /** Ask for a terminal (`outpost exec -t`). */
  tty?: boolean;
  /** The client's terminal size, set on the session's terminal (default 80x24). */
  size?: { cols: number; rows: number };
}

/** A running interactive command; see the contract above. */
export interface InteractiveExec {
  stdin: NodeJS.WritableStream;
  stdout: NodeJS.ReadableStream;
  stderr: NodeJS.ReadableStream;
  exit: Promise<number>;
}

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** A TCP endpoint of a workload that the service proxy may reach (declared containerPort). */
export interface Endpoint {
  host: string;
  port: number;
}

/** An interconnect import this edge consumes, listened for at `address:port` (edge/interconnect/listeners.ts). */
export interface PublishedImport {
  /** The ServiceImport's name. */
  name: string;
  port: number;
  /** The address of this host (of `hostAddresses`) the listener is bound on. */
  address: string;
}

/** Whose the objects `publishImports` makes are: this edge of this project. */
export interface ImportOwner {
  edge: string;
  project: string;
}

export interface Driver {
  readonly name: DriverName;
  /** Connect to the runtime and adopt what is already running. Throws a clear error if the runtime is unusable. */
  start(): Promise<void>;
  apply(unit: WorkloadUnit): Promise<void>;
  remove(name: string): Promise<void>;
  list(): Promise<WorkloadObservation[]>;
  /** Stop a running workload without forgetting it (remote action `stop`); `apply` or `startWorkload` brings it back. */
  stopWorkload(name: string): Promise<void>;
  startWorkload(name: string): Promise<void>;
  restartWorkload(name: string): Promise<void>;
  logs(name: string, opts: LogOptions): AsyncIterable<string>;
  exec(name: string, command: string[], opts: ExecOptions): Promise<ExecResult>;
  /** A command with stdin and output as it comes (`outpost exec -it`); optional, see the contract above. */
  execInteractive?(name: string, command: string[], opts: InteractiveExecOptions): Promise<InteractiveExec>;
  /** Where a declared port of a workload listens, for the service proxy; null if not declared. */
  endpoint(name: string, port: number): Promise<Endpoint | null>;
  /**
   * Addresses of this host the driver's workloads reach it at, besides 127.0.0.1 (which
   * host-network workloads share): an interconnect import listens there too
   * (edge/interconnect/listeners.ts). Absent: loopback only.
   */
  hostAddresses?(): Promise<string[]>;
  /**
   * Makes the interconnect imports this edge listens for reachable by name to the driver's
   * workloads (kubernetes: a Service and its Endpoints each, edge/drivers/kubernetes/imports.ts),
   * and removes what it made for imports of `owner` not listed. Called again periodically: it
   * puts back what someone changed, and never writes over an object it did not make. Resolves
   * with a problem per import it could not publish; throws when it could do nothing. Absent:
   * the workloads reach the imports at the addresses only.
   */
  publishImports?(imports: PublishedImport[], owner: ImportOwner): Promise<Record<string, string>>;
  /** Release resources held by the driver. Workloads keep running. */
  close(): Promise<void>;
}

/**
 * The status message of a workload stopped on request, every driver's: what runs it again, as the
 * operator does it. Not an apply: the reconciler applies nothing to a workload held stopped (a
 * remote `stop`) or paused on site, a new revision included; the start it does on `start` or
 * `resume` applies a newer revision if there is one. Which of the two stopped it a driver cannot
 * tell, so both are named.
 */
export function stoppedOnRequest(name: string): string {
  return `stopped on request; runs again on a start (\`outpost edge action EDGE start ${name}\`, or \`outpost edge local resume ${name}\` after a pause on site), not on an apply`;
}

export class DriverError extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = 'DriverError';
  }
}
