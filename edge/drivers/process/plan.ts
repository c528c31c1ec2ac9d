/**
 * @module Turns a workload unit's manifests into the host processes to run. Pure: no files, no
 * processes. Anything the process driver cannot honour becomes `error`, a message naming the field
 * and the fix; the driver then reports the workload Failed and runs nothing of it. A data mount it
 * cannot make but the workload can do without becomes a notice (data-mounts.ts).
 */
import { join } from 'node:path';
import type { WorkloadUnit } from '../driver.js';
import { collectConfig, planVolume, resolveEnv, volumeEnvName, expandVars, type VolumePlan } from './config.js';
import { dataMountNotices } from './data-mounts.js';
import type { K8sContainer, K8sObject, K8sPodSpec, K8sProbe } from './k8s-types.js';

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

export interface ProbeSpec {
  action:
    | { exec: string[] }
    | { http: { port: number; path: string; https: boolean; headers: Record<string, string> } }
    | { tcp: { port: number } };
  initialDelayMs: number;
  periodMs: number;
  timeoutMs: number;
  successThreshold: number;
  failureThreshold: number;
}

export interface ProcessPlan {
  /** `container` or `container-REPLICA` for Deployments with more than one replica; names the log file. */
  key: string;
  /** `Pod/NAME` or `Deployment/NAME`. */
  object: string;
  container: string;
  replica: number;
  image?: string;
  argv: string[];
  env: Record<string, string>;
  workingDir: string;
  restartPolicy: RestartPolicy;
  ports: number[];
  graceMs: number;
  readiness?: ProbeSpec;
  liveness?: ProbeSpec;
  startup?: ProbeSpec;
}

export interface ObjectPlan {
  key: string;
  kind: 'Pod' | 'Deployment';
  replicas: number;
}

export interface WorkloadPlan {
  objects: ObjectPlan[];
  processes: ProcessPlan[];
  volumes: VolumePlan[];
  /** Why the unit cannot run here; when set, nothing runs. */
  error?: string;
  /** What the driver does not honour yet runs without (data-mounts.ts): said in the status message. */
  notices: string[];
}

export const DEFAULT_GRACE_MS = 10_000;
const PASSIVE_KINDS = new Set(['ConfigMap', 'Secret', 'Service']);
/** Variables from the agent's environment a host process inherits; the rest (tokens, agent settings) stays private. */
const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'];

export interface PlanContext {
  workloadDir: string;
  agentEnv: NodeJS.ProcessEnv;
}

