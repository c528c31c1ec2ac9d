/**
 * @module Data to the sites (docs/data.md, "Data to the sites"): what the hub orders an edge to
 * hold for each DataObject that selects it, and what the edge reports back. Both travel in the
 * edge's mailbox (core/mailbox.ts: `spec.data` and `report.data`, one JSON value per object,
 * replaced whole), written by hub/data/delivery.ts and edge/data/delivery.ts.
 */
import { z } from 'zod';
import { DIGEST_PATTERN } from './blobs.js';
import { isObjectPath, type DataObject } from './resources.js';

/** The edge's directory for delivered objects, under its data directory; workloads read from it. */
export const OBJECTS_DIR_ENV = 'OUTPOST_DATA_OBJECTS_DIR';
/**
 * A manifest annotation asking for the objects directory inside the workload's containers, read
 * only, at the path it gives (podman, kubernetes). Process workloads with the annotation get OUTPOST_DATA_OBJECTS_DIR (the host directory) instead.
 */
export const OBJECTS_MOUNT_ANNOTATION = 'data.outpost.dev/objects';

/** One DataObject as the hub orders an edge to hold it. */
export const DeliveryOrder = z.strictObject({
  version: z.string().min(1).max(64),
  digest: z.string().regex(DIGEST_PATTERN),
  size: z.number().int().min(0),
  path: z.string().refine(isObjectPath, 'path must be relative, without ".", ".." or hidden segments'),
  /** Milliseconds since epoch: the file replaces the previous version then, not before. */
  activateAt: z.number().int().min(0).optional(),
  /** Milliseconds since epoch: the file is removed then. */
  expiresAt: z.number().int().min(0).optional(),
});
export type DeliveryOrder = z.infer<typeof DeliveryOrder>;

export const DELIVERY_STATES = ['Pending', 'Downloading', 'Waiting', 'Delivered', 'Expired', 'Failed'] as const;
/**
 * Pending: not started; Downloading: the blob is coming (percent in tenths); Waiting: downloaded,
 * activates at activateAt; Delivered: the file holds this version; Expired: removed at expiresAt;
 * Failed: cannot be delivered (reason: no room, bad bytes), retried when the order changes or the agent restarts.
 */
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** What the edge reports for one DataObject: written only on a state change or another tenth of a download. */
export const DeliveryProgress = z.strictObject({
  version: z.string().max(64),
  digest: z.string().max(80),
  /** Where the file is (relative to the objects directory): the edge removes it when the order goes. */
  path: z.string().max(512),
  state: z.enum(DELIVERY_STATES),
  percent: z.number().int().min(0).max(100).optional(),
  reason: z.string().max(1024).optional(),
  /** Milliseconds since epoch of this state. */
  at: z.number(),
  /** The version the file held before this one, while it still does (Downloading, Waiting). */
  previous: z.string().max(64).optional(),
});
export type DeliveryProgress = z.infer<typeof DeliveryProgress>;

/** Where a DataObject's file lands under each edge's objects directory: `spec.path`, or its name. */
export function dataObjectPath(o: DataObject): string {
  return o.spec.path ?? o.metadata.name;
}

/** The order a DataObject gives every edge it selects. */
export function deliveryOrder(o: DataObject): DeliveryOrder {
  const { version, digest, size, activateAt, expiresAt } = o.spec;
  return {
    version,
    digest,
    size,
    path: dataObjectPath(o),
    ...(activateAt ? { activateAt: Date.parse(activateAt) } : {}),
    ...(expiresAt ? { expiresAt: Date.parse(expiresAt) } : {}),
  };
}

/**
 * The version the edge's file holds now, as its report says: the reported version once
 * Delivered; on the way to the next one (Downloading, Waiting), the one before it.
 */
export function heldVersion(p: DeliveryProgress | undefined): string | undefined {
  return p?.state === 'Delivered' ? p.version : p?.previous;
}

/** The one rule for "this edge holds this order's bytes now". */
export function isDelivered(
  order: Pick<DeliveryOrder, 'version' | 'digest'>,
  p: DeliveryProgress | undefined,
): boolean {
  return p?.state === 'Delivered' && p.version === order.version && p.digest === order.digest;
}

/**
 * Two object paths one edge cannot hold for two objects: the same file, or one a directory the
 * other needs (`models` and `models/m.bin`).
 */
export function pathsOverlap(a: string, b: string): boolean {
  return a === b || b.startsWith(`${a}/`) || a.startsWith(`${b}/`);
}

/** `models/a/m.bin` -> `models`, `models/a`. */
function directoriesOf(p: string): string[] {
  const out: string[] = [];
  for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) out.push(p.slice(0, i));
  return out;
}

/**
 * For each object whose path overlaps another's (pathsOverlap), the names it overlaps; the others
 * are absent. In time linear in the objects (times the depth of their paths), not in their pairs.
 */
export function overlappingPaths(objects: readonly { name: string; path: string }[]): Map<string, Set<string>> {
  const byPath = new Map<string, string[]>();
  for (const o of objects) (byPath.get(o.path) ?? byPath.set(o.path, []).get(o.path)!).push(o.name);
  const out = new Map<string, Set<string>>();
  const link = (a: string, b: string): void => {
    (out.get(a) ?? out.set(a, new Set()).get(a)!).add(b);
    (out.get(b) ?? out.set(b, new Set()).get(b)!).add(a);
  };
  for (const names of byPath.values())
    for (let i = 1; i < names.length; i++) for (const n of names.slice(0, i)) link(n, names[i]!);
  for (const o of objects) for (const d of directoriesOf(o.path)) for (const n of byPath.get(d) ?? []) link(n, o.name);
  return out;
}

/**
 * Which objects keep their path on one edge, the one rule of the hub (which orders it writes) and
 * the edge (which orders it acts on): taken in the caller's order of precedence, each keeps its
 * path unless it overlaps one kept before. Returns the others, each with the object that holds it.
 */
export function pathHolders<T extends { name: string; path: string }>(ranked: readonly T[]): Map<string, T> {
  const kept = new Map<string, T>();
  // Every directory a kept path needs, with the object that needs it: no other object's file may be one.
  const dirs = new Map<string, T>();
  const blocked = new Map<string, T>();
  for (const o of ranked) {
    let holder = kept.get(o.path) ?? dirs.get(o.path);
    for (const d of directoriesOf(o.path)) holder ??= kept.get(d);
    if (holder) {
      blocked.set(o.name, holder);
      continue;
    }
    kept.set(o.path, o);
    for (const d of directoriesOf(o.path)) if (!dirs.has(d)) dirs.set(d, o);
  }
  return blocked;
}

/**
 * The precedence of an object's claim on its path on one edge, lower first: the edge already
 * holds or fetches it (it reported a state other than Failed), then it reported a failure, then
 * it reported nothing; between equals, the first by name. The hub and the edge rank alike, so the
 * orders the hub writes are the ones the edge acts on.
 */
export function claimRank(p: Pick<DeliveryProgress, 'state'> | undefined): number {
  return p === undefined ? 2 : p.state === 'Failed' ? 1 : 0;
}

/** Orders `items` by claimRank of their report, then by name. */
export function byClaim<T extends { name: string }>(
  items: T[],
  reportOf: (item: T) => DeliveryProgress | undefined,
): T[] {
  const rank = new Map(items.map((i) => [i, claimRank(reportOf(i))]));
  return [...items].sort((a, b) => rank.get(a)! - rank.get(b)! || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
