/**
 * @module Image pre-staging between the hub and an edge (issue #19; docs/drivers.md, "Pre-staging"):
 * the order the hub writes into an edge's spec document (which images, by digest, with the blobs
 * each is made of, grouped per placement with its byte budget) and what the edge reports back
 * (per image: Present, Staging, OverBudget, Failed, Skipped). Both are one JSON value in their
 * document, replaced whole; the report is peer input and checked against its schema.
 */
import { ImmutableString } from '@automerge/automerge/slim';
import { z } from 'zod';
import { backendOf, type MapBackend, putJson } from './doc-backend.js';

const digest = z.string().regex(/^sha256:[0-9a-f]{64}$/);
const size = z
  .number()
  .int()
  .min(0)
  .max(2 ** 50);

export const StagingBlob = z.object({ digest, size });
export type StagingBlob = z.infer<typeof StagingBlob>;

export const StagingImage = z.object({
  /** `HOST/REPO@sha256:...`, as the workload runs it (hub/images/pins.ts). */
  image: z.string().min(1).max(512),
  manifest: StagingBlob.extend({ mediaType: z.string().max(128) }),
  /** The config, then the layers. */
  blobs: z.array(StagingBlob).max(512),
});
export type StagingImage = z.infer<typeof StagingImage>;

export const StagingGroup = z.object({
  /** `PROJECT/PLACEMENT` whose rollout asks for these images. */
  placement: z.string().min(1).max(256),
  /** At most this many bytes may cross the edge's link for this placement's images. */
  budgetBytes: size.optional(),
  images: z.array(StagingImage).max(256),
});
export type StagingGroup = z.infer<typeof StagingGroup>;

export const StagingOrder = z.object({ groups: z.array(StagingGroup).max(1024) });
export type StagingOrder = z.infer<typeof StagingOrder>;

export const IMAGE_STAGE_STATES = ['Present', 'Staging', 'OverBudget', 'Failed', 'Skipped'] as const;
export type ImageStageState = (typeof IMAGE_STAGE_STATES)[number];

export const StagedImage = z.object({
  image: z.string().min(1).max(512),
  state: z.enum(IMAGE_STAGE_STATES),
  /** Bytes of the image's blobs (manifest, config, layers). */
  size,
  /** Bytes of them on the edge so far. */
  done: size,
  reason: z.string().max(1024).optional(),
});
export type StagedImage = z.infer<typeof StagedImage>;

export const StagingReport = z.object({ images: z.array(StagedImage).max(1024), at: z.number() });
export type StagingReport = z.infer<typeof StagingReport>;

/** Image states the rollout may switch on: the bytes are there, or the driver pulls at update time. */
export const STAGED_STATES: readonly ImageStageState[] = ['Present', 'Skipped'];

/** `412 MB` as status shows staged bytes (decimal megabytes, one decimal below 10). */
export function formatMB(bytes: number): string {
  const mb = bytes / 1e6;
  return `${mb < 10 ? mb.toFixed(1) : Math.round(mb)} MB`;
}

/** `images staged 2/3, 412 MB`: how many are staged (or need no staging) and the bytes on the edge. */
export function stagingSummary(images: readonly StagedImage[]): string {
  const staged = images.filter((i) => STAGED_STATES.includes(i.state)).length;
  const bytes = images.reduce((n, i) => n + (i.state === 'Present' ? i.size : i.done), 0);
  return `images staged ${staged}/${images.length}, ${formatMB(bytes)}`;
}

/** The image's bytes: manifest, config and layers. */
export function stagingImageSize(i: StagingImage): number {
  return i.manifest.size + i.blobs.reduce((n, b) => n + b.size, 0);
}

interface StagingField {
  imageStaging?: ImmutableString;
}

function read<T>(v: ImmutableString | undefined, schema: z.ZodType<T>): T | undefined {
  if (v === undefined) return undefined;
  try {
    const r = schema.safeParse(JSON.parse(v instanceof ImmutableString ? v.val : String(v)));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

function write(d: StagingField, value: unknown): boolean {
  return putJson(backendOf(d), '_root', 'imageStaging', value);
}

/** The spec's staging order (written by the hub only, hub/images/staging.ts). */
export function readSpecStaging(doc: StagingField): StagingOrder | undefined {
  return read(doc.imageStaging, StagingOrder);
}

/** The one writer of the spec's staging order (undefined or no group removes it); true when it changed. */
export function setSpecStaging(d: StagingField, order: StagingOrder | undefined): boolean {
  return putSpecStaging(backendOf(d), order);
}

/** setSpecStaging on a document's backend (sync/store.ts `changeBackend`: no JS view). */
export function putSpecStaging(b: MapBackend, order: StagingOrder | undefined): boolean {
  return putJson(b, '_root', 'imageStaging', order?.groups.length ? order : undefined);
}

/** The report's staging state (peer input, checked: a value that does not fit reads as none). */
export function readReportStaging(doc: StagingField): StagingReport | undefined {
  return read(doc.imageStaging, StagingReport);
}

/** The one writer of the report's staging state (edge/images/staging.ts); true when it changed. */
export function setReportStaging(d: StagingField, r: StagingReport | undefined): boolean {
  return write(d, r);
}
