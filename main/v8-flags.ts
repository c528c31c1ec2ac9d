/**
 * @module V8 settings the long-running roles run with: `outpost hub` and `outpost edge` set them as
 * they start (the CLI's commands do not). Unlike the edge's semi-space and worker pool
 * (edge/process-settings.ts, read once as V8 starts, hence its re-exec), these are read each time
 * V8 decides whether to collect, so `v8.setFlagsFromString` at start is enough; NODE_OPTIONS
 * refuses them anyway.
 *
 * `--external-memory-accounted-in-global-limit`: memory outside the JavaScript heap that V8 is told
 * about (every ArrayBuffer's backing store: each socket read, each TLS record Node decrypts, each
 * WebSocket message `ws` joins) counts toward the heap's global limit, which scales with what the
 * process holds, instead of against a fixed 64 MiB since the last full collection. With the fixed
 * limit a stream relayed at 200 MiB/s allocated that much every ~100 ms in buffers dead at once,
 * and each time V8 marked the whole heap: 22 full collections in 2.6 s on the hub, more of its CPU
 * than anything but the kernel's sends. The cost: dead buffers stand longer, so a hub relaying 100
 * connections at once peaked ~150 MiB higher (docs/benchmarks.md, "Interconnect, third round").
 */
import v8 from 'node:v8';

export const V8_FLAGS: readonly string[] = ['--external-memory-accounted-in-global-limit'];

export function applyV8Flags(): void {
  for (const f of V8_FLAGS) v8.setFlagsFromString(f);
}
