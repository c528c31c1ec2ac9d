/**
 * @module The labels an edge's inventory gives it, which placements select on (docs/inventory.md).
 * Pure: the edge reads the facts (edge/hardware.ts), the hub derives the labels from what it
 * reported.
 */
import { INVENTORY_LABEL_PREFIX, type Inventory } from './resources.js';

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
