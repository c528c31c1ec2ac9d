/**
 * @module Container images in workloads, pure: which registry an image reference names, which
 * images a workload's pods use, and how a registry's pull credentials ride along with a workload
 * to one edge (a `kubernetes.io/dockerconfigjson` Secret the pods name in `imagePullSecrets`:
 * the kubernetes driver creates it as is, the podman driver turns it into an auth.json;
 * docs/drivers.md, "Registries").
 */
import { podTemplates, WORKLOAD_KINDS } from './manifest.js';
import type { Manifest } from './resources.js';

/** The Secret the hub adds to a workload for an edge when its images need credentials. */
export const PULL_SECRET_NAME = 'outpost-registry-auth';
export const DOCKER_CONFIG_TYPE = 'kubernetes.io/dockerconfigjson';
export const DOCKER_CONFIG_KEY = '.dockerconfigjson';
/**
 * Annotations of the pull Secret carrying what is not secret but what a podman edge needs to
 * reach the registries it names: `HOST=base64(PEM)` lines of CA bundles and the hosts whose TLS
 * is not verified. The kubernetes driver ignores them (its node's runtime has its own TLS setup).
 */
export const REGISTRY_CA_ANNOTATION = 'outpost.dev/registry-ca';
export const REGISTRY_INSECURE_ANNOTATION = 'outpost.dev/registry-insecure';

export interface ImageRef {
  /** `HOST[:PORT]` as an image reference names it; `docker.io` when it names none. */
  registry: string;
  repository: string;
  tag?: string;
  digest?: string;
}

/**
 * Splits an image reference as the container tools do: the first component is a registry when it
 * has a `.` or a `:` or is `localhost`; otherwise the image is on Docker Hub.
 */
export function parseImageRef(ref: string): ImageRef {
  let rest = ref.trim();
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  const slash = rest.indexOf('/');
  let registry = 'docker.io';
  if (slash > 0) {
    const first = rest.slice(0, slash);
    if (first.includes('.') || first.includes(':') || first === 'localhost') {
      registry = first;
      rest = rest.slice(slash + 1);
    }
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > 0) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  if (registry === 'docker.io' && !rest.includes('/')) rest = `library/${rest}`;
  return { registry, repository: rest, ...(tag !== undefined ? { tag } : {}), ...(digest ? { digest } : {}) };
}

