/**
 * @module Hardware facts of an edge host, read from /proc and /sys (no daemon, no command), for the edge's
 * inventory; the labels derived from them are core/inventory.ts (docs/inventory.md).
 *
 * Only facts that do not change while the host runs are read (sizes, models, addresses; not usage,
 * link state or temperatures): the inventory lives in the edge's report document, whose history is
 * never truncated, so it must change only when the hardware does. For the same reason virtual
 * network interfaces that come and go with workloads (veth, bridges of container runtimes) are
 * left out.
 *
 * @example
 * readHardware() // { cpuModel: 'Intel(R) Xeon(R) ...', vendor: 'Dell Inc.', disks: [...], nics: [...] }
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Inventory } from '../core/resources.js';

/** A disk and a network interface as the inventory schema has them (core/resources.ts). */
export type Disk = NonNullable<Inventory['disks']>[number];
export type Nic = NonNullable<Inventory['nics']>[number];

/** The hardware part of the inventory. DMI: /sys/class/dmi/id/sys_vendor, product_name, product_serial (the serial is readable by root only). */
export type Hardware = Pick<Inventory, 'cpuModel' | 'vendor' | 'product' | 'serial'> & { disks: Disk[]; nics: Nic[] };

/** Interfaces of container runtimes and overlays: they come and go with workloads. */
const EPHEMERAL_NIC = /^(lo|veth|cni|podman|docker|br-|virbr|flannel|cali|vxlan|tun|tap|kube|cilium|weave|genev)/;
/** Block devices that are not disks. */
const NOT_A_DISK = /^(loop|ram|zram|dm-|md|sr|fd|nbd)/;
/** Placeholder strings firmware ships instead of a value. */
const PLACEHOLDER =
  /^(to be filled by o\.e\.m\.|default string|system product name|system manufacturer|not specified|none|0+|)$/i;

function read(file: string): string | undefined {
  try {
    const v = fs.readFileSync(file, 'utf8').replace(/\0/g, '').trim();
    return v === '' ? undefined : v;
  } catch {
    return undefined;
  }
}

function list(dir: string): string[] {
  try {
    return fs.readdirSync(dir).sort();
  } catch {
    return [];
  }
}

function cpuModel(root: string): string | undefined {
  const text = read(path.join(root, 'proc/cpuinfo')) ?? '';
  // x86: "model name"; ARM: "Model" (the board) or "Hardware", else the CPU part.
  for (const key of ['model name', 'Model', 'Hardware', 'cpu model', 'Processor']) {
    const m = new RegExp(`^${key}\\s*:\\s*(.+)$`, 'm').exec(text);
    if (m) return m[1].trim().replace(/\s+/g, ' ');
  }
  return undefined;
}

function dmi(root: string, name: string): string | undefined {
  const v = read(path.join(root, 'sys/class/dmi/id', name));
  return v && !PLACEHOLDER.test(v) ? v : undefined;
}

function disks(root: string): Disk[] {
  const out: Disk[] = [];
  for (const name of list(path.join(root, 'sys/block'))) {
    if (NOT_A_DISK.test(name)) continue;
    const dir = path.join(root, 'sys/block', name);
    const sectors = Number(read(path.join(dir, 'size')) ?? 0);
    if (!(sectors > 0)) continue;
    const model = read(path.join(dir, 'device/model'));
    const rotational = read(path.join(dir, 'queue/rotational'));
    const removable = read(path.join(dir, 'removable'));
    out.push({
      name,
      // /sys/block/X/size counts 512-byte sectors whatever the device's own sector size.
      sizeBytes: sectors * 512,
      ...(model ? { model } : {}),
      ...(rotational !== undefined ? { rotational: rotational === '1' } : {}),
      ...(removable !== undefined ? { removable: removable === '1' } : {}),
    });
  }
  return out;
}

function nics(root: string): Nic[] {
  const out: Nic[] = [];
  for (const name of list(path.join(root, 'sys/class/net'))) {
    if (EPHEMERAL_NIC.test(name)) continue;
    const dir = path.join(root, 'sys/class/net', name);
    const mac = read(path.join(dir, 'address'));
    const speed = Number(read(path.join(dir, 'speed')));
    out.push({
      name,
      ...(mac && mac !== '00:00:00:00:00:00' ? { mac } : {}),
      ...(Number.isInteger(speed) && speed > 0 ? { speedMbps: speed } : {}),
      virtual: !fs.existsSync(path.join(dir, 'device')),
    });
  }
  return out;
}

/** The hardware facts under `root` (a test may point it at a copy of /proc and /sys). */
export function readHardware(root = '/'): Hardware {
  const vendor = dmi(root, 'sys_vendor');
  const product = dmi(root, 'product_name');
  const serial = dmi(root, 'product_serial');
  const cpu = cpuModel(root);
  return {
    ...(cpu ? { cpuModel: cpu } : {}),
    ...(vendor ? { vendor } : {}),
    ...(product ? { product } : {}),
    ...(serial ? { serial } : {}),
    disks: disks(root),
    nics: nics(root),
  };
}
