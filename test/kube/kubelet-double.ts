/**
 * @module TEST DOUBLE of a kubelet's container runtime (used by node-double.ts against the real
 * API server). It runs each container that has a `command` as a real host process: its env comes
 * from the container spec, stdout and stderr become the container log, an exit is a restart (with
 * a short CrashLoopBackOff) under restartPolicy Always, and readiness probes (tcpSocket/httpGet)
 * really connect. Images are not pulled or used, except that an image named `fail:*` never pulls
 * (ErrImagePull/ImagePullBackOff), which is how tests make a Deployment fail. A container without
 * a command is simulated: it is running after the start delay, without a process (like a pause
 * image). All pods share the host network, so `podIP` is 127.0.0.1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { reapWithParent } from './reaper.js';
import type { Obj } from './api.js';

export interface KubeletOptions {
  /** Delay before a new pod's containers start: the time a real node takes to schedule and pull. */
  startDelayMs: number;
  /** First CrashLoopBackOff delay (a real kubelet waits 10 s, doubling up to 5 min). */
  crashBackoffMs: number;
  /** Resolves `valueFrom` references of container env (ConfigMap and Secret keys). */
  lookup: (kind: 'ConfigMap' | 'Secret', ns: string, name: string) => Obj | undefined;
}

interface ContainerRun {
  spec: Obj;
  proc?: ChildProcess;
  startAt: number;
  state: 'waiting' | 'running' | 'terminated';
  reason?: string;
  message?: string;
  exitCode?: number;
  startedAt?: string;
  finishedAt?: string;
  restartCount: number;
  /** The previous run, as `lastState.terminated` on a real kubelet. */
  last?: { exitCode: number; startedAt?: string; finishedAt?: string };
  ready: boolean;
  everStarted: boolean;
  log: string[];
  /** When each line of `log` came (epoch ms), for sinceSeconds and timestamps. */
  logAt: number[];
  followers: Set<(line: string) => void>;
  probing: boolean;
}

interface PodRun {
  ns: string;
  name: string;
  containers: Map<string, ContainerRun>;
  stopping: boolean;
}

const MAX_LOG_LINES = 10_000;
const KILL_GRACE_MS = 2_000;
const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

export class Kubelet {
  private readonly pods = new Map<string, PodRun>();

  constructor(private readonly opts: KubeletOptions) {}

  /**
   * Brings the processes of one pod in line with its spec and returns the pod status to store,
   * or 'gone' once a deleted pod's processes have all exited.
   */
  sync(pod: Obj): Obj | 'gone' {
    const uid = String(pod.metadata.uid);
    let run = this.pods.get(uid);
    if (!run) {
      run = { ns: pod.metadata.namespace, name: pod.metadata.name, containers: new Map(), stopping: false };
      for (const c of pod.spec.containers as Obj[]) run.containers.set(c.name, this.newRun(c));
      this.pods.set(uid, run);
    }
    if (pod.metadata.deletionTimestamp) {
      this.stop(run);
      if ([...run.containers.values()].every((c) => !c.proc)) {
        this.pods.delete(uid);
        return 'gone';
      }
      return this.status(pod, run);
    }
    const restart = pod.spec.restartPolicy ?? 'Always';
    for (const spec of pod.spec.containers as Obj[]) {
      // The only in-place pod change the API allows is an image; a real kubelet restarts that container.
      const c = run.containers.get(spec.name);
      if (c && c.spec.image !== spec.image) {
        c.spec = spec;
        if (c.proc?.pid) process.kill(-c.proc.pid, 'SIGTERM');
      }
    }
    for (const c of run.containers.values()) {
      if (c.state !== 'waiting' || Date.now() < c.startAt) continue;
      if (String(c.spec.image).startsWith('fail:')) {
        c.reason = c.reason === 'ErrImagePull' ? 'ImagePullBackOff' : 'ErrImagePull';
        c.message = `Back-off pulling image "${c.spec.image}"`;
        continue;
      }
      if (c.everStarted && restart === 'Never') continue;
      if (c.everStarted && restart === 'OnFailure' && c.exitCode === 0) continue;
      this.startContainer(run, c, pod);
    }
    for (const c of run.containers.values()) this.probe(c);
    return this.status(pod, run);
  }

  private newRun(spec: Obj): ContainerRun {
    return {
      spec,
      startAt: Date.now() + this.opts.startDelayMs,
      state: 'waiting',
      reason: 'ContainerCreating',
      restartCount: 0,
      ready: false,
      everStarted: false,
      log: [],
      logAt: [],
      followers: new Set(),
      probing: false,
    };
  }