/** `https://reg.example.com:5000/` -> `reg.example.com:5000`: the host part images name. */
export function registryHost(url: string): string {
  return url.replace(/^https?:\/\//, '').replace(/\/+$/, '');
}

/** Every image the workload's pods name (containers and init containers), without duplicates. */
export function imagesOf(manifests: Manifest[]): string[] {
  const out = new Set<string>();
  for (const t of podTemplates(manifests)) {
    const spec = t.podSpec as { containers: { image?: unknown }[]; initContainers?: unknown };
    const init = Array.isArray(spec.initContainers) ? (spec.initContainers as { image?: unknown }[]) : [];
    for (const c of [...spec.containers, ...init]) if (typeof c.image === 'string' && c.image) out.add(c.image);
  }
  return [...out];
}

/** The registry hosts of a workload's images, sorted. */
export function registriesOf(manifests: Manifest[]): string[] {
  return [...new Set(imagesOf(manifests).map((i) => parseImageRef(i).registry))].sort();
}

export interface RegistryAccess {
  host: string;
  username?: string;
  password?: string;
  caBundle?: string;
  insecure?: boolean;
}

/** The `.dockerconfigjson` text for these registries (those with credentials). */
export function dockerConfigJson(registries: RegistryAccess[]): string {
  const auths: Record<string, { auth: string }> = {};
  for (const r of registries)
    if (r.username !== undefined && r.password !== undefined)
      auths[r.host] = { auth: Buffer.from(`${r.username}:${r.password}`, 'utf8').toString('base64') };
  return JSON.stringify({ auths });
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The manifests with `secret` added (before the first manifest that runs pods) and named in the
 * `imagePullSecrets` of every pod template; the input is not changed. Manifests of a workload
 * that already names the Secret keep their own.
 */
export function withPullSecret(manifests: Manifest[], secret: Manifest): Manifest[] {
  const name = secret.metadata.name;
  const addRef = (podSpec: Record<string, unknown>): Record<string, unknown> => {
    const refs = Array.isArray(podSpec.imagePullSecrets) ? (podSpec.imagePullSecrets as { name?: unknown }[]) : [];
    if (refs.some((r) => isObj(r) && r.name === name)) return podSpec;
    return { ...podSpec, imagePullSecrets: [...refs, { name }] };
  };
  const out = manifests.map((m): Manifest => {
    const spec = isObj(m.spec) ? m.spec : undefined;
    if (!spec || !['Pod', 'Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'].includes(m.kind)) return m;
    if (m.kind === 'Pod') return { ...m, spec: addRef(spec) };
    const template = isObj(spec.template) ? spec.template : {};
    const podSpec = isObj(template.spec) ? template.spec : {};
    return { ...m, spec: { ...spec, template: { ...template, spec: addRef(podSpec) } } };
  });
  return [secret, ...out.filter((m) => !(m.kind === 'Secret' && m.metadata.name === name))];
}

/** What a podman edge reads back from a pull Secret's annotations. */
export function registryTlsOf(annotations: Record<string, unknown> | undefined): {
  ca: Map<string, string>;
  insecure: Set<string>;
} {
  const ca = new Map<string, string>();
  const caText = annotations?.[REGISTRY_CA_ANNOTATION];
  if (typeof caText === 'string')
    for (const line of caText.split('\n')) {
      const eq = line.indexOf('=');
      if (eq > 0) ca.set(line.slice(0, eq), Buffer.from(line.slice(eq + 1), 'base64').toString('utf8'));
    }
  const ins = annotations?.[REGISTRY_INSECURE_ANNOTATION];
  const insecure = new Set(typeof ins === 'string' ? ins.split(',').filter(Boolean) : []);
  return { ca, insecure };
}

/** The annotations `registryTlsOf` reads, for these registries (empty when none has a CA or is insecure). */
export function registryTlsAnnotations(registries: RegistryAccess[]): Record<string, string> {
  const out: Record<string, string> = {};
  const ca = registries
    .filter((r) => r.caBundle)
    .map((r) => `${r.host}=${Buffer.from(r.caBundle!).toString('base64')}`);
  if (ca.length) out[REGISTRY_CA_ANNOTATION] = ca.join('\n');
  const ins = registries.filter((r) => r.insecure).map((r) => r.host);
  if (ins.length) out[REGISTRY_INSECURE_ANNOTATION] = ins.join(',');
  return out;
}

/** `HOST/REPO:TAG` pinned to `digest`: `HOST/REPO@DIGEST` (the reference spelled as the workload spelled its host). */
export function pinnedImage(image: string, digest: string): string {
  const at = image.indexOf('@');
  const name = at >= 0 ? image.slice(0, at) : image;
  const slash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  return `${colon > slash ? name.slice(0, colon) : name}@${digest}`;
}

/**
 * The manifests with every container's and init container's `image` replaced where `images`
 * maps it (pinned references, `pinnedImage`); the input is not changed.
 */
export function withImages(manifests: Manifest[], images: ReadonlyMap<string, string>): Manifest[] {
  if (images.size === 0) return manifests;
  const swap = (list: unknown): unknown =>
    Array.isArray(list)
      ? list.map((c) =>
          isObj(c) && typeof c.image === 'string' && images.has(c.image) ? { ...c, image: images.get(c.image) } : c,
        )
      : list;
  const podSpecOf = (s: Record<string, unknown>): Record<string, unknown> => ({
    ...s,
    ...(s.containers !== undefined ? { containers: swap(s.containers) } : {}),
    ...(s.initContainers !== undefined ? { initContainers: swap(s.initContainers) } : {}),
  });
  return manifests.map((m): Manifest => {
    const spec = isObj(m.spec) ? m.spec : undefined;
    if (!spec || !(WORKLOAD_KINDS as readonly string[]).includes(m.kind)) return m;
    if (m.kind === 'Pod') return { ...m, spec: podSpecOf(spec) };
    const template = isObj(spec.template) ? spec.template : undefined;
    if (!template || !isObj(template.spec)) return m;
    return { ...m, spec: { ...spec, template: { ...template, spec: podSpecOf(template.spec) } } };
  });
}
