/**
 * @module Readiness, liveness and startup probes for host processes (exec, httpGet and tcpSocket
 * against 127.0.0.1: the processes share the host network). Semantics follow Kubernetes: a probe
 * result flips only after `successThreshold` successes or `failureThreshold` failures in a row.
 * On the host network another program may hold the probed port: a tcpSocket or httpGet probe that
 * reached a listener none of the workload's processes holds fails, naming the holder
 * (port-owner.ts).
 */
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { ProbeSpec } from './plan.js';
import { heldElsewhereReason, type WorkloadPorts } from './port-owner.js';

export interface ProbeTarget {
  env: Record<string, string>;
  cwd: string;
  /** The workload's ports: a port probe passes only on a listener of its own processes. */
  ports?: WorkloadPorts;
}

/** A probe attempt's outcome, and why it failed when that is worth saying. */
export interface ProbeResult {
  ok: boolean;
  reason?: string;
}

/** One probe attempt; never rejects (a failure or a timeout is `ok: false`). */
export async function runProbe(spec: ProbeSpec, target: ProbeTarget): Promise<ProbeResult> {
  const a = spec.action;
  if ('exec' in a) return { ok: await execProbe(a.exec, target, spec.timeoutMs) };
  const port = 'http' in a ? a.http.port : a.tcp.port;
  const ok = 'http' in a ? await httpProbe(a.http, spec.timeoutMs) : await tcpProbe(port, spec.timeoutMs);
  const holder = ok ? await target.ports?.heldElsewhere(port) : undefined;
  return holder ? { ok: false, reason: heldElsewhereReason(port, holder) } : { ok };
}

function execProbe(argv: string[], target: ProbeTarget, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let child;
    try {
      // Own group so a timed-out probe can be killed with everything it started.
      child = spawn(argv[0], argv.slice(1), { cwd: target.cwd, env: target.env, stdio: 'ignore', detached: true });
    } catch {
      resolve(false);
      return;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
      resolve(false);
    }, timeoutMs);
    child.once('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code === 0);
    });
  });
}

function httpProbe(
  h: { port: number; path: string; https: boolean; headers: Record<string, string> },
  timeoutMs: number,
): Promise<boolean> {
  return new Promise((resolve) => {
    const req = (h.https ? httpsRequest : httpRequest)(
      // Kubernetes does not verify a probe's certificate either: the point is liveness, not identity.
      {
        host: '127.0.0.1',
        port: h.port,
        path: h.path,
        method: 'GET',
        headers: { 'user-agent': 'outpost-probe', ...h.headers },
        timeout: timeoutMs,
        rejectUnauthorized: false,
        agent: false,
      },
      (res) => {
        res.resume();
        const ok = (res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 400;
        res.on('end', () => resolve(ok));
        res.on('error', () => resolve(ok));
      },
    );
    req.on('timeout', () => req.destroy(new Error('probe timeout')));
    req.on('error', () => resolve(false));
    req.end();
  });
}

function tcpProbe(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/**
 * Runs one probe periodically and reports result flips. `onChange(true)` after successThreshold
 * successes in a row, `onChange(false)` after failureThreshold failures in a row.
 */
export class ProbeLoop {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private successes = 0;
  private failures = 0;
  private state: boolean | undefined;
  /** Why the last attempt failed, when it said (cleared by a success). */
  reason: string | undefined;

  constructor(
    private readonly spec: ProbeSpec,
    private readonly target: ProbeTarget,
    private readonly onChange: (ok: boolean) => void,
  ) {}

  start(): void {
    this.schedule(this.spec.initialDelayMs);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const { ok, reason } = await runProbe(this.spec, this.target);
    if (this.stopped) return;
    this.reason = reason;
    if (ok) {
      this.successes++;
      this.failures = 0;
      if (this.state !== true && this.successes >= this.spec.successThreshold) {
        this.state = true;
        this.onChange(true);
      }
    } else {
      this.failures++;
      this.successes = 0;
      if (this.state !== false && this.failures >= this.spec.failureThreshold) {
        this.state = false;
        this.onChange(false);
      }
    }
    this.schedule(this.spec.periodMs);
  }
}

/** What a process's probes say of it now. */
export interface ProbesView {
  ready: boolean;
  /** It passed its readiness probe in this run and fails it now (a degradation, not a start-up). */
  lostReadiness: boolean;
  /** What it waits for, and why the probe fails when that was said. */
  waiting?: string;
}

/**
 * The probes of one run of a process, as Kubernetes runs them: the startup probe first, then the
 * readiness and liveness probes; a startup or liveness failure goes to `onFail`.
 */
export class ProcessProbes {
  private readonly loops: ProbeLoop[] = [];
  private readiness: ProbeLoop | undefined;
  private startup: ProbeLoop | undefined;
  private readinessOk = false;
  private wasReady = false;
  private startupOk: boolean;

  constructor(
    private readonly specs: { readiness?: ProbeSpec; liveness?: ProbeSpec; startup?: ProbeSpec },
    private readonly target: ProbeTarget,
    private readonly onFail: (which: 'liveness' | 'startup') => void,
  ) {
    this.startupOk = specs.startup === undefined;
  }

  start(): void {
    const startup = this.specs.startup;
    if (!startup) return this.afterStartup();
    this.startup = this.loop(startup, (ok) => {
      if (ok && !this.startupOk) {
        this.startupOk = true;
        this.afterStartup();
      } else if (!ok) this.onFail('startup');
    });
  }

  stop(): void {
    for (const p of this.loops) p.stop();
    this.loops.length = 0;
    this.readinessOk = false;
  }

  get view(): ProbesView {
    const because = (p: ProbeLoop | undefined) => (p?.reason ? `: ${p.reason}` : '');
    const notReady = this.specs.readiness !== undefined && !this.readinessOk;
    const waiting = !this.startupOk
      ? `waiting for the startup probe${because(this.startup)}`
      : notReady
        ? `${this.wasReady ? 'readiness probe failing' : 'waiting for the readiness probe'}${because(this.readiness)}`
        : undefined;
    return { ready: waiting === undefined, lostReadiness: notReady && this.wasReady, waiting };
  }

  private afterStartup(): void {
    if (this.specs.readiness)
      this.readiness = this.loop(this.specs.readiness, (ok) => {
        this.readinessOk = ok;
        this.wasReady ||= ok;
      });
    if (this.specs.liveness) this.loop(this.specs.liveness, (ok) => !ok && this.onFail('liveness'));
  }

  private loop(spec: ProbeSpec, onChange: (ok: boolean) => void): ProbeLoop {
    const p = new ProbeLoop(spec, this.target, onChange);
    this.loops.push(p);
    p.start();
    return p;
  }
}
