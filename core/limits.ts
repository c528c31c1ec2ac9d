/**
 * @module Every size bound of Outpost in one place, each with the reason for its value.
 *
 * Peer and operator input is bounded where it enters (an HTTP body, a YAML text, a wire frame) and
 * again where it is stored or sent on: a stored object is rendered into every selected edge's spec
 * document and synced in frames, so what is accepted must stay well under the frame limit.
 */

/** One WebSocket frame, either way; a larger one closes the connection (ws close code 1009). */
export const MAX_FRAME_BYTES = 8 * 1024 * 1024;

/** One API request body, counted as it is read (chunked or not): manifests are small. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * One stored object (Workload, Placement, Edge) as JSON. A YAML text can expand far beyond its
 * own size through aliases (99 aliases to a 300 KB scalar: a 302 KB request, a 30 MB workload, a
 * hub out of heap), so the bound applies to what parsing produced, not to the request.
 */
export const MAX_OBJECT_BYTES = 1024 * 1024;

/**
 * One workload as rendered for one edge (after customization): a placement's patches can grow a
 * workload on every edge it selects. An edge's spec document holds all its workloads and is synced
 * in frames of MAX_FRAME_BYTES; a rendered workload past this bound is that edge's error instead.
 */
export const MAX_RENDERED_WORKLOAD_BYTES = 2 * 1024 * 1024;

/**
 * Values produced while converting one YAML text into JSON, counted as they are produced (strings
 * by length, everything else as a few bytes): aliases make this grow without the text growing.
 */
export const MAX_YAML_EXPANDED_BYTES = 4 * MAX_OBJECT_BYTES;

/** One heartbeat message from an edge: a timestamp and a few gauges. */
export const MAX_HEARTBEAT_BYTES = 16 * 1024;
/** Metric keys in one heartbeat (an edge sends a handful). */
export const MAX_HEARTBEAT_METRICS = 64;
