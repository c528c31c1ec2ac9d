/**
 * @module A node's kubelet's own cgroup root (configs.ts `nodeCgroupRoot`): the kubelet does not
 * make its `cgroupRoot`, it refuses to start without it ("cgroup-root ... doesn't exist"); and two
 * kubelets on one host under the same root each remove the other's pod cgroups as orphans (their
 * pause containers killed: "namespace path: lstat /proc/PID/ns/ipc: no such file", the sandbox
 * made again and again).
 * Made in every hierarchy (cgroup v1: one per controller; v2: the one), removed at teardown once
 * the kubelet and its pods are gone.
 */
import fs from 'node:fs';
import path from 'node:path';

const CGROUP_FS = '/sys/fs/cgroup';

/** The directories a cgroup path lives in: each v1 hierarchy's, or v2's one. */
function hierarchies(): string[] {
  if (fs.existsSync(path.join(CGROUP_FS, 'cgroup.controllers'))) return [CGROUP_FS];
  let entries: string[];
  try {
    entries = fs.readdirSync(CGROUP_FS);
  } catch {
    return [];
  }
  return entries
    .map((e) => path.join(CGROUP_FS, e))
    .filter((d) => fs.existsSync(path.join(d, 'cgroup.procs')) && !fs.lstatSync(d).isSymbolicLink());
}

export function ensureCgroupRoot(root: string): void {
  for (const h of hierarchies()) fs.mkdirSync(path.join(h, root), { recursive: true });
}

/** Removes the cgroup root and what the kubelet made under it (deepest first); what is busy stays. */
export function removeCgroupRoot(root: string): string[] {
  const stuck: string[] = [];
  const rm = (dir: string): void => {
    let subs: fs.Dirent[] = [];
    try {
      subs = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const d of subs) if (d.isDirectory()) rm(path.join(dir, d.name));
    try {
      fs.rmdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') stuck.push(dir);
    }
  };
  for (const h of hierarchies()) rm(path.join(h, root));
  return stuck;
}
