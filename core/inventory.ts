/**
 * @module Hardware facts of an edge host, read from /proc and /sys (no daemon, no command), and the
 * labels derived from them that placements select on (docs/inventory.md).
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
import { INVENTORY_LABEL_PREFIX, type Inventory } from './resources.js';

export interface Disk {
  name: string;
  sizeBytes: number;
  model?: string;
  rotational?: boolean;
  removable?: boolean;
}

export interface Nic {
  name: string;
  mac?: string;
  /** Link speed when the driver reports one (physical NICs with a link). */
  speedMbps?: number;
  /** No device behind it (a bridge, a bond, a tunnel). */
  virtual: boolean;
}

export interface Hardware {
  cpuModel?: string;
  /** DMI: /sys/class/dmi/id/sys_vendor, product_name, product_serial (the serial is readable by root only). */
  vendor?: string;
  product?: string;
  serial?: string;
  disks: Disk[];
  nics: Nic[];
}

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

export { INVENTORY_LABEL_PREFIX };

/** Any text as a label value: invalid characters become `-`, at most 63, starting and ending alphanumeric. */
export function labelValue(s: string): string {
  return s
    .replace(/[^A-Za-z0-9_.-]+/g, '-')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}

const GIB = 1024 ** 3;

/**
 * The labels an edge gets from its inventory (docs/inventory.md): selectable by placements like
 * its own labels. Values are label-safe; a fact the edge did not report gives no label.
 */
export function inventoryLabels(inv: Inventory | undefined): Record<string, string> {
  if (!inv) return {};
  const out: Record<string, string> = {};
  const put = (k: string, v: string | number | undefined): void => {
    if (v === undefined) return;
    const value = labelValue(String(v));
    if (value) out[`${INVENTORY_LABEL_PREFIX}${k}`] = value;
  };
  put('arch', inv.arch);
  put('os', inv.os.split(' ')[0]?.toLowerCase());
  put('cpus', inv.cpus);
  put('memory-gib', Math.round(inv.memoryBytes / GIB));
  put('driver', inv.driver);
  for (const r of inv.runtimes) put(`runtime.${labelValue(r)}`, 'true');
  put('cpu-model', inv.cpuModel);
  put('vendor', inv.vendor);
  put('product', inv.product);
  if (inv.disks) {
    put('disks', inv.disks.length);
    put('disk-gib', Math.round(inv.disks.reduce((n, d) => n + d.sizeBytes, 0) / GIB));
    if (inv.disks.some((d) => d.rotational === false)) put('ssd', 'true');
  }
  if (inv.nics) put('nics', inv.nics.filter((n) => !n.virtual).length);
  return out;
}
