/**
 * @module Turning a workload unit into what `podman kube play` (4.3) runs correctly. Pure: no
 * podman, no files; the driver carries out the plan.
 *
 * What podman 4.3 gets wrong or differently from Kubernetes, and what the plan does about it
 * (each measured on Debian 12's podman 4.3.1):
 * - Ownership: labels `outpost.dev/{owner,workload,hash,generation}` go on each Pod's metadata and
 *   each Deployment's pod template (podman labels the pods it creates from a Deployment with the
 *   template's labels only, and copies pod labels to the containers).
 * - A containerPort without hostPort is published on 0.0.0.0 with the same host port: two
 *   workloads declaring port 80 collide, and every port is open to the network, unlike Kubernetes.
 *   Such ports are dropped from the played YAML; the service proxy reaches them on the pod's
 *   bridge IP (`endpoint`). Ports with an explicit hostPort stay published.
 * - Secret manifests are stored as YAML podman secrets, but env lookups (secretKeyRef/secretRef)
 *   parse a secret as a JSON `{key: base64}` map and fail ("not valid JSON"). The plan creates
 *   those secrets itself in the JSON form under workload-scoped names and rewrites references.
 * - ConfigMap and Secret volumes become global named volumes that are filled once and never
 *   updated or removed (and a secret volume without `optional` crashes podman 4.3). The plan
 *   writes their files itself and mounts them as read-only hostPath directories per unit hash.
 * - Annotation values past 63 characters are refused ("value length exceeds Kubernetes max 63").
 *   The outpost.dev annotations (the egress declaration of docs/data.md is longer) are the edge's
 *   own and never reach podman (../outpost-annotations.ts); a pull Secret's are read first.
 */
import { stringify } from 'yaml';
import { podTemplates } from '../../../core/manifest.js';
import { DOCKER_CONFIG_KEY, DOCKER_CONFIG_TYPE, registryTlsOf } from '../../../core/images.js';
import type { WorkloadUnit } from '../driver.js';
import { withoutOutpostAnnotations } from '../outpost-annotations.js';

export const LABEL_OWNER = 'outpost.dev/owner';
export const LABEL_WORKLOAD = 'outpost.dev/workload';
export const LABEL_HASH = 'outpost.dev/hash';
export const LABEL_GENERATION = 'outpost.dev/generation';
/** The Pod or Deployment (its manifest name) a pod was made from: podman's pod names carry more. */
export const LABEL_TEMPLATE = 'outpost.dev/template';

/**
 * The podman name of a pod (or of a Deployment, whose pods podman names `NAME-pod-N`):
 * `NAME-OWNER-VERSION`, OWNER the first 8 characters of the edge's owner id (one per data
 * directory) and VERSION the first 8 of the unit hash. Two edges on one host never collide, and a
 * new version is created next to the running one before that one is removed.
 */
export function podName(name: string, owner: string, hash: string): string {
  return `${name}-${owner.slice(0, 8)}-${hash.replace(/[^a-z0-9]/g, '').slice(0, 8)}`;
}

/**
 * The pods a Pod or Deployment template makes, by the names status shows them under (scan.ts
 * `displayName`): the template's name for a Pod, `NAME-pod-0..` for a Deployment's `replicas`.
 */
export function templatePodNames(t: { kind: string; name: string; replicas: number }): string[] {
  return t.kind === 'Deployment' ? Array.from({ length: t.replicas }, (_, i) => `${t.name}-pod-${i}`) : [t.name];
}

/** The podman volume name of a PersistentVolumeClaim: `CLAIM-OWNER`, kept across versions. */
export function claimVolumeName(claim: string, owner: string): string {
  return `${claim}-${owner.slice(0, 8)}`;
}

/** Kinds podman kube play runs; Secret is handled by the driver, Service is the hub proxy's business. */
const PLAYED_KINDS = new Set(['Pod', 'Deployment', 'ConfigMap', 'PersistentVolumeClaim']);
const IGNORED_KINDS = new Set(['Service']);

/** Podman's own default stop timeout; Kubernetes' 30 s would make every replace slow. */
export const DEFAULT_GRACE_SECONDS = 10;

