/**
 * @module Registry objects on the hub: their password sealed at rest with the hub's key (the same
 * SecretBox as workload Secrets, hub/secrets.ts), redacted in every answer, and opened only to
 * build the pull Secret of one workload for one edge, and only for the registries that workload's
 * images name (docs/drivers.md, "Registries").
 */
import { OutpostError } from '../../core/errors.js';
import {
  DOCKER_CONFIG_KEY,
  DOCKER_CONFIG_TYPE,
  dockerConfigJson,
  PULL_SECRET_NAME,
  registriesOf,
  registryHost,
  registryTlsAnnotations,
  withPullSecret,
  type RegistryAccess,
} from '../../core/images.js';
import type { Manifest, Registry, RegistrySpec } from '../../core/resources.js';
import { EDGE_SEALED_PREFIX, HUB_SEALED_PREFIX, REDACTED } from '../../core/secrets.js';
import type { SecretBox } from '../secrets.js';

/**
 * The spec as stored: the password sealed. REDACTED keeps the stored password (get -o yaml, edit,
 * apply), a value this hub sealed is kept, anything else is sealed.
 */
export function sealRegistrySpec(box: SecretBox, spec: RegistrySpec, current: RegistrySpec | undefined): RegistrySpec {
  const pw = spec.credentials?.password;
  if (pw === undefined) return spec;
  let sealed: string;
  if (pw === REDACTED) {
    const stored = current?.credentials?.password;
    if (stored === undefined)
      throw new OutpostError(
        'invalid',
        `spec.credentials.password: is ${REDACTED} but the stored Registry has no password to keep: give the password`,
      );
    sealed = stored;
  } else if (pw.startsWith(HUB_SEALED_PREFIX)) {
    try {
      box.open(pw);
    } catch (err) {
      throw new OutpostError('invalid', `spec.credentials.password: ${(err as Error).message}`);
    }
    sealed = pw;
  } else if (pw.startsWith(EDGE_SEALED_PREFIX)) {
    throw new OutpostError('invalid', 'spec.credentials.password: is sealed to an edge; give the plain password');
  } else sealed = box.seal(pw);
  return { ...spec, credentials: { username: spec.credentials!.username, password: sealed } };
}

/** The Registry as the API shows it: the password REDACTED, or in clear when revealed. */
export function registryForOutput(box: SecretBox, r: Registry, reveal: boolean): Registry {
  const c = r.spec.credentials;
  if (!c) return r;
  const password = reveal && c.password.startsWith(HUB_SEALED_PREFIX) ? box.open(c.password) : REDACTED;
  return { ...r, spec: { ...r.spec, credentials: { username: c.username, password } } };
}

/**
 * The manifests as one edge receives them: when their images name a registry of the project that
 * has credentials, a CA bundle or the insecure flag, a pull Secret (its value sealed with the hub's
 * key, like any stored Secret value, so the scheduler seals it to the edge) is added and named in
 * every pod's imagePullSecrets. Registries the images do not name are never included.
 */
export function withRegistryAccess(box: SecretBox, registries: Registry[], manifests: Manifest[]): Manifest[] {
  if (registries.length === 0) return manifests;
  const hosts = new Set(registriesOf(manifests));
  const used: RegistryAccess[] = registries
    .filter((r) => hosts.has(registryHost(r.spec.url)))
    .filter((r) => r.spec.credentials || r.spec.caBundle || r.spec.insecure || r.spec.url.startsWith('http://'))
    .map((r) => ({
      host: registryHost(r.spec.url),
      ...(r.spec.credentials
        ? {
            username: r.spec.credentials.username,
            password: r.spec.credentials.password.startsWith(HUB_SEALED_PREFIX)
              ? box.open(r.spec.credentials.password)
              : r.spec.credentials.password,
          }
        : {}),
      ...(r.spec.caBundle ? { caBundle: r.spec.caBundle } : {}),
      ...(r.spec.insecure || r.spec.url.startsWith('http://') ? { insecure: true } : {}),
    }))
    .sort((a, b) => a.host.localeCompare(b.host));
  if (used.length === 0) return manifests;
  const annotations = registryTlsAnnotations(used);
  const secret: Manifest = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: PULL_SECRET_NAME, ...(Object.keys(annotations).length ? { annotations } : {}) },
    type: DOCKER_CONFIG_TYPE,
    data: { [DOCKER_CONFIG_KEY]: box.seal(Buffer.from(dockerConfigJson(used), 'utf8').toString('base64')) },
  };
  return withPullSecret(manifests, secret);
}
