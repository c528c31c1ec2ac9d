/**
 * @module Packages of the catalog (docs/catalog.md), pure: the `package.yaml` schema (a name, a
 * semantic version, workload templates, parameters as a JSON-Schema subset, profiles, dependsOn by
 * version range, a readme and an icon), the validation of a deployment's values against the
 * parameters, version resolution with `semver`, and the rendering of `{{ params.X }}`. Edge
 * templates (`{{ edge.labels.X }}`) are left in place for core/customize.ts, per edge.
 *
 * @example
 * const pkg = parsePackage(YAML.parse(text));
 * const values = resolveValues(pkg, { profile: 'small', values: { replicas: 3 } });
 * const version = resolveVersion('^1.0', ['1.0.0', '1.1.0']); // '1.1.0'
 */
import semver from 'semver';
import { z } from 'zod';
import { NAME_PATTERN } from './ids.js';
import { formatIssues, Manifest } from './resources.js';
import { unknownFieldsMessage } from './suggest.js';

export const PACKAGE_MEDIA_TYPE = 'application/vnd.outpost.package.v1.tar+gzip';
/** The file at the root of a package archive that describes it. */
export const PACKAGE_FILE = 'package.yaml';
/** A readme or icon larger than this is refused: both are shown in lists and the UI, not stored as blobs. */
export const MAX_README_BYTES = 256 * 1024;
export const MAX_ICON_BYTES = 128 * 1024;

function strict<T extends z.ZodRawShape>(shape: T) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (iss) => (iss.code === 'unrecognized_keys' ? unknownFieldsMessage(iss.keys, known) : undefined),
  });
}

const name = z
  .string()
  .regex(NAME_PATTERN, 'must be 1-63 lower-case letters, digits or "-", starting and ending with a letter or digit');
const paramName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'must be a letter or "_" then letters, digits or "_" (at most 63)');

export const PARAMETER_TYPES = ['string', 'integer', 'number', 'boolean'] as const;
export type ParameterType = (typeof PARAMETER_TYPES)[number];
type Value = string | number | boolean;
const scalar = z.union([z.string(), z.number(), z.boolean()]);

/** One parameter: the JSON-Schema subset a form can be generated from. */
export const Parameter = strict({
  name: paramName,
  type: z.enum(PARAMETER_TYPES, { error: () => `must be one of ${PARAMETER_TYPES.join(', ')}` }),
  description: z.string().max(1024).optional(),
  default: scalar.optional(),
  enum: z.array(scalar).min(1).optional(),
  required: z.boolean().default(false),
  /** Delivered in a generated Secret (`<package>-params`), never in plain manifests. */
  secret: z.boolean().default(false),
  minimum: z.number().optional(),
  maximum: z.number().optional(),
  pattern: z.string().max(1024).optional(),
});
export type Parameter = z.infer<typeof Parameter>;

export const PackageWorkload = strict({
  name,
  manifests: z.array(Manifest).min(1, 'a workload needs at least one manifest'),
});

export const Dependency = strict({
  name,
  version: z.string().refine((r) => semver.validRange(r) !== null, 'must be a semver range such as ^2.0 or >=1.4 <2'),
});

export const PackageSpec = strict({
  version: z
    .string()
    .refine((v) => semver.valid(v) === v, 'must be a semantic version such as 1.2.0 (no "v", no range)'),
  description: z.string().max(1024).optional(),
  /** A file of the archive, shown in the catalog (default README.md when the archive has one). */
  readme: z.string().max(256).optional(),
  /** A .png or .svg file of the archive. */
  icon: z.string().max(256).optional(),
  parameters: z.array(Parameter).default([]),
  profiles: z.record(name, z.record(z.string(), scalar)).default({}),
  dependsOn: z.array(Dependency).default([]),
  workloads: z.array(PackageWorkload).min(1, 'a package needs at least one workload'),
});

export const PackageManifest = strict({
  apiVersion: z.literal('outpost.dev/v1alpha1').default('outpost.dev/v1alpha1'),
  kind: z.literal('Package'),
  metadata: strict({ name, labels: z.record(z.string(), z.string()).default({}) }),
  spec: PackageSpec,
});
export type PackageManifest = z.infer<typeof PackageManifest>;

export class PackageError extends Error {}

