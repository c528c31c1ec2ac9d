/**
 * The shared driver acceptance suite against real podman pods (busybox image from
 * build/setup.sh). Podman-specific behaviour is in podman-extra.test.ts.
 */
import { describe, it } from 'vitest';
import { driverSuite } from '../../../test/fixtures/driver-suite.js';
import { createPodmanDriver } from './index.js';
import { pod, podmanTestEnv, SKIP_PODMAN, TEST_IMAGE, unit } from './harness.js';

if (SKIP_PODMAN) {
  describe.skip('podman driver acceptance (OUTPOST_SKIP_PODMAN=1)', () => it('skipped', () => undefined));
} else {
  driverSuite('podman', async () => {
    const env = await podmanTestEnv();
    const p = (name: string): string => `${name}-${env.suffix}`;
    return {
      driver: createPodmanDriver({ dataDir: env.dir }),
      restart: async () => createPodmanDriver({ dataDir: env.dir }),
      workload: (name, { port, version }) =>
        unit(name, 1, [
          pod(p(name), {
            containers: [
              {
                name: 'web',
                image: TEST_IMAGE,
                command: [
                  'sh',
                  '-c',
                  `mkdir -p /srv && echo "version $OUTPOST_TEST_VERSION" > /srv/index.html && exec httpd -f -p ${port} -h /srv`,
                ],
                env: [{ name: 'OUTPOST_TEST_VERSION', value: version }],
                ports: [{ containerPort: port }],
                readinessProbe: { httpGet: { path: '/', port }, periodSeconds: 2 },
              },
            ],
          }),
        ]),
      crashing: (name) =>
        unit(name, 1, [
          pod(p(name), {
            restartPolicy: 'Always',
            containers: [{ name: 'crash', image: TEST_IMAGE, command: ['sh', '-c', 'echo crashing; sleep 1; exit 3'] }],
          }),
        ]),
      invalid: (name) =>
        unit(name, 1, [{ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: p(name) }, spec: {} } as never]),
      ticker: (name) =>
        unit(name, 1, [
          pod(p(name), {
            containers: [
              {
                name: 'tick',
                image: TEST_IMAGE,
                command: ['sh', '-c', 'i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.2; done'],
              },
            ],
          }),
        ]),
      identity: env.identity,
      foreign: env.foreign,
      capabilities: { exec: true },
      cleanup: env.cleanup,
    };
  });
}