export interface Probe {
  exec?: { command?: string[] };
  httpGet?: { path?: string; port?: number | string; scheme?: string; host?: string };
  tcpSocket?: { port?: number | string };
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
}

export interface PlannedFile {
  /** Relative to the volume directory. */
  path: string;
  content: Buffer;
  mode: number;
}

export interface PlannedVolume {
  /** Directory relative to the unit's volume root: `<pod template>/<volume>`. */
  dir: string;
  files: PlannedFile[];
}

export interface PlannedSecret {
  name: string;
  /** JSON `{key: base64}`, the form podman 4.3's env lookup parses. */
  data: string;
}

/**
 * What pulling the plan's images needs from the registries they name: the auths of the
 * `kubernetes.io/dockerconfigjson` Secrets the pods list in imagePullSecrets (the hub adds one for
 * the project's Registry objects, core/images.ts), the CA bundles and the hosts not verified.
 */
export interface PullAccess {
  /** The auth.json text (`{"auths": {...}}`), as podman's --authfile reads it. */
  authJson: string;
  /** PEM CA bundles by registry host. */
  ca: Map<string, string>;
  insecure: Set<string>;
}

/** One pod of the plan, on its own: what an apply plays to recreate a pod removed on site (apply.ts). */
export interface PlannedPod {
  /** As status shows it (`templatePodNames`). */
  name: string;
  /** Podman's name for it: `NAME-OWNER-VERSION`, `NAME-OWNER-VERSION-pod-N` for a Deployment's. */
  podmanName: string;
  /** A Pod document that makes this pod as `yaml` makes it (a Deployment's pod as a Pod of its name). */
  yaml: string;
}

export interface PodmanPlan {
  /** The multi-document YAML for `podman kube play`, without the PersistentVolumeClaims. */
  yaml: string;
  /** Each pod `yaml` makes, as its own document. */
  pods: PlannedPod[];
  /** The ConfigMap documents of `yaml`: a pod's env lookups need them beside its document. */
  configMapDocs: string[];
  /**
   * The claims as YAML documents by podman volume name: podman refuses to play a claim whose
   * volume exists ("volume already exists"), so the driver adds only those not made yet.
   */
  claimDocs: { volume: string; yaml: string }[];
  /** Every image the pods use (containers and init containers). */
  images: string[];
  /** Present when the pods name pull Secrets. */
  pull?: PullAccess;
  secrets: PlannedSecret[];
  volumes: PlannedVolume[];
  /** Pod templates by name, with how many pods each should have. */
  templates: { kind: string; name: string; replicas: number }[];
  ports: number[];
  graceSeconds: number;
  /** Readiness probes keyed `<template>/<container>`, evaluated by the driver (podman ignores them). */
  probes: Record<string, Probe>;
  /** Podman volume names of the PersistentVolumeClaims (`CLAIM-OWNER`), removed with the workload. */
  claims: string[];
  /** Kinds skipped on purpose, for the log. */
  ignored: string[];
}

/** Why a unit cannot run on podman; the driver reports it as phase Failed with this message. */
export class UnsupportedUnitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedUnitError';
  }
}

// Manifests are loosely typed Kubernetes objects; the plan reads and rewrites them in place.
type Obj = Record<string, any>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The podman secret name for a Secret of a workload; owner-scoped so two agents never share one. */
export function secretName(owner: string, workload: string, secret: string): string {
  return `outpost.${owner}.${workload}.${secret}`;
}

function decodeSecret(m: Obj, where: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(isObj(m.data) ? m.data : {})) {
    if (typeof v !== 'string' || !/^[A-Za-z0-9+/=\s]*$/.test(v))
      throw new UnsupportedUnitError(`${where}.data.${k} is not base64; use stringData for plain text`);
    out.set(k, Buffer.from(v, 'base64'));
  }
  for (const [k, v] of Object.entries(isObj(m.stringData) ? m.stringData : {}))
    out.set(k, Buffer.from(String(v), 'utf8'));
  return out;
}

function configMapData(m: Obj): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(isObj(m.data) ? m.data : {})) out.set(k, Buffer.from(String(v), 'utf8'));
  for (const [k, v] of Object.entries(isObj(m.binaryData) ? m.binaryData : {}))
    out.set(k, Buffer.from(String(v), 'base64'));
  return out;
}

