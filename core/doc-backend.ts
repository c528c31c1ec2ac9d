/**
 * @module Writing a mailbox document through its Automerge backend (`A.getBackend(doc)`): the
 * calls the one writers of core/mailbox.ts and core/staging.ts make, inside `A.change` (on the
 * change's backend) and outside it (sync/store.ts `changeBackend`, where no JS view of the
 * document is built: the hub never reads most of the spec documents it writes, and building a
 * view was a fifth of a handshake on a hub replica, docs/benchmarks.md).
 *
 * A scalar string written with datatype 'str' is what an `ImmutableString` is; integers are
 * 'int', as Automerge's own proxies write them. Every writer here writes only what differs, so
 * writing what the document holds makes no change (and no history).
 */
import { getBackend, type Doc } from '@automerge/automerge/slim';

/** The few calls of an Automerge document's backend the writers use. */
export interface MapBackend {
  getWithType(obj: string, prop: string): [string, unknown] | null | undefined;
  keys(obj: string): string[];
  put(obj: string, prop: string, value: string | number, datatype: 'str' | 'int'): void;
  putObject(obj: string, prop: string, value: Record<string, never>): string;
  delete(obj: string, prop: string): void;
  pendingOps(): number;
}

/** The backend of the document an `A.change` callback is changing. */
export const backendOf = (d: object): MapBackend => getBackend(d as unknown as Doc<unknown>) as MapBackend;

/** The id of the map at `obj.prop`, if there is one. */
export function mapId(b: MapBackend, obj: string, prop: string): string | undefined {
  const v = b.getWithType(obj, prop);
  return v && v[0] === 'map' ? (v[1] as string) : undefined;
}

export function putIfChanged(
  b: MapBackend,
  obj: string,
  prop: string,
  value: string | number,
  datatype: 'str' | 'int',
): void {
  const cur = b.getWithType(obj, prop);
  if (!cur || cur[1] !== value || (datatype === 'str' ? cur[0] !== 'str' : cur[0] !== 'int' && cur[0] !== 'uint'))
    b.put(obj, prop, value, datatype);
}

/**
 * `obj.prop` holds the JSON of `value` as an immutable string, or nothing when `value` is
 * undefined. True when the document changed.
 */
export function putJson(b: MapBackend, obj: string, prop: string, value: unknown): boolean {
  const before = b.pendingOps();
  if (value === undefined) {
    if (b.getWithType(obj, prop)) b.delete(obj, prop);
  } else putIfChanged(b, obj, prop, JSON.stringify(value), 'str');
  return b.pendingOps() > before;
}

/**
 * Entry `name` of the root map `field` (made when first needed) holds the JSON of `value`, or
 * nothing when undefined. True when the document changed.
 */
export function putJsonEntry(b: MapBackend, field: string, name: string, value: unknown): boolean {
  const id = mapId(b, '_root', field);
  if (value === undefined) return id !== undefined && putJson(b, id, name, undefined);
  return putJson(b, id ?? b.putObject('_root', field, {}), name, value);
}

/** The entry names of the root map `field` (none when it is absent). */
export function entryNames(b: MapBackend, field: string): string[] {
  const id = mapId(b, '_root', field);
  return id ? b.keys(id) : [];
}