export function planWorkload(unit: WorkloadUnit, ctx: PlanContext): WorkloadPlan {
  const plan: WorkloadPlan = { objects: [], processes: [], volumes: [], notices: dataMountNotices(unit.manifests) };
  const fail = (error: string): WorkloadPlan => ({ ...plan, processes: [], error });
  const objects = unit.manifests as unknown as K8sObject[];
  const src = collectConfig(objects);
  const base: Record<string, string> = {};
  for (const k of INHERITED_ENV) if (ctx.agentEnv[k] !== undefined) base[k] = ctx.agentEnv[k]!;
  const seenContainers = new Set<string>();

  for (const o of objects) {
    const ref = `${o.kind}/${o.metadata?.name}`;
    if (PASSIVE_KINDS.has(o.kind)) continue;
    if (o.kind !== 'Pod' && o.kind !== 'Deployment') {
      return fail(
        `${ref}: kind ${o.kind} is not supported by the process driver; use a Pod or a Deployment (with ConfigMaps and Secrets), or place this workload on an edge with the podman or kubernetes driver`,
      );
    }
    const isDeployment = o.kind === 'Deployment';
    const pod: K8sPodSpec | undefined = isDeployment ? o.spec?.template?.spec : o.spec;
    const podPath = isDeployment ? 'spec.template.spec' : 'spec';
    if (!pod?.containers?.length)
      return fail(`${ref}: ${podPath}.containers is empty; declare at least one container with a command`);
    if (pod.initContainers?.length)
      return fail(
        `${ref}: ${podPath}.initContainers are not supported by the process driver; run the setup steps at the start of the container's command`,
      );
    const replicas = isDeployment ? (o.spec?.replicas ?? 1) : 1;
    if (!Number.isInteger(replicas) || replicas < 0) return fail(`${ref}: spec.replicas must be a whole number >= 0`);
    const restartPolicy = (pod.restartPolicy ?? 'Always') as RestartPolicy;
    if (!['Always', 'OnFailure', 'Never'].includes(restartPolicy))
      return fail(`${ref}: ${podPath}.restartPolicy "${restartPolicy}" must be Always, OnFailure or Never`);
    if (isDeployment && restartPolicy !== 'Always')
      return fail(`${ref}: ${podPath}.restartPolicy must be Always for a Deployment; remove it or use a Pod`);
    const graceMs =
      pod.terminationGracePeriodSeconds === undefined
        ? DEFAULT_GRACE_MS
        : Math.max(0, pod.terminationGracePeriodSeconds * 1000);

    const volumeDirs = new Map<string, string>();
    for (const [i, v] of (pod.volumes ?? []).entries()) {
      const vp = planVolume(`${ref}: ${podPath}.volumes[${i}]`, v, src, join(ctx.workloadDir, 'volumes'));
      if ('error' in vp) return fail(vp.error);
      if (
        plan.volumes.some(
          (x) => x.name === vp.name && x.dir === vp.dir && JSON.stringify(x.files) !== JSON.stringify(vp.files),
        )
      ) {
        return fail(
          `${ref}: volume "${vp.name}" is declared differently by two objects of the workload; give the volumes different names`,
        );
      }
      plan.volumes.push(vp);
      volumeDirs.set(vp.name, vp.dir);
    }

    plan.objects.push({ key: ref, kind: o.kind, replicas });
    for (const [ci, c] of pod.containers.entries()) {
      const at = `${ref}: ${podPath}.containers[${ci}]`;
      const cname = c.name ?? '';
      if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(cname))
        return fail(`${at}.name "${cname}" must be a DNS-1123 label such as "web"`);
      if (seenContainers.has(cname))
        return fail(
          `${at}.name "${cname}" is used twice in the workload; logs and exec address containers by name, so rename one`,
        );
      seenContainers.add(cname);
      const r = planContainer(at, c, {
        replicas,
        isDeployment,
        restartPolicy,
        graceMs,
        object: ref,
        objectName: o.metadata.name,
        workload: unit.name,
        base,
        src,
        volumeDirs,
        ctx,
      });
      if ('error' in r) return fail(r.error);
      plan.processes.push(...r.processes);
    }
  }
  if (plan.objects.length === 0)
    return fail('the workload has no Pod or Deployment; add one with a container that has a command');
  return plan;
}

interface ContainerCtx {
  replicas: number;
  isDeployment: boolean;
  restartPolicy: RestartPolicy;
  graceMs: number;
  object: string;
  objectName: string;
  workload: string;
  base: Record<string, string>;
  src: ReturnType<typeof collectConfig>;
  volumeDirs: Map<string, string>;
  ctx: PlanContext;
}