  private env(pod: Obj, c: Obj): Record<string, string> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: '/tmp',
      HOSTNAME: pod.metadata.name,
    };
    for (const e of (c.env ?? []) as Obj[]) {
      if (e.value !== undefined) env[e.name] = String(e.value);
      const cm = e.valueFrom?.configMapKeyRef;
      const sec = e.valueFrom?.secretKeyRef;
      if (cm)
        env[e.name] = String(this.opts.lookup('ConfigMap', pod.metadata.namespace, cm.name)?.data?.[cm.key] ?? '');
      if (sec) {
        const s = this.opts.lookup('Secret', pod.metadata.namespace, sec.name);
        const raw = s?.data?.[sec.key];
        env[e.name] =
          raw !== undefined
            ? Buffer.from(String(raw), 'base64').toString('utf8')
            : String(s?.stringData?.[sec.key] ?? '');
      }
      const field = e.valueFrom?.fieldRef?.fieldPath;
      if (field === 'metadata.name') env[e.name] = pod.metadata.name;
      if (field === 'metadata.namespace') env[e.name] = pod.metadata.namespace;
    }
    return env;
  }

  private startContainer(run: PodRun, c: ContainerRun, pod: Obj): void {
    const argv = [...((c.spec.command ?? []) as string[]), ...((c.spec.args ?? []) as string[])];
    c.log = [];
    c.logAt = [];
    c.everStarted = true;
    c.state = 'running';
    c.reason = undefined;
    c.message = undefined;
    c.startedAt = now();
    c.ready = false;
    if (argv.length === 0) return;
    const proc = spawn(argv[0], argv.slice(1), {
      env: this.env(pod, c.spec),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    c.proc = proc;
    reapWithParent(proc.pid, { group: true });
    const sink = (): ((chunk: Buffer) => void) => {
      let partial = '';
      return (chunk) => {
        const parts = (partial + chunk.toString('utf8')).split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts) this.appendLine(c, line);
      };
    };
    proc.stdout!.on('data', sink());
    proc.stderr!.on('data', sink());
    proc.on('error', (err) => this.appendLine(c, `exec ${argv[0]}: ${err.message}`));
    proc.on('close', (code, signal) => {
      c.proc = undefined;
      c.state = 'terminated';
      c.exitCode = code ?? (signal ? 137 : 128);
      c.finishedAt = now();
      c.last = { exitCode: c.exitCode, startedAt: c.startedAt, finishedAt: c.finishedAt };
      c.ready = false;
      if (run.stopping) return;
      const policy = pod.spec.restartPolicy ?? 'Always';
      if (policy === 'Always' || (policy === 'OnFailure' && c.exitCode !== 0)) {
        c.restartCount++;
        c.state = 'waiting';
        c.reason = 'CrashLoopBackOff';
        c.message = `back-off restarting failed container ${c.spec.name} in pod ${pod.metadata.name}`;
        c.startAt =
          Date.now() + Math.min(this.opts.crashBackoffMs * 2 ** (c.restartCount - 1), 30 * this.opts.crashBackoffMs);
      }
    });
  }

  private appendLine(c: ContainerRun, line: string): void {
    c.log.push(line);
    c.logAt.push(Date.now());
    if (c.log.length > MAX_LOG_LINES) {
      c.log.splice(0, c.log.length - MAX_LOG_LINES);
      c.logAt.splice(0, c.logAt.length - MAX_LOG_LINES);
    }
    for (const f of c.followers) f(line);
  }

  private probe(c: ContainerRun): void {
    if (c.state !== 'running') return;
    const p = c.spec.readinessProbe as Obj | undefined;
    const raw = p?.tcpSocket?.port ?? p?.httpGet?.port;
    if (raw === undefined) {
      c.ready = true;
      return;
    }
    const port =
      typeof raw === 'number'
        ? raw
        : Number(((c.spec.ports ?? []) as Obj[]).find((x) => x.name === raw)?.containerPort ?? raw);
    if (c.probing) return;
    c.probing = true;
    const s = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      s.destroy();
      c.probing = false;
      if (c.state === 'running') c.ready = ok;
    };
    s.setTimeout(1_000, () => done(false));
    s.on('connect', () => done(true));
    s.on('error', () => done(false));
  }

  private stop(run: PodRun): void {
    if (run.stopping) return;
    run.stopping = true;
    for (const c of run.containers.values()) {
      const proc = c.proc;
      if (!proc?.pid) continue;
      const kill = (sig: NodeJS.Signals): void => {
        try {
          process.kill(-proc.pid!, sig);
        } catch {
          // already gone
        }
      };
      kill('SIGTERM');
      setTimeout(() => c.proc === proc && kill('SIGKILL'), KILL_GRACE_MS).unref();
    }
  }

  private status(pod: Obj, run: PodRun): Obj {
    const cs = [...run.containers.entries()].map(([name, c]) => {
      let state: Obj;
      if (c.state === 'running') state = { running: { startedAt: c.startedAt } };
      else if (c.state === 'terminated')
        state = {
          terminated: {
            exitCode: c.exitCode,
            reason: c.exitCode === 0 ? 'Completed' : 'Error',
            startedAt: c.startedAt,
            finishedAt: c.finishedAt,
          },
        };
      else state = { waiting: { reason: c.reason, ...(c.message ? { message: c.message } : {}) } };
      const lastState =
        c.last && c.restartCount > 0
          ? { terminated: { ...c.last, reason: c.last.exitCode === 0 ? 'Completed' : 'Error' } }
          : {};
      return {
        name,
        image: c.spec.image,
        imageID: '',
        ready: c.ready,
        started: c.state === 'running',
        restartCount: c.restartCount,
        state,
        lastState,
      };
    });
    const all = [...run.containers.values()];
    let phase = 'Pending';
    if (all.every((c) => c.state === 'terminated')) phase = all.every((c) => c.exitCode === 0) ? 'Succeeded' : 'Failed';
    else if (all.every((c) => c.everStarted)) phase = 'Running';
    const ready = all.every((c) => c.ready) && !run.stopping;
    const t = now();
    const cond = (type: string, ok: boolean, reason?: string): Obj => ({
      type,
      status: ok ? 'True' : 'False',
      lastProbeTime: null,
      lastTransitionTime: t,
      ...(ok || !reason ? {} : { reason }),
    });
    return {
      phase,
      conditions: [
        cond('PodScheduled', true),
        cond('Initialized', true),
        cond('ContainersReady', ready, 'ContainersNotReady'),
        cond('Ready', ready, 'ContainersNotReady'),
      ],
      hostIP: '127.0.0.1',
      podIP: '127.0.0.1',
      podIPs: [{ ip: '127.0.0.1' }],
      startTime: pod.status?.startTime ?? t,
      containerStatuses: cs,
    };
  }

  // -------------------------------------------------------------------------------------------
  // Logs, exec and test hooks

  private container(ns: string, pod: string, container: string): ContainerRun | undefined {
    for (const run of this.pods.values()) if (run.ns === ns && run.name === pod) return run.containers.get(container);
    return undefined;
  }

  logLines(ns: string, pod: string, container: string): Array<{ line: string; ms: number }> | undefined {
    const c = this.container(ns, pod, container);
    return c?.log.map((line, i) => ({ line, ms: c.logAt[i] }));
  }

  follow(ns: string, pod: string, container: string, onLine: (line: string) => void): (() => void) | undefined {
    const c = this.container(ns, pod, container);
    if (!c) return undefined;
    c.followers.add(onLine);
    return () => c.followers.delete(onLine);
  }

  append(ns: string, pod: string, container: string, line: string): boolean {
    const c = this.container(ns, pod, container);
    if (!c) return false;
    this.appendLine(c, line);
    return true;
  }

  /** Runs a command in the container's environment, as `kubectl exec` would inside the container. */
  exec(ns: string, podObj: Obj, container: string, command: string[]): ChildProcess | string {
    const c = this.container(ns, podObj.metadata.name, container);
    if (!c || c.state !== 'running') return `container ${container} is not running in pod ${podObj.metadata.name}`;
    return spawn(command[0], command.slice(1), { env: this.env(podObj, c.spec), stdio: ['pipe', 'pipe', 'pipe'] });
  }

  /** Stops every process and waits for them to exit (server shutdown). */
  async shutdown(): Promise<void> {
    const waits: Promise<void>[] = [];
    for (const run of this.pods.values()) {
      for (const c of run.containers.values()) {
        const p = c.proc;
        if (p) waits.push(new Promise((resolve) => p.once('close', () => resolve())));
      }
      this.stop(run);
    }
    await Promise.all(waits);
    this.pods.clear();
  }
}
