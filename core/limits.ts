/**
 * @module Sizes Outpost accepts, each with the reason for its value, known to the CLI too so it can
 * refuse early (before parsing a 30 MB file) and name the object that is too big. One object is
 * bounded because it travels in every selected edge's spec document and its history; one request
 * because the hub reads it whole; one frame because a peer's input is untrusted.
 */

/** One object (a Workload with its manifests, a Placement), as JSON. Kubernetes allows ~1.5 MB. */
export const MAX_OBJECT_BYTES = 1024 * 1024;
/** One API request body: an `apply` of many objects. Counted as it is read, chunked or not. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** One WebSocket frame, either way; a larger one closes the connection (ws close code 1009). */
export const MAX_FRAME_BYTES = 8 * 1024 * 1024;

/**
 * One workload as rendered for one edge (after customization): a placement's patches can grow a
 * workload on every edge it selects. An edge's spec document holds all its workloads and is synced
 * in frames of MAX_FRAME_BYTES; a rendered workload past this bound is that edge's error instead.
 */
export const MAX_RENDERED_WORKLOAD_BYTES = 2 * 1024 * 1024;

/**
 * Values produced while converting one YAML text into JSON, counted as they are produced (strings
 * by length, everything else as 8 bytes). Aliases repeat their anchor's value without repeating
 * its text: 99 aliases to a 300 KB scalar turned a 302 KB request into a 30 MB workload and a hub
 * out of heap. yaml's maxAliasCount bounds how many aliases there are, not what they expand to.
 */
export const MAX_YAML_EXPANDED_BYTES = MAX_REQUEST_BYTES;

/**
 * What one archive (a package's .tgz) may expand to, counted as it is decompressed: the tar stream,
 * headers and padding included. Gzip makes 2 GiB of zeros 2 MB, so the compressed size bounds
 * nothing. A package is templates plus the small files its workloads ship; large data travels as
 * blobs or in images (docs/bytes.md). Expanding 1 GiB costs the hub about a second of one core and
 * no memory: the reader streams (core/archive.ts) and stops at the first byte over.
 */
export const MAX_ARCHIVE_EXPANDED_BYTES = 1024 * 1024 * 1024;
/**
 * One entry (file) of an archive, as its tar header declares it (tar hands an entry exactly the
 * bytes its header declares): refused at the header, reading stops there, so a huge entry costs
 * nothing to find out. A package's data files are small; what is larger travels as a blob.
 */
export const MAX_ARCHIVE_ENTRY_BYTES = 256 * 1024 * 1024;

/** One heartbeat message from an edge: a timestamp and a few gauges. */
export const MAX_HEARTBEAT_BYTES = 16 * 1024;
/** Metric keys in one heartbeat (an edge sends a handful; 20,000 once made a healthy edge 7x slower). */
export const MAX_HEARTBEAT_METRICS = 64;

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 * 1024) return `${(n / 1024 / 1024 / 1024).toFixed(1)} GiB`;
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} bytes`;
}

/** The fix to name when an object is too big: the data does not belong in a manifest. */
export const TOO_BIG_HINT =
  'keep large data out of manifests: build it into the image, or upload it with `outpost blob push` (docs/bytes.md)';

export interface RawDocument {
  /** 1-based, counting empty documents, as the YAML parser counts them. */
  index: number;
  /** 1-based line where the document starts. */
  line: number;
  bytes: number;
  /** `Workload big` when it can be seen without parsing, else undefined. */
  label?: string;
}

/** `Workload big`, read with two regular expressions from the start of a document, without parsing it. */
function sniffLabel(text: string): string | undefined {
  const head = text.slice(0, 64 * 1024);
  const kind = /^kind:\s*["']?([A-Za-z0-9]+)/m.exec(head)?.[1] ?? /"kind"\s*:\s*"([A-Za-z0-9]+)"/.exec(head)?.[1];
  const name =
    /^metadata:\s*\{[^}\n]*\bname:\s*["']?([a-z0-9][-a-z0-9.]*)/m.exec(head)?.[1] ??
    /^metadata:[ \t]*\n(?:[ \t]+.*\n)*?[ \t]+name:\s*["']?([a-z0-9][-a-z0-9.]*)/m.exec(head)?.[1] ??
    /"metadata"\s*:\s*\{\s*"name"\s*:\s*"([^"]+)"/.exec(head)?.[1];
  if (!kind && !name) return undefined;
  return [kind ?? 'object', name].filter(Boolean).join(' ');
}

/**
 * The documents of a YAML stream with their sizes, found by their `---` separators without parsing
 * (linear, milliseconds for 30 MB), so sizes can be checked before a parser spends seconds and
 * gigabytes on a text that will be refused anyway.
 */
export function rawDocuments(text: string): RawDocument[] {
  const cuts = [...text.matchAll(/^---(?=[ \t]|\r?$)/gm)].map((m) => m.index);
  const bounds = [0, ...cuts, text.length];
  // Only comments before the first `---`: that is no document (the parser does not count it).
  const leadingEmpty = cuts.length > 0 && /^(\s*(#.*)?\n)*\s*$/.test(text.slice(0, cuts[0]));
  const out: RawDocument[] = [];
  let line = 1;
  let counted = 0;
  let index = 0;
  for (let i = 0; i + 1 < bounds.length; i++) {
    const [start, end] = [bounds[i], bounds[i + 1]];
    for (let j = counted; j < start; j++) if (text.charCodeAt(j) === 10) line++;
    counted = start;
    if (i === 0 && leadingEmpty) continue;
    index++;
    const body = text.slice(start, end);
    if (body.replace(/^---/, '').trim() === '') continue;
    out.push({
      index,
      line: body.startsWith('---') ? line + 1 : line,
      bytes: new TextEncoder().encode(body).length,
      label: sniffLabel(body),
    });
  }
  return out;
}

/** The message for an object over MAX_OBJECT_BYTES, naming it. */
export function tooBigMessage(what: string, bytes: number): string {
  return `${what} is ${formatBytes(bytes)}, over the ${formatBytes(MAX_OBJECT_BYTES)} limit for one object: ${TOO_BIG_HINT}`;
}