function typeError(p: Parameter, v: unknown): string | undefined {
  switch (p.type) {
    case 'string':
      if (typeof v !== 'string') return `must be a string, got ${JSON.stringify(v)}`;
      if (p.pattern && !new RegExp(`^(?:${p.pattern})$`).test(v)) return `must match /${p.pattern}/`;
      return undefined;
    case 'boolean':
      return typeof v === 'boolean' ? undefined : `must be true or false, got ${JSON.stringify(v)}`;
    case 'integer':
    case 'number':
      if (typeof v !== 'number' || (p.type === 'integer' && !Number.isInteger(v)))
        return `must be ${p.type === 'integer' ? 'an integer' : 'a number'}, got ${JSON.stringify(v)}`;
      if (p.minimum !== undefined && v < p.minimum) return `must be at least ${p.minimum}, got ${v}`;
      if (p.maximum !== undefined && v > p.maximum) return `must be at most ${p.maximum}, got ${v}`;
      return undefined;
  }
}

/** One problem with a value, naming the parameter (`values.replicas: must be an integer, got "x"`). */
export function checkValue(p: Parameter, v: unknown): string | undefined {
  const t = typeError(p, v);
  if (t) return t;
  if (p.enum && !p.enum.includes(v as Value))
    return `must be one of ${p.enum.map((e) => JSON.stringify(e)).join(', ')}`;
  return undefined;
}

