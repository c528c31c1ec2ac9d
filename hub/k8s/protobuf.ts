/**
 * @module Reads the Kubernetes protobuf encoding of the few built-in objects clients POST here:
 * kubectl sends its self reviews (`auth can-i`, `auth whoami`) as
 * `application/vnd.kubernetes.protobuf`, not JSON. The hub answers in JSON (which those clients
 * accept too), so only decoding is needed, and only of the fields the reviews read.
 *
 * The envelope (k8s.io/apimachinery runtime.Unknown) is the magic `k8s\0`, then a message whose
 * field 2 holds the object's own message.
 */
import { OutpostError } from '../../core/errors.js';

export const PROTOBUF = 'application/vnd.kubernetes.protobuf';

type Fields = Map<number, (Buffer | number)[]>;

function varint(buf: Buffer, at: { i: number }): number {
  let n = 0;
  let shift = 0;
  for (;;) {
    if (at.i >= buf.length) throw new OutpostError('bad_request', 'the protobuf body ends inside a number');
    const b = buf[at.i++];
    n += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) return n;
    shift += 7;
    if (shift > 63) throw new OutpostError('bad_request', 'the protobuf body holds a number too long');
  }
}

/** One message's fields: varints as numbers, length-delimited ones as bytes (the others skipped). */
function fields(buf: Buffer): Fields {
  const out: Fields = new Map();
  const at = { i: 0 };
  while (at.i < buf.length) {
    const key = varint(buf, at);
    const field = Math.floor(key / 8);
    const wire = key & 7;
    let v: Buffer | number;
    if (wire === 0) v = varint(buf, at);
    else if (wire === 2) {
      const len = varint(buf, at);
      if (at.i + len > buf.length) throw new OutpostError('bad_request', 'the protobuf body ends inside a field');
      v = buf.subarray(at.i, at.i + len);
      at.i += len;
    } else if (wire === 1) {
      at.i += 8;
      continue;
    } else if (wire === 5) {
      at.i += 4;
      continue;
    } else throw new OutpostError('bad_request', `the protobuf body has a field of wire type ${wire}`);
    const list = out.get(field) ?? [];
    list.push(v);
    out.set(field, list);
  }
  return out;
}

const str = (f: Fields, n: number): string | undefined => {
  const v = f.get(n)?.[0];
  return Buffer.isBuffer(v) ? v.toString('utf8') : undefined;
};
const msg = (f: Fields, n: number): Fields | undefined => {
  const v = f.get(n)?.[0];
  return Buffer.isBuffer(v) ? fields(v) : undefined;
};

/** The object inside the `k8s\0` envelope. */
function unwrap(body: Buffer): Fields {
  if (body.length < 4 || body.subarray(0, 4).toString('latin1') !== 'k8s\0')
    throw new OutpostError('bad_request', 'the protobuf body lacks the Kubernetes envelope (k8s\\0)');
  const unknown = fields(body.subarray(4));
  return msg(unknown, 2) ?? new Map();
}

/**
 * A SelfSubjectAccessReview (authorization/v1 generated.proto: spec 2; spec.resourceAttributes 1
 * {namespace 1, verb 2, group 3, version 4, resource 5, subresource 6, name 7};
 * spec.nonResourceAttributes 2 {path 1, verb 2}), as its JSON form.
 */
export function accessReviewFromProtobuf(body: Buffer): Record<string, unknown> {
  const spec = msg(unwrap(body), 2) ?? new Map();
  const ra = msg(spec, 1);
  const nra = msg(spec, 2);
  const pick = (f: Fields, names: [number, string][]) =>
    Object.fromEntries(names.flatMap(([n, k]) => (str(f, n) !== undefined ? [[k, str(f, n)]] : [])));
  return {
    spec: {
      ...(ra
        ? {
            resourceAttributes: pick(ra, [
              [1, 'namespace'],
              [2, 'verb'],
              [3, 'group'],
              [4, 'version'],
              [5, 'resource'],
              [6, 'subresource'],
              [7, 'name'],
            ]),
          }
        : {}),
      ...(nra
        ? {
            nonResourceAttributes: pick(nra, [
              [1, 'path'],
              [2, 'verb'],
            ]),
          }
        : {}),
    },
  };
}

/** A SelfSubjectRulesReview (spec 2 {namespace 1}), as its JSON form. */
export function rulesReviewFromProtobuf(body: Buffer): Record<string, unknown> {
  const spec = msg(unwrap(body), 2) ?? new Map();
  return { spec: { namespace: str(spec, 1) ?? '' } };
}