function volumeFiles(data: Map<string, Buffer>, src: Obj, where: string): PlannedFile[] {
  const defaultMode = typeof src.defaultMode === 'number' ? src.defaultMode : 0o644;
  if (!Array.isArray(src.items) || src.items.length === 0)
    return [...data].map(([path, content]) => ({ path, content, mode: defaultMode }));
  return src.items.map((item: Obj, i: number) => {
    const content = data.get(String(item.key));
    if (!content)
      throw new UnsupportedUnitError(`${where}.items[${i}]: key "${item.key}" is not in the referenced object`);
    const path = String(item.path ?? item.key);
    if (path.startsWith('/') || path.split('/').includes('..'))
      throw new UnsupportedUnitError(`${where}.items[${i}].path must be relative without "..": ${path}`);
    return { path, content, mode: typeof item.mode === 'number' ? item.mode : defaultMode };
  });
}

/** Named probe ports refer to the container's ports, which the played YAML may no longer carry. */
function resolveProbePort(probe: Probe, c: Obj): Probe {
  const target = probe.httpGet ?? probe.tcpSocket;
  if (target && typeof target.port === 'string' && !/^\d+$/.test(target.port)) {
    const named = (Array.isArray(c.ports) ? c.ports : []).find((p: Obj) => p.name === target.port);
    if (named) target.port = named.containerPort;
  }
  return probe;
}

/**
 * Plans a unit for podman. `volumeRoot` is the absolute directory where the driver will write the
 * unit's ConfigMap/Secret volume files (one per unit hash, so a replace never edits live files).
 */
