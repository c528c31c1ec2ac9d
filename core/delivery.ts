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
 * only, at the path it gives (podman, kubernetes). Process workloads always get OUTPOST_DATA_OBJECTS_DIR.
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

/** The order a DataObject gives every edge it selects. */
export function deliveryOrder(o: DataObject): DeliveryOrder {
  const { version, digest, size, path, activateAt, expiresAt } = o.spec;
  return {
    version,
    digest,
    size,
    path: path ?? o.metadata.name,
    ...(activateAt ? { activateAt: Date.parse(activateAt) } : {}),
    ...(expiresAt ? { expiresAt: Date.parse(expiresAt) } : {}),
  };
}

/** The one rule for "this edge holds this order's bytes now". */
export function isDelivered(
  order: Pick<DeliveryOrder, 'version' | 'digest'>,
  p: DeliveryProgress | undefined,
): boolean {
  return p?.state === 'Delivered' && p.version === order.version && p.digest === order.digest;
}
