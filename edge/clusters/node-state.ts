/**
 * @module What a node directory keeps of its orders (`DATA/clusters/NAME/state.json`, 0600): the
 * order it is brought to, the order its components last ran healthy (`running`: what an upgrade
 * rolls back to), and the order whose upgrade was rolled back (`refused`: not tried again until the
 * order changes). Never the PKI: that is in `pki/`, 0600. Also the small file helpers of the node.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ClusterNodeOrder } from '../../core/cluster.js';
import { nodeLayout } from './configs.js';
import { START_MARK } from './processes.js';

export type KeptOrder = Omit<ClusterNodeOrder, 'pki'>;

export interface NodeState {
  order: KeptOrder;
  running?: KeptOrder;
  /** `uid:template@version` of the order whose upgrade rolled back, with why. */
  refused?: { key: string; reason: string };
}

const Kept = ClusterNodeOrder.omit({ pki: true });

/** The key an upgrade's refusal is remembered by. */
export const orderKey = (o: KeptOrder): string => `${o.uid}:${o.template.name}@${o.template.version}`;

export function keep(o: ClusterNodeOrder): KeptOrder {
  const { pki: _pki, ...kept } = o;
  return kept;
}

export function readNodeState(dataDir: string, cluster: string): NodeState | undefined {
  try {
    const raw = JSON.parse(fs.readFileSync(nodeLayout(dataDir, cluster).state, 'utf8')) as Record<string, unknown>;
    const order = Kept.safeParse(raw.order);
    if (!order.success) return undefined;
    const running = raw.running === undefined ? undefined : Kept.safeParse(raw.running);
    const refused = raw.refused as NodeState['refused'] | undefined;
    return {
      order: order.data,
      ...(running?.success ? { running: running.data } : {}),
      ...(refused && typeof refused.key === 'string' && typeof refused.reason === 'string' ? { refused } : {}),
    };
  } catch {
    return undefined;
  }
}

export function writeNodeState(dataDir: string, cluster: string, s: NodeState): void {
  writeIfChanged(nodeLayout(dataDir, cluster).state, JSON.stringify(s), 0o600);
}

/** Writes a file when its text differs; true when it wrote. Whole or not at all (a rename). */
export function writeIfChanged(file: string, text: string, mode: number): boolean {
  try {
    if (fs.readFileSync(file, 'utf8') === text) return false;
  } catch {
    /* absent */
  }
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, text, { mode });
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, file);
  return true;
}

/** The end of a component's log since its last start (processes.ts START_MARK), for a message. */
export function tail(file: string): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    const at = text.lastIndexOf(START_MARK);
    const since = at < 0 ? text : text.slice(text.indexOf('\n', at) + 1);
    return since.trim().slice(-600) || '(nothing)';
  } catch {
    return '(no log)';
  }
}