const PARAM_REF = /\{\{\s*params\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

function paramRefs(v: unknown, out: Set<string>): void {
  if (typeof v === 'string') for (const m of v.matchAll(PARAM_REF)) out.add(m[1]);
  else if (Array.isArray(v)) for (const x of v) paramRefs(x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) paramRefs(x, out);
}

/** The name of the Secret a deployment's secret parameters go into (one key per parameter). */
export function paramsSecretName(pkg: string): string {
  return `${pkg}-params`.slice(0, 63).replace(/-+$/, '');
}

/**
 * Validates a package description (from `package.yaml`); throws a PackageError whose message
 * names each field and the fix.
 */
export function parsePackage(input: unknown): PackageManifest {
  const r = PackageManifest.safeParse(input);
  if (!r.success)
    throw new PackageError(
      formatIssues(r.error)
        .map((i) => `${i.path}: ${i.message}`)
        .join('; '),
    );
  const pkg = r.data;
  const problems: string[] = [];
  const params = new Map<string, Parameter>();
  pkg.spec.parameters.forEach((p, i) => {
    const at = `spec.parameters[${i}] (${p.name})`;
    if (params.has(p.name)) problems.push(`${at}: another parameter has this name`);
    params.set(p.name, p);
    if (p.pattern !== undefined) {
      try {
        new RegExp(p.pattern);
      } catch {
        problems.push(`${at}.pattern: not a valid regular expression`);
      }
    }
    if (p.default !== undefined) {
      const e = checkValue(p, p.default);
      if (e) problems.push(`${at}.default: ${e}`);
    }
    for (const [j, v] of (p.enum ?? []).entries()) {
      const e = typeError(p, v);
      if (e) problems.push(`${at}.enum[${j}]: ${e}`);
    }
  });
  for (const [prof, values] of Object.entries(pkg.spec.profiles))
    for (const [k, v] of Object.entries(values)) {
      const p = params.get(k);
      if (!p) problems.push(`spec.profiles.${prof}.${k}: no such parameter (declare it in spec.parameters)`);
      else {
        const e = checkValue(p, v);
        if (e) problems.push(`spec.profiles.${prof}.${k}: ${e}`);
      }
    }
  const seen = new Set<string>();
  pkg.spec.workloads.forEach((w, i) => {
    if (seen.has(w.name)) problems.push(`spec.workloads[${i}].name: another workload is named ${w.name}`);
    seen.add(w.name);
    const refs = new Set<string>();
    paramRefs(w.manifests, refs);
    for (const ref of refs) {
      const p = params.get(ref);
      if (!p)
        problems.push(
          `spec.workloads[${i}] (${w.name}): {{ params.${ref} }} names no parameter (declare it in spec.parameters)`,
        );
      else if (p.secret)
        problems.push(
          `spec.workloads[${i}] (${w.name}): {{ params.${ref} }} would put a secret parameter into a plain manifest: read it from the generated Secret ${paramsSecretName(pkg.metadata.name)} (secretKeyRef key ${ref})`,
        );
    }
  });
  if (pkg.spec.dependsOn.some((d) => d.name === pkg.metadata.name))
    problems.push('spec.dependsOn: a package cannot depend on itself');
  if (problems.length) throw new PackageError(problems.join('; '));
  return pkg;
}

/** What a deployment asks for: `profile` and `values` of a Placement's `spec.package`. */
export interface ValuesRequest {
  profile?: string | undefined;
  values?: Record<string, unknown> | undefined;
}

/**
 * The values a deployment runs with: parameter defaults, then the profile's values, then the
 * placement's own. Throws a PackageError naming every missing, unknown or ill-typed parameter.
 */
export function resolveValues(pkg: PackageManifest, req: ValuesRequest): Record<string, Value> {
  const problems: string[] = [];
  const label = `package ${pkg.metadata.name} ${pkg.spec.version}`;
  let profile: Record<string, Value> = {};
  if (req.profile !== undefined) {
    const p = pkg.spec.profiles[req.profile];
    if (!p) {
      const known = Object.keys(pkg.spec.profiles);
      throw new PackageError(
        `profile: ${label} has no profile "${req.profile}" (${known.length ? `its profiles: ${known.join(', ')}` : 'it has no profiles'})`,
      );
    }
    profile = p;
  }
  const out: Record<string, Value> = {};
  const byName = new Map(pkg.spec.parameters.map((p) => [p.name, p]));
  for (const k of Object.keys(req.values ?? {}))
    if (!byName.has(k))
      problems.push(
        `values.${k}: ${label} has no parameter "${k}" (its parameters: ${[...byName.keys()].join(', ') || 'none'})`,
      );
  for (const p of pkg.spec.parameters) {
    const given = req.values?.[p.name];
    const v = given !== undefined ? given : p.name in profile ? profile[p.name] : p.default;
    if (v === undefined) {
      if (p.required)
        problems.push(
          `values.${p.name}: the ${p.type} parameter ${p.name} is required by ${label}: give it in spec.package.values${p.secret ? ' (it is secret: it goes into a generated Secret)' : ''}`,
        );
      continue;
    }
    const e = checkValue(p, v);
    if (e) problems.push(`values.${p.name}: ${e}`);
    else out[p.name] = v as Value;
  }
  if (problems.length) throw new PackageError(problems.join('; '));
  return out;
}

/** The newest version satisfying `range`, or undefined. */
export function resolveVersion(range: string, versions: string[]): string | undefined {
  return semver.maxSatisfying(versions, range) ?? undefined;
}

export function isVersionRange(r: string): boolean {
  return semver.validRange(r) !== null;
}

/** Versions newest first. */
export function sortVersions(versions: string[]): string[] {
  return [...versions].sort(semver.rcompare);
}

function renderParams(v: unknown, values: Record<string, Value>): unknown {
  if (typeof v === 'string') {
    // A whole string that is one reference takes the value's own type: replicas: "{{ params.n }}" is a number.
    const whole = /^\{\{\s*params\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/.exec(v);
    if (whole && whole[1] in values) return values[whole[1]];
    return v.replace(PARAM_REF, (all, k: string) => (k in values ? String(values[k]) : all));
  }
  if (Array.isArray(v)) return v.map((x) => renderParams(x, values));
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, renderParams(x, values)]));
  return v;
}

/**
 * A package's workloads with `{{ params.X }}` replaced by the values (a parameter without a value
 * renders as ""), and the secret values in a generated Secret added to each workload. Edge
 * templates stay for the scheduler's per-edge customization.
 */
export function renderPackage(
  pkg: PackageManifest,
  values: Record<string, Value>,
): { name: string; manifests: Manifest[] }[] {
  const plain: Record<string, Value> = {};
  const secret: Record<string, string> = {};
  for (const p of pkg.spec.parameters) {
    const v = values[p.name];
    if (p.secret) {
      if (v !== undefined) secret[p.name] = String(v);
    } else plain[p.name] = v ?? '';
  }
  return pkg.spec.workloads.map((w) => {
    const manifests = renderParams(w.manifests, plain) as Manifest[];
    if (Object.keys(secret).length)
      manifests.unshift({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: paramsSecretName(pkg.metadata.name) },
        stringData: secret,
      });
    return { name: w.name, manifests };
  });
}
