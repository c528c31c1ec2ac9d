/**
 * `execInteractive` of the kubernetes driver over the `pods/exec` websocket (stdin on channel 0,
 * its end as the v5 close frame), through a real kube-apiserver (test/kube/harness.ts) to the
 * node double's kubelet API, which runs the command as a host process: the shared acceptance checks.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startKubeApiServer, type KubeApiServer } from '../../../test/kube/harness.js';
import { startNodeDouble, type NodeDouble } from '../../../test/kube/node-double.js';
import { checkInteractiveExec } from '../../../test/fixtures/exec-interactive.js';
import { waitFor } from '../../../test/helpers.js';
import type { Driver, WorkloadUnit } from '../driver.js';
import { createKubernetesDriver } from './index.js';

let dir: string;
let kube: KubeApiServer;
let node: NodeDouble;
let driver: Driver;

const manifests = [
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'shell' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'shell' } },
      template: {
        metadata: { labels: { app: 'shell' } },
        spec: {
          containers: [
            { name: 'main', image: 'busybox', command: ['sleep', '600'], env: [{ name: 'GREETING', value: 'hello' }] },
          ],
        },
      },
    },
  },
];
const shell: WorkloadUnit = {
  name: 'shell',
  generation: 1,
  hash: createHash('sha256').update(JSON.stringify(manifests)).digest('hex').slice(0, 16),
  manifests: manifests as WorkloadUnit['manifests'],
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'outpost-k8s-it-'));
  kube = await startKubeApiServer();
  node = await startNodeDouble(kube);
  driver = createKubernetesDriver({ kubeconfig: kube.kubeconfig, dataDir: dir });
  await driver.start();
  await driver.apply(shell);
  await waitFor(async () => (await driver.list()).find((w) => w.name === 'shell')?.phase === 'Ready', {
    what: 'shell Ready',
  });
}, 180_000);

afterAll(async () => {
  await driver?.close();
  await node?.stop();
  await kube?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('kubernetes driver execInteractive (real API server, node double)', () => {
  it('passes the interactive exec acceptance checks', async () => {
    await checkInteractiveExec(driver, 'shell');
  });
});
