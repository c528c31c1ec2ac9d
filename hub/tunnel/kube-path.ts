/**
 * @module What a kube route request needs (read or write), decided on the path the edge's API
 * server will act on. Kubernetes decodes percent-escapes and matches some path parts without
 * regard to case, so the path is decoded and normalized before it is classified: `/%70roxy/` and
 * `/PROXY/` once passed as reads and let a viewer reach service and node proxies. A path that
 * cannot be decoded to one meaning (double escapes, encoded slashes, dot segments, control
 * characters) is refused rather than guessed at.
 */
import { OutpostError } from '../../core/errors.js';

/** Path segments that run code or reach into pods and nodes: as powerful as exec or port-forward. */
const WRITE_SEGMENTS = new Set(['exec', 'attach', 'portforward', 'proxy']);
/**
 * Resources whose reads need write: a viewer never sees Secret values through the hub (they are
 * redacted in the hub's own API, docs/security.md), so reading them from the cluster is not a read.
 */
const SECRET_SEGMENTS = new Set(['secrets']);

/**
 * The decoded segments of a kube API path, lower-cased for classification. Throws a 400 naming
 * the problem for a path that could mean something else once decoded.
 */
export function kubePathSegments(rawPath: string): string[] {
  const refuse = (why: string) =>
    new OutpostError('bad_request', `kube path ${JSON.stringify(rawPath.slice(0, 200))}: ${why}: send a plain path`);
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    throw refuse('it has an invalid percent-escape');
  }
  if (/%[0-9a-f]{2}/i.test(decoded)) throw refuse('it is percent-encoded twice');
  if (/%2f|%5c/i.test(rawPath) || decoded.includes('\\')) throw refuse('it has an encoded slash or a backslash');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(decoded)) throw refuse('it has control characters');
  const segments = decoded.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '.' || s === '..')) throw refuse('it has dot segments');
  return segments.map((s) => s.toLowerCase());
}

/**
 * Read or write for a kube route request. Reads are GET, HEAD and OPTIONS on paths with no
 * subresource that runs code (exec, attach, portforward, proxy) and no `secrets` in any segment;
 * everything else, and every upgrade, is a write.
 */
export function kubeAction(method: string, rawPath: string, upgrade: boolean): 'read' | 'write' {
  const segments = kubePathSegments(rawPath);
  if (upgrade) return 'write';
  if (!['GET', 'HEAD', 'OPTIONS'].includes(method.toUpperCase())) return 'write';
  // A segment such as `web:80` or `pods/x:proxy` names a port or a subresource after a colon.
  return segments.some(
    (s) => WRITE_SEGMENTS.has(s) || WRITE_SEGMENTS.has(s.split(':').pop() ?? '') || SECRET_SEGMENTS.has(s),
  )
    ? 'write'
    : 'read';
}