export function planUnit(unit: WorkloadUnit, owner: string, volumeRoot: string): PodmanPlan {
  const manifests = structuredClone(unit.manifests) as Obj[];
  const secrets = new Map<string, Map<string, Buffer>>();
  const configMaps = new Map<string, Map<string, Buffer>>();
  const ignored: string[] = [];
  const claims: string[] = [];
  manifests.forEach((m, i) => {
    const where = `manifests[${i}] (${m.kind} ${m.metadata?.name})`;
    if (m.kind === 'Secret') secrets.set(m.metadata.name, decodeSecret(m, where));
    else if (m.kind === 'ConfigMap') configMaps.set(m.metadata.name, configMapData(m));
    else if (m.kind === 'PersistentVolumeClaim') claims.push(m.metadata.name);
    else if (IGNORED_KINDS.has(m.kind)) ignored.push(`${m.kind}/${m.metadata.name}`);
    else if (!PLAYED_KINDS.has(m.kind)) {
      throw new UnsupportedUnitError(
        `${where}: kind ${m.kind} is not supported by the podman driver; use Pod or Deployment (with ConfigMap, Secret, PersistentVolumeClaim)`,
      );
    }
  });

  const claimNames = new Set(claims);
  for (const m of manifests)
    if (m.kind === 'PersistentVolumeClaim')
      m.metadata = { ...m.metadata, name: claimVolumeName(m.metadata.name, owner) };
  const images = new Set<string>();
  const labels: Record<string, string> = {
    [LABEL_OWNER]: owner,
    [LABEL_WORKLOAD]: unit.name,
    [LABEL_HASH]: unit.hash,
    [LABEL_GENERATION]: String(unit.generation),
  };
  const usedSecrets = new Set<string>();
  const pullSecrets = new Set<string>();
  const volumes: PlannedVolume[] = [];
  const probes: Record<string, Probe> = {};
  let grace: number | undefined;

  for (const [i, m] of manifests.entries()) {
    if (m.kind !== 'Pod' && m.kind !== 'Deployment') continue;
    const where = `manifests[${i}] (${m.kind} ${m.metadata.name})`;
    const template: string = m.metadata.name;
    const own = { ...labels, [LABEL_TEMPLATE]: template };
    let pod: Obj;
    if (m.kind === 'Pod') pod = m;
    else {
      m.spec = isObj(m.spec) ? m.spec : {};
      m.spec.template = isObj(m.spec.template) ? m.spec.template : {};
      pod = m.spec.template;
      m.metadata.labels = { ...(m.metadata.labels ?? {}), ...own };
    }
    m.metadata.name = podName(template, owner, unit.hash);
    pod.metadata = isObj(pod.metadata) ? pod.metadata : {};
    pod.metadata.labels = { ...(pod.metadata.labels ?? {}), ...own };
    const spec: Obj = isObj(pod.spec) ? pod.spec : {};
    // The hostname stays the manifest's name, as in Kubernetes (and podman's pod name can pass 63 characters).
    if (typeof spec.hostname !== 'string') spec.hostname = template.slice(0, 63).replace(/-+$/, '');
    if (!Array.isArray(spec.containers) || spec.containers.length === 0)
      throw new UnsupportedUnitError(`${where}: a pod needs at least one container`);
    if (typeof spec.terminationGracePeriodSeconds === 'number')
      grace = Math.max(grace ?? 0, spec.terminationGracePeriodSeconds);

    for (const r of Array.isArray(spec.imagePullSecrets) ? spec.imagePullSecrets : [])
      if (isObj(r) && typeof r.name === 'string') pullSecrets.add(r.name);
    // podman pulls with the driver's --authfile; kube play has no use for the names.
    delete spec.imagePullSecrets;
    const fileVolumes = new Set<string>();
    for (const [vi, v] of (Array.isArray(spec.volumes) ? spec.volumes : []).entries()) {
      const vwhere = `${where}.spec.volumes[${vi}]`;
      if (isObj(v.persistentVolumeClaim) && claimNames.has(v.persistentVolumeClaim.claimName))
        v.persistentVolumeClaim.claimName = claimVolumeName(v.persistentVolumeClaim.claimName, owner);
      const src = isObj(v.configMap) ? v.configMap : isObj(v.secret) ? v.secret : undefined;
      if (!src) continue;
      const ref = String(v.configMap ? src.name : src.secretName);
      const data = v.configMap ? configMaps.get(ref) : secrets.get(ref);
      if (!data) {
        if (src.optional === true) continue;
        throw new UnsupportedUnitError(
          `${vwhere}: ${v.configMap ? 'ConfigMap' : 'Secret'} "${ref}" is not part of the workload; add it to the manifests or mark the volume optional`,
        );
      }
      const dir = `${template}/${v.name}`;
      volumes.push({ dir, files: volumeFiles(data, src, vwhere) });
      spec.volumes[vi] = { name: v.name, hostPath: { path: `${volumeRoot}/${dir}`, type: 'Directory' } };
      fileVolumes.add(v.name);
    }

    for (const c of [...spec.containers, ...(Array.isArray(spec.initContainers) ? spec.initContainers : [])] as Obj[]) {
      if (typeof c.image === 'string' && c.image) images.add(c.image);
      if (isObj(c.readinessProbe))
        probes[`${template}/${c.name}`] = resolveProbePort(structuredClone(c.readinessProbe) as Probe, c);
      if (Array.isArray(c.ports)) {
        c.ports = c.ports.filter((p: Obj) => typeof p.hostPort === 'number' && p.hostPort > 0);
        if (c.ports.length === 0) delete c.ports;
      }
      for (const vm of Array.isArray(c.volumeMounts) ? c.volumeMounts : [])
        if (fileVolumes.has(vm.name)) vm.readOnly = true;
      for (const e of Array.isArray(c.env) ? c.env : []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (isObj(ref) && secrets.has(ref.name)) {
          usedSecrets.add(ref.name);
          ref.name = secretName(owner, unit.name, ref.name);
        }
      }
      for (const e of Array.isArray(c.envFrom) ? c.envFrom : []) {
        if (isObj(e.secretRef) && secrets.has(e.secretRef.name)) {
          usedSecrets.add(e.secretRef.name);
          e.secretRef.name = secretName(owner, unit.name, e.secretRef.name);
        }
      }
    }
    pod.spec = spec;
  }

  const templates = podTemplates(unit.manifests).filter((t) => t.kind === 'Pod' || t.kind === 'Deployment');
  if (templates.length === 0)
    throw new UnsupportedUnitError('the workload has no Pod or Deployment; the podman driver needs at least one');
  const ports = new Set<number>();
  for (const t of templates) {
    for (const c of t.podSpec.containers)
      for (const p of Array.isArray(c.ports) ? c.ports : [])
        if (Number.isInteger(p.containerPort)) ports.add(p.containerPort);
  }

  const pull = pullAccess(manifests, pullSecrets, secrets);
  // What podman is handed, from here on: the pull settings above were the last of them read.
  const handed = manifests.map(withoutOutpostAnnotations);
  const played = handed.filter((m) => PLAYED_KINDS.has(m.kind) && m.kind !== 'PersistentVolumeClaim');
  return {
    yaml: played.map((m) => stringify(m)).join('---\n'),
    pods: templates.flatMap((t) => plannedPods(t, handed[t.index])),
    configMapDocs: played.filter((m) => m.kind === 'ConfigMap').map((m) => stringify(m)),
    claimDocs: handed
      .filter((m) => m.kind === 'PersistentVolumeClaim')
      .map((m) => ({ volume: m.metadata.name as string, yaml: stringify(m) })),
    images: [...images],
    ...(pull ? { pull } : {}),
    secrets: [...usedSecrets].map((name) => ({
      name: secretName(owner, unit.name, name),
      data: JSON.stringify(Object.fromEntries([...secrets.get(name)!].map(([k, v]) => [k, v.toString('base64')]))),
    })),
    volumes,
    templates: templates.map((t) => ({ kind: t.kind, name: t.name, replicas: t.replicas })),
    ports: [...ports].sort((a, b) => a - b),
    graceSeconds: grace ?? DEFAULT_GRACE_SECONDS,
    probes,
    claims: claims.map((c) => claimVolumeName(c, owner)),
    ignored,
  };
}