function planContainer(
  at: string,
  c: K8sContainer,
  cc: ContainerCtx,
): { processes: ProcessPlan[] } | { error: string } {
  if (!Array.isArray(c.command) || c.command.length === 0 || typeof c.command[0] !== 'string' || c.command[0] === '') {
    return {
      error: `${at}.command is required by the process driver (it runs host processes and ignores image); set command: ["/path/to/program"] and args`,
    };
  }
  if (c.args !== undefined && !Array.isArray(c.args)) return { error: `${at}.args must be a list of strings` };
  const ports: number[] = [];
  const namedPorts = new Map<string, number>();
  for (const [pi, p] of (c.ports ?? []).entries()) {
    if (!Number.isInteger(p.containerPort) || p.containerPort! < 1 || p.containerPort! > 65535)
      return { error: `${at}.ports[${pi}].containerPort must be a port number 1-65535` };
    ports.push(p.containerPort!);
    if (p.name) namedPorts.set(p.name, p.containerPort!);
  }
  if (cc.replicas > 1 && ports.length > 0) {
    return {
      error: `${cc.object}: replicas > 1 with containerPort ${ports[0]} cannot share the host port; use replicas: 1 or no port`,
    };
  }
  const volumeEnv: Record<string, string> = {};
  for (const [mi, m] of (c.volumeMounts ?? []).entries()) {
    const dir = cc.volumeDirs.get(m.name ?? '');
    if (dir === undefined)
      return {
        error: `${at}.volumeMounts[${mi}].name "${m.name}" is not a volume of the pod; add it to volumes or fix the name`,
      };
    volumeEnv[volumeEnvName(m.name!)] = dir;
  }
  const fields = {
    'metadata.name': cc.objectName,
    'metadata.namespace': 'default',
    'status.podIP': '127.0.0.1',
    'status.hostIP': '127.0.0.1',
    'spec.nodeName': 'localhost',
  };
  const resolved = resolveEnv(at, c.env, c.envFrom, cc.src, fields);
  if ('error' in resolved) return resolved;

  const probes: Partial<Record<'readiness' | 'liveness' | 'startup', ProbeSpec>> = {};
  for (const kind of ['readiness', 'liveness', 'startup'] as const) {
    const p = c[`${kind}Probe`];
    if (p === undefined) continue;
    const r = planProbe(`${at}.${kind}Probe`, p, namedPorts);
    if ('error' in r) return r;
    probes[kind] = r;
  }

  const workingDir = c.workingDir ?? join(cc.ctx.workloadDir, 'work');
  if (!workingDir.startsWith('/')) return { error: `${at}.workingDir must be an absolute path` };
  const processes: ProcessPlan[] = [];
  for (let replica = 0; replica < cc.replicas; replica++) {
    const env: Record<string, string> = {
      ...cc.base,
      OUTPOST_WORKLOAD: cc.workload,
      OUTPOST_CONTAINER: c.name!,
      OUTPOST_REPLICA: String(replica),
      ...volumeEnv,
      ...resolved.env,
    };
    const argv = [...c.command, ...(c.args ?? [])].map((s) => expandVars(String(s), env));
    processes.push({
      key: cc.replicas > 1 ? `${c.name}-${replica}` : c.name!,
      object: cc.object,
      container: c.name!,
      replica,
      image: c.image,
      argv,
      env,
      workingDir,
      restartPolicy: cc.restartPolicy,
      ports,
      graceMs: cc.graceMs,
      ...probes,
    });
  }
  return { processes };
}

function planProbe(at: string, p: K8sProbe, namedPorts: Map<string, number>): ProbeSpec | { error: string } {
  const num = (v: number | undefined, def: number, min: number, field: string): number | string => {
    if (v === undefined) return def;
    if (typeof v !== 'number' || !(v >= min)) return `${at}.${field} must be a number >= ${min}`;
    return v;
  };
  const port = (v: number | string | undefined, field: string): number | string => {
    const n = typeof v === 'string' ? (namedPorts.get(v) ?? (/^\d+$/.test(v) ? Number(v) : undefined)) : v;
    if (n === undefined || !Number.isInteger(n) || n < 1 || n > 65535)
      return `${at}.${field} must be a port number or the name of a declared port`;
    return n;
  };
  const nums = {
    initialDelay: num(p.initialDelaySeconds, 0, 0, 'initialDelaySeconds'),
    period: num(p.periodSeconds, 10, 0.05, 'periodSeconds'),
    timeout: num(p.timeoutSeconds, 1, 0.05, 'timeoutSeconds'),
    success: num(p.successThreshold, 1, 1, 'successThreshold'),
    failure: num(p.failureThreshold, 3, 1, 'failureThreshold'),
  };
  for (const v of Object.values(nums)) if (typeof v === 'string') return { error: v };
  let action: ProbeSpec['action'];
  if (p.exec) {
    if (!p.exec.command?.length) return { error: `${at}.exec.command must be a non-empty list` };
    action = { exec: p.exec.command.map(String) };
  } else if (p.httpGet) {
    const n = port(p.httpGet.port, 'httpGet.port');
    if (typeof n === 'string') return { error: n };
    const headers: Record<string, string> = {};
    for (const h of p.httpGet.httpHeaders ?? []) headers[h.name] = h.value;
    action = {
      http: {
        port: n,
        path: p.httpGet.path ?? '/',
        https: (p.httpGet.scheme ?? 'HTTP').toUpperCase() === 'HTTPS',
        headers,
      },
    };
  } else if (p.tcpSocket) {
    const n = port(p.tcpSocket.port, 'tcpSocket.port');
    if (typeof n === 'string') return { error: n };
    action = { tcp: { port: n } };
  } else {
    return { error: `${at} needs exec, httpGet or tcpSocket (grpc probes are not supported by the process driver)` };
  }
  return {
    action,
    initialDelayMs: (nums.initialDelay as number) * 1000,
    periodMs: (nums.period as number) * 1000,
    timeoutMs: (nums.timeout as number) * 1000,
    successThreshold: nums.success as number,
    failureThreshold: nums.failure as number,
  };
}
