/**
 * @module Removing a cluster node from its edge (docs/clusters.md, "Delete"): the pods first, while
 * the API server and the kubelet run (the kubelet stops their containers and tears down their
 * networks; nothing recreates them once the controller-manager and scheduler are stopped), then
 * the kubelet, API server and etcd, what containerd left (its shims and their containers),
 * containerd itself, whatever still names the node's directory, the mounts under it, its bridge,
 * and the directory. On a teardown order (the Cluster is being deleted), each step is reported,
 * and `Deleted` at the end, or why it could not.
 */
import fs from 'node:fs';
import { createLogger } from '../../core/logger.js';
import type { ComponentName } from '../../core/cluster.js';
import { componentCommands, nodeBridge, nodeCgroupRoot, nodeLayout } from './configs.js';
import { removeCgroupRoot } from './cgroups.js';
import { deleteAllPods } from './health.js';
import { hostAddress } from './node-ip.js';
import { readNodeState, type KeptOrder } from './node-state.js';
import { PassStopped } from '../orders/one-pass.js';
import type { Reporting } from './supervise.js';
import {
  cmdlineOf,
  deleteLink,
  descendants,
  findComponent,
  killAll,
  stopComponent,
  strays,
  unmountUnder,
} from './processes.js';

const log = createLogger('edge:clusters');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const cmdName = (pid: number) => cmdlineOf(pid)?.[0] ?? '';

/** The containerd shims of a node (one per pod sandbox). */
const shims = (root: string) => strays(root).filter((p) => cmdName(p).endsWith('containerd-shim-runc-v2'));

export async function teardownNode(
  dataDir: string,
  edge: string,
  cluster: string,
  o: KeptOrder | undefined,
): Promise<void> {
  const l = nodeLayout(dataDir, cluster);
  if (o) {
    // The kubelet's command line names the host's address: without one, it is not found (killed below).
    let ip = '';
    try {
      ip = hostAddress();
    } catch {
      /* no address: the components are stopped by their pid files below */
    }
    const cmds = componentCommands(o, edge, l, ip);
    const running = (n: ComponentName) => {
      const c = cmds.find((x) => x.name === n);
      return c ? findComponent(l.run, c) !== undefined : false;
    };
    if (o.role === 'control-plane' && running('kube-apiserver') && running('kubelet')) {
      await stopComponent(l.run, 'kube-controller-manager', l.root);
      await stopComponent(l.run, 'kube-scheduler', l.root);
      try {
        await deleteAllPods(o, l);
        const deadline = Date.now() + 60_000;
        while (shims(l.root).length && Date.now() < deadline) await sleep(500);
      } catch (err) {
        log.warn({ cluster, err }, 'deleting the pods through the API failed; their processes are killed instead');
      }
    }
  }
  for (const name of ['kubelet', 'kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd'] as const)
    await stopComponent(l.run, name, l.root);
  const left = strays(l.root).filter((p) => !cmdName(p).endsWith('/containerd'));
  await killAll([...descendants(left), ...left]);
  await stopComponent(l.run, 'containerd', l.root);
  const rest = strays(l.root);
  await killAll([...descendants(rest), ...rest]);
  const stuck = await unmountUnder(l.root);
  if (o) await deleteLink(nodeBridge(o, edge));
  if (o) {
    const busy = removeCgroupRoot(nodeCgroupRoot(o, edge));
    if (busy.length) log.warn({ cluster, busy: busy.slice(0, 3) }, "cgroups of the node's kubelet are still busy");
  }
  if (stuck.length) throw new Error(`cannot unmount ${stuck.slice(0, 3).join(', ')}: the node's directory stays`);
  fs.rmSync(l.root, { recursive: true, force: true });
}

/**
 * A teardown order: the node goes (if anything of it is here: the node's own `state.json` says what
 * runs), reported as `Deleting`, then `Deleted`. False when the teardown failed (reported, with
 * why: the caller tries again later).
 */
export async function tearDownOrdered(dataDir: string, edge: string, o: KeptOrder, r: Reporting): Promise<boolean> {
  const here = fs.existsSync(nodeLayout(dataDir, o.cluster).root);
  if (!here && r.cur?.phase === 'Deleted') return true;
  if (here) {
    const held = readNodeState(dataDir, o.cluster);
    r.update(
      { phase: 'Deleting', message: undefined },
      { step: 'Deleting', message: 'the cluster is deleted: stopping the components and removing the node' },
    );
    try {
      await teardownNode(dataDir, edge, o.cluster, held?.order.uid === o.uid ? held.order : o);
    } catch (err) {
      if (err instanceof PassStopped) throw err;
      const message = `cannot tear the node down: ${(err as Error).message}`.slice(0, 1000);
      log.error({ cluster: o.cluster, err: message }, 'cluster node teardown failed; retried');
      r.update({ phase: 'Deleting', message }, { step: 'TeardownFailed', message });
      return false;
    }
  }
  r.update(
    { phase: 'Deleted', message: undefined, components: {}, node: undefined, draining: undefined },
    {
      step: 'Deleted',
      message: here ? "every component stopped and the node's data removed" : 'nothing of the node was on this edge',
    },
  );
  return true;
}