/**
 * The pods a planned Pod or Deployment manifest makes, each as its own Pod document. Podman 4.3
 * plays a Deployment's pod N as a pod named `NAME-pod-N` from the template, with the Deployment's
 * annotations where a Pod's own would be (podman's playKubeDeployment); the document says the same
 * with the template's and the Deployment's annotations together.
 */
function plannedPods(t: { kind: string; name: string; replicas: number }, m: Obj): PlannedPod[] {
  if (t.kind === 'Pod') return [{ name: t.name, podmanName: m.metadata.name, yaml: stringify(m) }];
  const template: Obj = m.spec.template;
  const annotations = { ...(template.metadata.annotations ?? {}), ...(m.metadata.annotations ?? {}) };
  return templatePodNames(t).map((name, i) => {
    const podmanName = `${m.metadata.name}-pod-${i}`;
    const metadata = {
      ...template.metadata,
      name: podmanName,
      ...(Object.keys(annotations).length ? { annotations } : {}),
    };
    return { name, podmanName, yaml: stringify({ apiVersion: 'v1', kind: 'Pod', metadata, spec: template.spec }) };
  });
}

/** The pull access of the named pull Secrets of the workload; a name it does not hold is skipped, as Kubernetes does. */
function pullAccess(
  manifests: Obj[],
  names: Set<string>,
  secrets: Map<string, Map<string, Buffer>>,
): PullAccess | undefined {
  if (names.size === 0) return undefined;
  const auths: Record<string, unknown> = {};
  const ca = new Map<string, string>();
  const insecure = new Set<string>();
  let any = false;
  for (const m of manifests) {
    if (m.kind !== 'Secret' || !names.has(m.metadata.name) || m.type !== DOCKER_CONFIG_TYPE) continue;
    any = true;
    const text = secrets.get(m.metadata.name)?.get(DOCKER_CONFIG_KEY)?.toString('utf8');
    if (text) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new UnsupportedUnitError(`Secret ${m.metadata.name}: ${DOCKER_CONFIG_KEY} is not JSON`);
      }
      if (isObj(parsed) && isObj(parsed.auths)) Object.assign(auths, parsed.auths);
    }
    const tls = registryTlsOf(isObj(m.metadata.annotations) ? m.metadata.annotations : undefined);
    for (const [h, pem] of tls.ca) ca.set(h, pem);
    for (const h of tls.insecure) insecure.add(h);
  }
  return any ? { authJson: JSON.stringify({ auths }), ca, insecure } : undefined;
}
