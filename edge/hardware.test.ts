/** Hardware facts from a /proc and /sys tree made of real files, and the labels derived from them. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { inventoryLabels, labelValue } from '../core/inventory.js';
import { readHardware } from './hardware.js';

describe('readHardware', () => {
  let root: string;
  const put = (p: string, v: string): void => {
    fs.mkdirSync(path.dirname(path.join(root, p)), { recursive: true });
    fs.writeFileSync(path.join(root, p), v);
  };
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-hw-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('reads CPU model, DMI, disks and NICs, skipping what is not hardware', () => {
    put('proc/cpuinfo', 'processor\t: 0\nmodel name\t: Intel(R) Atom(TM) CPU  E3845 @ 1.91GHz\n');
    put('sys/class/dmi/id/sys_vendor', 'Advantech\n');
    put('sys/class/dmi/id/product_name', 'To Be Filled By O.E.M.\n');
    put('sys/class/dmi/id/product_serial', 'SN123\n');
    put('sys/block/sda/size', '1953525168\n');
    put('sys/block/sda/queue/rotational', '0\n');
    put('sys/block/sda/removable', '0\n');
    put('sys/block/sda/device/model', 'SSD 860\n');
    put('sys/block/loop0/size', '100\n');
    put('sys/class/net/eth0/address', '00:11:22:33:44:55\n');
    put('sys/class/net/eth0/speed', '1000\n');
    fs.mkdirSync(path.join(root, 'sys/class/net/eth0/device'));
    put('sys/class/net/veth12/address', '02:00:00:00:00:01\n');
    put('sys/class/net/lo/address', '00:00:00:00:00:00\n');
    const hw = readHardware(root);
    expect(hw).toEqual({
      cpuModel: 'Intel(R) Atom(TM) CPU E3845 @ 1.91GHz',
      vendor: 'Advantech',
      serial: 'SN123',
      disks: [{ name: 'sda', sizeBytes: 1953525168 * 512, model: 'SSD 860', rotational: false, removable: false }],
      nics: [{ name: 'eth0', mac: '00:11:22:33:44:55', speedMbps: 1000, virtual: false }],
    });
    const labels = inventoryLabels({
      hostname: 'h',
      os: 'Linux 6.1',
      arch: 'x64',
      cpus: 4,
      memoryBytes: 8 * 1024 ** 3,
      runtimes: ['process', 'podman'],
      driver: 'podman',
      agentVersion: '1',
      ...hw,
    });
    expect(labels).toMatchObject({
      'inventory.outpost.dev/cpu-model': 'Intel-R-Atom-TM-CPU-E3845-1.91GHz',
      'inventory.outpost.dev/vendor': 'Advantech',
      'inventory.outpost.dev/memory-gib': '8',
      'inventory.outpost.dev/runtime.podman': 'true',
      'inventory.outpost.dev/ssd': 'true',
      'inventory.outpost.dev/disk-gib': '932',
      'inventory.outpost.dev/nics': '1',
    });
    expect(labels['inventory.outpost.dev/product']).toBeUndefined();
    expect(labels['inventory.outpost.dev/serial']).toBeUndefined();
  });

  it('makes any text a valid label value', () => {
    expect(labelValue('  (weird) value!! ')).toBe('weird-value');
    expect(labelValue('x'.repeat(80))).toHaveLength(63);
  });
});
