/**
 * @module ConfigMaps, Secrets and volumes for host processes.
 *
 * A host process cannot have a volume bind-mounted at `volumeMounts[].mountPath`, and the driver
 * never writes outside its data directory (a manifest from the hub must not be able to overwrite
 * /etc on the device). So each configMap, secret and emptyDir volume is materialized as a directory
 * `workloads/NAME/volumes/VOLUME/` and every container that mounts it gets the env variable
 * `OUTPOST_VOLUME_<VOLUME>` (upper-cased, non-alphanumerics as `_`) pointing there; `mountPath`
 * and `subPath` are ignored. A hostPath volume is only pointed at, never written. Secret files are
 * mode 0600 in a 0700 directory; ConfigMap files 0644 (`defaultMode` and `items[].mode` apply).
 */
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import type { EnvFromSource, EnvVar, K8sObject, K8sVolume } from './k8s-types.js';

/** Key -> bytes of one ConfigMap or Secret (Secret `data` decoded from base64, `stringData` wins). */
export type KeyValues = Map<string, Buffer>;

export interface ConfigSources {
  configMaps: Map<string, KeyValues>;
  secrets: Map<string, KeyValues>;
}

export function collectConfig(objects: K8sObject[]): ConfigSources {
  const configMaps = new Map<string, KeyValues>();
  const secrets = new Map<string, KeyValues>();
  for (const o of objects) {
    if (o.kind === 'ConfigMap') {
      const kv: KeyValues = new Map();
      for (const [k, v] of Object.entries(o.data ?? {})) kv.set(k, Buffer.from(String(v), 'utf8'));
      for (const [k, v] of Object.entries(o.binaryData ?? {})) kv.set(k, Buffer.from(String(v), 'base64'));
      configMaps.set(o.metadata.name, kv);
    } else if (o.kind === 'Secret') {
      const kv: KeyValues = new Map();
      for (const [k, v] of Object.entries(o.data ?? {})) kv.set(k, Buffer.from(String(v), 'base64'));
      for (const [k, v] of Object.entries(o.stringData ?? {})) kv.set(k, Buffer.from(String(v), 'utf8'));
      secrets.set(o.metadata.name, kv);
    }
  }
  return { configMaps, secrets };
}

export function volumeEnvName(volume: string): string {
  return `OUTPOST_VOLUME_${volume.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** Expands `$(VAR)` from vars defined so far, as Kubernetes does; `$$(VAR)` stays literal `$(VAR)`. */
export function expandVars(s: string, vars: Record<string, string>): string {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => {
    if (m === '$$') return '$';
    return name !== undefined && name in vars ? vars[name] : m;
  });
}

/**
 * Resolves `envFrom` then `env` (later entries win, as in Kubernetes). Returns the variables or the
 * first problem, phrased with the field path and the fix.
 */
export function resolveEnv(
  at: string,
  env: EnvVar[] | undefined,
  envFrom: EnvFromSource[] | undefined,
  src: ConfigSources,
  fields: Record<string, string>,
): { env: Record<string, string> } | { error: string } {
  const out: Record<string, string> = {};
  for (const [i, ef] of (envFrom ?? []).entries()) {
    const ref = ef.configMapRef ?? ef.secretRef;
    const isSecret = ef.secretRef !== undefined;
    const field = `${at}.envFrom[${i}].${isSecret ? 'secretRef' : 'configMapRef'}`;
    if (!ref?.name) return { error: `${at}.envFrom[${i}] needs configMapRef.name or secretRef.name` };
    const kv = (isSecret ? src.secrets : src.configMaps).get(ref.name);
    if (!kv) {
      if (ref.optional) continue;
      return {
        error: `${field} names ${isSecret ? 'Secret' : 'ConfigMap'} "${ref.name}" which is not in the workload; add it to the workload's manifests or set optional: true`,
      };
    }
    for (const [k, v] of kv) out[`${ef.prefix ?? ''}${k}`] = v.toString('utf8');
  }
  for (const [i, e] of (env ?? []).entries()) {
    const field = `${at}.env[${i}]`;
    if (!e.name) return { error: `${field}.name is required` };
    if (e.valueFrom === undefined) {
      out[e.name] = expandVars(String(e.value ?? ''), out);
      continue;
    }
    const vf = e.valueFrom;
    if (vf.configMapKeyRef || vf.secretKeyRef) {
      const isSecret = vf.secretKeyRef !== undefined;
      const ref = (vf.secretKeyRef ?? vf.configMapKeyRef)!;
      const kind = isSecret ? 'Secret' : 'ConfigMap';
      const refField = `${field}.valueFrom.${isSecret ? 'secretKeyRef' : 'configMapKeyRef'}`;
      if (!ref.name || !ref.key) return { error: `${refField} needs name and key` };
      const value = (isSecret ? src.secrets : src.configMaps).get(ref.name)?.get(ref.key);
      if (value === undefined) {
        if (ref.optional) continue;
        return {
          error: `${refField} refers to key "${ref.key}" of ${kind} "${ref.name}", which the workload does not contain; add it or set optional: true`,
        };
      }
      out[e.name] = value.toString('utf8');
    } else if (vf.fieldRef) {
      const path = vf.fieldRef.fieldPath ?? '';
      if (!(path in fields)) {
        return {
          error: `${field}.valueFrom.fieldRef.fieldPath "${path}" is not available to host processes; use one of ${Object.keys(fields).join(', ')}`,
        };
      }
      out[e.name] = fields[path];
    } else {
      return {
        error: `${field}.valueFrom supports configMapKeyRef, secretKeyRef and fieldRef on the process driver; use one of them or a plain value`,
      };
    }
  }
  return { env: out };
}

