/** Runtime detection against real files: a client binary is not a runtime, a cluster's kubeconfig is. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collectInventory } from './inventory.js';
import { detectRuntimes } from './runtimes.js';

describe('detectRuntimes', () => {
  let dir: string;
  let bin: string;
  let home: string;
  const tool = (name: string): void => {
    fs.writeFileSync(path.join(bin, name), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-runtimes-'));
    bin = path.join(dir, 'bin');
    home = path.join(dir, 'home');
    fs.mkdirSync(bin);
    fs.mkdirSync(home);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('does not list kubernetes for a kubectl without a cluster, nor podman when it is not installed', () => {
    tool('kubectl');
    const env = { PATH: bin };
    expect(detectRuntimes({ env, home, clusterKubeconfigs: [] })).toEqual(['process']);
    // What describe edge showed before: kubectl answering `version --client` counted as a cluster.
    const saved = process.env.PATH;
    const savedHome = process.env.HOME;
    process.env.PATH = bin;
    process.env.HOME = home;
    try {
      expect(collectInventory('process', 'v').runtimes).not.toContain('kubernetes');
    } finally {
      process.env.PATH = saved;
      process.env.HOME = savedHome;
    }
  });

  it('lists podman when it is on PATH, and kubernetes for a kubeconfig or inside a pod', () => {
    tool('podman');
    expect(detectRuntimes({ env: { PATH: bin }, home, clusterKubeconfigs: [] })).toEqual(['process', 'podman']);
    fs.mkdirSync(path.join(home, '.kube'));
    fs.writeFileSync(path.join(home, '.kube', 'config'), 'apiVersion: v1\n');
    expect(detectRuntimes({ env: { PATH: bin }, home, clusterKubeconfigs: [] })).toEqual([
      'process',
      'podman',
      'kubernetes',
    ]);
    expect(
      detectRuntimes({ env: { PATH: '', KUBERNETES_SERVICE_HOST: '10.0.0.1' }, home: dir, clusterKubeconfigs: [] }),
    ).toEqual(['process', 'kubernetes']);
  });
});
