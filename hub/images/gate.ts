/**
 * @module The images gate (a scheduler gate, hub/scheduler/gates.ts): an edge is not given a
 * placement's new version while an image of it is not resolved to a digest by the hub
 * (hub/images/pins.ts). The rollout names what it waits for; the edge keeps what it runs.
 */
import type { EdgeGate } from '../scheduler/gates.js';

export function imagesGate(): EdgeGate {
  return (_placement, edges, ctx) => {
    const out = new Map<string, string[]>();
    for (const edge of edges) {
      const why = ctx.targetsOn(edge).flatMap((t) => t.unresolvedImages ?? []);
      if (why.length) out.set(edge, [...new Set(why)]);
    }
    return out;
  };
}