export interface VolumeFile {
  /** Relative to the volume directory. */
  path: string;
  content: Buffer;
  mode: number;
}

export interface VolumePlan {
  name: string;
  /** Absolute directory the env variable points at. */
  dir: string;
  /** null: the directory is not ours to write (hostPath), or it is an emptyDir kept across restarts. */
  files: VolumeFile[] | null;
  secret: boolean;
}

export function planVolume(
  at: string,
  v: K8sVolume,
  src: ConfigSources,
  volumesDir: string,
): VolumePlan | { error: string } {
  const name = v.name ?? '';
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name))
    return { error: `${at}.name "${name}" must be a DNS-1123 label such as "config"` };
  const dir = join(volumesDir, name);
  if (v.configMap || v.secret) {
    const isSecret = v.secret !== undefined;
    const refName = isSecret ? v.secret!.secretName : v.configMap!.name;
    const field = `${at}.${isSecret ? 'secret.secretName' : 'configMap.name'}`;
    const opts = (isSecret ? v.secret : v.configMap)!;
    if (!refName) return { error: `${field} is required` };
    const kv = (isSecret ? src.secrets : src.configMaps).get(refName);
    if (!kv && !opts.optional) {
      return {
        error: `${field} names ${isSecret ? 'Secret' : 'ConfigMap'} "${refName}" which is not in the workload; add it to the workload's manifests or set optional: true`,
      };
    }
    const defaultMode = opts.defaultMode ?? (isSecret ? 0o600 : 0o644);
    const files: VolumeFile[] = [];
    const items = opts.items ?? [...(kv?.keys() ?? [])].map((key) => ({ key, path: key, mode: undefined }));
    for (const [i, item] of items.entries()) {
      const content = item.key === undefined ? undefined : kv?.get(item.key);
      if (content === undefined) {
        if (opts.optional) continue;
        return {
          error: `${at}.${isSecret ? 'secret' : 'configMap'}.items[${i}].key "${item.key}" is not in ${isSecret ? 'Secret' : 'ConfigMap'} "${refName}"; fix the key or remove the item`,
        };
      }
      const rel = normalize(item.path ?? item.key!);
      if (rel.startsWith('..') || rel.startsWith('/'))
        return { error: `${at}.items[${i}].path "${item.path}" must be a relative path inside the volume` };
      files.push({ path: rel, content, mode: item.mode ?? defaultMode });
    }
    return { name, dir, files, secret: isSecret };
  }
  if (v.emptyDir !== undefined) return { name, dir, files: null, secret: false };
  if (v.hostPath) {
    if (!v.hostPath.path?.startsWith('/')) return { error: `${at}.hostPath.path must be an absolute path` };
    return { name, dir: v.hostPath.path, files: null, secret: false };
  }
  return {
    error: `${at} "${name}": the process driver supports configMap, secret, emptyDir and hostPath volumes; change the volume source`,
  };
}

/**
 * Writes a configMap/secret volume from scratch (stale keys must not linger) or creates an emptyDir.
 * hostPath volumes are left alone.
 */
export async function materializeVolume(v: VolumePlan, ownedRoot: string): Promise<void> {
  if (!v.dir.startsWith(ownedRoot)) return;
  if (v.files === null) {
    await mkdir(v.dir, { recursive: true, mode: 0o755 });
    return;
  }
  await rm(v.dir, { recursive: true, force: true });
  await mkdir(v.dir, { recursive: true, mode: v.secret ? 0o700 : 0o755 });
  for (const f of v.files) {
    const file = join(v.dir, f.path);
    await mkdir(dirname(file), { recursive: true, mode: v.secret ? 0o700 : 0o755 });
    await writeFile(file, f.content, { mode: f.mode });
    // writeFile's mode is filtered by the umask; the declared mode is what the workload expects.
    await chmod(file, f.mode);
  }
}
