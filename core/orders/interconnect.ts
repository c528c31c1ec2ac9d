/**
 * @module The interconnect order (docs/interconnect.md): what each consuming edge must listen on
 * for the ServiceImports that select it (written by hub/interconnect/, followed by
 * edge/interconnect/listeners.ts), what the edge reports of each listener, and the header of the
 * stream a consuming edge opens to the hub for each connection it accepts.
 *
 * Both parts are one JSON value at the root key `interconnect` of the spec and of the report,
 * replaced whole; the report's is written at most every `INTERCONNECT_REPORT_MS` (a connection
 * does not make a change of the document each).
 */
import { ImmutableString } from '@automerge/automerge/slim';
import { z } from 'zod';
import { backendOf, putJson, type MapBackend } from '../doc-backend.js';
import { NAME_PATTERN } from '../ids.js';
import type { OrderKind } from './kind.js';

/** The shortest time between two writes of an edge's interconnect report. */
export const INTERCONNECT_REPORT_MS = 1_000;

const name = z.string().regex(NAME_PATTERN);
const port = z.number().int().min(1).max(65535);

/** One listener a consuming edge holds: ServiceImport `import` (of the edge's project) on 127.0.0.1:`port`. */
export const InterconnectListen = z.object({ import: name, port });
export type InterconnectListen = z.infer<typeof InterconnectListen>;

const InterconnectOrder = z.object({ listen: z.array(InterconnectListen).max(1024) });

/** What a consuming edge says of one import's listener. */
export const ImportReport = z.object({
  port,
  /** The listener is bound; false with `error` (the port is taken, say). */
  listening: z.boolean(),
  error: z.string().max(2000).optional(),
  /** Connections open now, accepted in all, refused or failed (the hub said no, or the hub is away). */
  open: z.number().int().min(0),
  total: z.number().int().min(0),
  refused: z.number().int().min(0),
  /** Connections that were made and then failed (reset by either end, idle, an edge gone). */
  failed: z.number().int().min(0).default(0),
  /** Bytes of closed connections: from the client to the service (out), back (in). */
  bytesOut: z.number().int().min(0).default(0),
  bytesIn: z.number().int().min(0).default(0),
  /** Connect latency (accepted to the serving edge connected to the workload) over the last connections, ms. */
  connectP50Ms: z.number().min(0).optional(),
  connectP99Ms: z.number().min(0).optional(),
  /** Why the last connection was refused or failed, and when (epoch ms, the edge's clock). */
  lastError: z.string().max(2000).optional(),
  lastErrorAt: z.number().int().min(0).optional(),
});
export type ImportReport = z.infer<typeof ImportReport>;

const InterconnectReport = z.record(name, ImportReport);

/** The stream a consuming edge opens to the hub for one accepted connection: which import it is for. */
export const InterconnectOpen = z.object({ type: z.literal('interconnect'), import: name });
export type InterconnectOpen = z.infer<typeof InterconnectOpen>;

/**
 * The META a serving edge sends once it is connected to the workload, and the hub passes on to the
 * consuming edge with the serving edge's name: the connection is made (the hub fails over to
 * another serving edge only before it), and the consumer measures its connect latency to it.
 */
export const InterconnectConnected = z.object({ connected: z.literal(true), edge: name.optional() });
export type InterconnectConnected = z.infer<typeof InterconnectConnected>;

interface InterconnectField {
  interconnect?: ImmutableString;
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

const byImport = (a: InterconnectListen, b: InterconnectListen) =>
  a.import < b.import ? -1 : a.import > b.import ? 1 : 0;

/** The listeners an edge must hold (hub/interconnect/ writes them, the edge follows them). */
export const INTERCONNECT_ORDER: OrderKind<InterconnectListen[]> = {
  name: 'interconnect',
  put: (b: MapBackend, listen) =>
    void putJson(b, '_root', 'interconnect', listen?.length ? { listen: [...listen].sort(byImport) } : undefined),
  text: (listen) => JSON.stringify([...(listen ?? [])].sort(byImport)),
};

/** The spec's listeners, from a spec document (written by the hub only; a value that does not fit reads as none). */
export function readSpecInterconnect(doc: object): InterconnectListen[] {
  return read((doc as InterconnectField).interconnect, InterconnectOrder)?.listen ?? [];
}

/** The report's listeners by import (peer input, checked: a value that does not fit reads as none). */
export function readReportInterconnect(doc: object): Record<string, ImportReport> | undefined {
  return read((doc as InterconnectField).interconnect, InterconnectReport);
}

/** The one writer of the report's interconnect part (edge/interconnect/listeners.ts); true when it changed. */
export function setReportInterconnect(d: object, r: Record<string, ImportReport> | undefined): boolean {
  return putJson(backendOf(d), '_root', 'interconnect', r && Object.keys(r).length ? r : undefined);
}
