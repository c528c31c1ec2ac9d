/**
 * @module A GitRepo's secrets (its HTTPS password or token, its SSH key, its webhook secret): sealed
 * at rest with the hub's key as a Registry's password is (hub/images/registries.ts, the same
 * SecretBox), redacted in every answer, opened only to fetch (hub/gitops/git.ts) or to check a
 * webhook's signature (hub/gitops/webhook.ts).
 */
import { OutpostError } from '../../core/errors.js';
import type { GitRepo, GitRepoSpec } from '../../core/resources.js';
import { EDGE_SEALED_PREFIX, HUB_SEALED_PREFIX, REDACTED } from '../../core/secrets.js';
import type { SecretBox } from '../secrets.js';

/** The secret fields of a GitRepo's spec, by their path in messages. */
type SecretField = 'credentials.password' | 'credentials.sshPrivateKey' | 'webhookSecret';

function getField(spec: GitRepoSpec | undefined, f: SecretField): string | undefined {
  if (!spec) return undefined;
  if (f === 'webhookSecret') return spec.webhookSecret;
  return f === 'credentials.password' ? spec.credentials?.password : spec.credentials?.sshPrivateKey;
}

/** REDACTED keeps the stored value (`get -o yaml`, edit, apply), a value this hub sealed is kept, anything else is sealed. */
function sealField(box: SecretBox, f: SecretField, v: string, current: GitRepoSpec | undefined): string {
  if (v === REDACTED) {
    const stored = getField(current, f);
    if (stored === undefined)
      throw new OutpostError(
        'invalid',
        `spec.${f}: is ${REDACTED} but the stored GitRepo has no value to keep: give the value`,
      );
    return stored;
  }
  if (v.startsWith(HUB_SEALED_PREFIX)) {
    try {
      box.open(v);
    } catch (err) {
      throw new OutpostError('invalid', `spec.${f}: ${(err as Error).message}`);
    }
    return v;
  }
  if (v.startsWith(EDGE_SEALED_PREFIX))
    throw new OutpostError('invalid', `spec.${f}: is sealed to an edge; give the plain value`);
  return box.seal(v);
}

/** The spec as stored: every secret field sealed. */
export function sealGitRepoSpec(box: SecretBox, spec: GitRepoSpec, current: GitRepoSpec | undefined): GitRepoSpec {
  const out: GitRepoSpec = { ...spec };
  if (spec.credentials) {
    const c = { ...spec.credentials };
    if (c.password !== undefined) c.password = sealField(box, 'credentials.password', c.password, current);
    if (c.sshPrivateKey !== undefined)
      c.sshPrivateKey = sealField(box, 'credentials.sshPrivateKey', c.sshPrivateKey, current);
    out.credentials = c;
  }
  if (spec.webhookSecret !== undefined)
    out.webhookSecret = sealField(box, 'webhookSecret', spec.webhookSecret, current);
  return out;
}

const open = (box: SecretBox, v: string) => (v.startsWith(HUB_SEALED_PREFIX) ? box.open(v) : v);

/** The GitRepo as the API shows it: its secrets REDACTED, or in clear when revealed. */
export function gitRepoForOutput(box: SecretBox, r: GitRepo, reveal: boolean): GitRepo {
  const show = (v: string | undefined) => (v === undefined ? undefined : reveal ? open(box, v) : REDACTED);
  const spec: GitRepoSpec = { ...r.spec };
  if (r.spec.credentials) {
    const c = { ...r.spec.credentials };
    if (c.password !== undefined) c.password = show(c.password);
    if (c.sshPrivateKey !== undefined) c.sshPrivateKey = show(c.sshPrivateKey);
    spec.credentials = c;
  }
  if (r.spec.webhookSecret !== undefined) spec.webhookSecret = show(r.spec.webhookSecret);
  return { ...r, spec };
}

/** What a fetch needs in clear: opened here, handed to git through its environment only. */
export interface GitCredentials {
  username?: string;
  password?: string;
  sshPrivateKey?: string;
  knownHosts?: string;
}

export function openCredentials(box: SecretBox, spec: GitRepoSpec): GitCredentials | undefined {
  const c = spec.credentials;
  if (!c) return undefined;
  return {
    ...(c.username !== undefined ? { username: c.username } : {}),
    ...(c.password !== undefined ? { password: open(box, c.password) } : {}),
    ...(c.sshPrivateKey !== undefined ? { sshPrivateKey: open(box, c.sshPrivateKey) } : {}),
    ...(c.knownHosts !== undefined ? { knownHosts: c.knownHosts } : {}),
  };
}

export function openWebhookSecret(box: SecretBox, spec: GitRepoSpec): string | undefined {
  return spec.webhookSecret === undefined ? undefined : open(box, spec.webhookSecret);
}
