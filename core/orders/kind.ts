/**
 * @module The contract of an order the hub sends to edges (docs/architecture.md, "Orders"): a
 * kind names its part of an edge's spec document and says how that part is written (the codec).
 * The workloads with the edge's labels (workloads.ts), agent upgrades, DataObjects and image
 * staging (kinds.ts), the interconnect's listeners (interconnect.ts) and cluster nodes
 * (cluster.ts) are kinds of it; the hub's engine (hub/orders/engine.ts) copies every kind's parts
 * into the spec documents of the edges a hub serves, each kind's source on the hub projects what
 * the edges report of it, and the edge's followers (edge/orders/followers.ts) act on them.
 *
 * A part is one JSON value per edge: what the edge must hold of that kind now, or `undefined`
 * (nothing: an order withdrawn). Writing it again with an equal value changes nothing.
 *
 * @example
 * export const AGENT_UPGRADE: OrderKind<AgentUpgradeOrder> = {
 *   name: 'agent-upgrade',
 *   put: (b, order) => putSpecAgentUpgrade(b, order),
 * };
 */
import type { MapBackend } from '../doc-backend.js';

export interface OrderKind<Part> {
  /** The kind's name, and the key under which a spec document notes the part last written. */
  readonly name: string;
  /** Writes `part` into a spec document through its backend (undefined: withdraws the kind's order). */
  put(b: MapBackend, part: Part | undefined): void;
  /**
   * The part as compared and noted: equal texts are equal parts. Default `JSON.stringify`; a
   * kind whose part holds a map gives its entries in a fixed order here.
   */
  text?(part: Part | undefined): string;
}

/** The text a part is compared and noted by. */
export function partText<Part>(kind: OrderKind<Part>, part: Part | undefined): string {
  return kind.text ? kind.text(part) : JSON.stringify(part ?? null);
}
