/**
 * @module Readiness probes for podman pods. Podman 4.3 ignores `readinessProbe` and turns
 * `livenessProbe` into a healthcheck that only systemd timers would run (none here), so the driver
 * evaluates readiness probes itself when it lists workloads: httpGet and tcpSocket against the
 * pod's bridge IP, exec through `podman exec`. Results are cached per container for the probe's
 * period so a busy caller does not hammer the workload.
 */
import { connect } from 'node:net';
import type { Podman } from './cli.js';
import type { Probe } from './plan.js';

export interface ProbeResult {
  ok: boolean;
  message?: string;
}

interface Cached {
  at: number;
  result: ProbeResult;
}

/** Failures are re-checked sooner than successes so a starting workload turns Ready quickly. */
const FAILURE_RECHECK_MS = 1_000;

/** Named ports were resolved when the unit was planned; a name left here matched no containerPort. */
function portOf(p: number | string | undefined): number | undefined {
  if (typeof p === 'number') return p;
  if (typeof p === 'string' && /^\d+$/.test(p)) return Number(p);
  return undefined;
}

async function tcp(host: string, port: number, timeoutMs: number): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (r: ProbeResult): void => {
      s.destroy();
      resolve(r);
    };
    s.setTimeout(timeoutMs, () => done({ ok: false, message: `tcp ${host}:${port}: timeout` }));
    s.on('connect', () => done({ ok: true }));
    s.on('error', (e) => done({ ok: false, message: `tcp ${host}:${port}: ${e.message}` }));
  });
}

async function http(url: string, timeoutMs: number): Promise<ProbeResult> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
    await res.body?.cancel();
    return res.status >= 200 && res.status < 400
      ? { ok: true }
      : { ok: false, message: `GET ${url}: HTTP ${res.status}` };
  } catch (err) {
    return { ok: false, message: `GET ${url}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

export class ReadinessProber {
  private readonly cache = new Map<string, Cached>();

  constructor(private readonly podman: Podman) {}

  /**
   * Runs (or returns the cached result of) one container's readiness probe; `ip` is the pod's
   * bridge address.
   */
  async check(
    containerId: string,
    startedAt: number,
    probe: Probe,
    ip: string | undefined,
    now = Date.now(),
  ): Promise<ProbeResult> {
    const delayMs = (probe.initialDelaySeconds ?? 0) * 1000;
    if (now - startedAt < delayMs) return { ok: false, message: 'waiting for initialDelaySeconds' };
    const key = `${containerId}@${startedAt}`;
    const cached = this.cache.get(key);
    const periodMs = (probe.periodSeconds ?? 10) * 1000;
    if (cached && now - cached.at < (cached.result.ok ? periodMs : Math.min(periodMs, FAILURE_RECHECK_MS)))
      return cached.result;
    const result = await this.run(containerId, probe, ip);
    this.cache.set(key, { at: now, result });
    return result;
  }

  /** Forgets results of containers that no longer exist. */
  prune(liveIds: Set<string>): void {
    for (const k of this.cache.keys()) if (!liveIds.has(k.split('@')[0])) this.cache.delete(k);
  }

  private async run(containerId: string, probe: Probe, ip: string | undefined): Promise<ProbeResult> {
    const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
    if (probe.exec?.command?.length) {
      const ctl = AbortSignal.timeout(timeoutMs + 5_000);
      const r = await this.podman.run(['exec', containerId, ...probe.exec.command], { signal: ctl });
      return r.code === 0
        ? { ok: true }
        : { ok: false, message: `exec ${probe.exec.command.join(' ')}: exit ${r.code}` };
    }
    const port = portOf(probe.httpGet?.port ?? probe.tcpSocket?.port);
    if (port === undefined) return { ok: false, message: 'probe port is missing or names no declared containerPort' };
    const host = probe.httpGet?.host ?? ip;
    if (!host) return { ok: false, message: 'the pod has no IP address yet' };
    if (probe.httpGet) {
      const path = probe.httpGet.path ?? '/';
      return http(
        `${(probe.httpGet.scheme ?? 'HTTP').toLowerCase()}://${host}:${port}${path.startsWith('/') ? path : `/${path}`}`,
        timeoutMs,
      );
    }
    if (probe.tcpSocket) return tcp(host, port, timeoutMs);
    return { ok: false, message: 'unsupported probe: use exec, httpGet or tcpSocket' };
  }
}
