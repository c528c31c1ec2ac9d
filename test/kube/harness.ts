/**
 * @module A real Kubernetes API server for tests: etcd (Debian's etcd-server) and kube-apiserver
 * (built by test/kube/build.sh from the release pinned in test/kube/go.mod), started on free
 * loopback ports in a temp dir and stopped after. The test generates everything they need:
 * a CA and serving certificate for 127.0.0.1 (openssl), a static bearer token for an admin in
 * `system:masters`, and the service-account signing key.
 *
 * No kubelet runs; test/kube/node-double.ts plays it where a test needs pods to run. By default no
 * controller-manager or scheduler runs either and the node double imitates the few controllers the
 * driver tests need (fast: no 5 s namespace-deletion delay). With `controllers: true` the real
 * kube-controller-manager and kube-scheduler of the same release run too (own token identities,
 * loopback, no leader election, the service-account key for their per-controller tokens; the
 * product's flags, edge/clusters/configs.ts), about 3.5 s more to start, and the node double plays
 * only the kubelet. See docs/drivers.md for which tests use which.
 *
 * Flags that differ from a default cluster, and why:
 * - `--disable-admission-plugins=ServiceAccount`: the admission plugin wants a `default`
 *   ServiceAccount in every namespace, which only the controller-manager creates.
 * - `--feature-gates=TranslateStreamCloseWebsocketRequests=false`: with it, the API server speaks
 *   SPDY to the kubelet for exec; without it, it passes the client's websocket through, which the
 *   node double serves. Clients see the same `pods/exec` websocket either way.
 *
 * @example
 * const kube = await startKubeApiServer(); // or ({ controllers: true })
 * // ... createKubernetesDriver({ kubeconfig: kube.kubeconfig, dataDir })
 * await kube.stop();
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { stringify as toYaml } from 'yaml';
import { freePort } from '../ports.js';
import { reapWithParent } from './reaper.js';

const run = promisify(execFile);
const HERE = import.meta.dirname;

export interface KubeApiServer {
  /** `https://127.0.0.1:PORT` */
  readonly url: string;
  /** Path of a kubeconfig for the admin (token auth, context `outpost-test`). */
  readonly kubeconfig: string;
  readonly token: string;
  /** The CA that signed the serving certificate. */
  readonly caPem: string;
  /** The Kubernetes release, e.g. `v1.33.13`. */
  readonly version: string;
  readonly dir: string;
  /** Whether the real kube-controller-manager and kube-scheduler run (KubeApiServerOptions.controllers). */
  readonly controllers: boolean;
  /** Path of a kubeconfig for one of the extra `users` the server was started with. */
  kubeconfigFor(user: string): string;
  stop(): Promise<void>;
}

export interface KubeApiServerOptions {
  readyTimeoutMs?: number;
  /** More token users (no rights unless RBAC grants them some), e.g. to test what a role allows. */
  users?: { name: string; groups: string[] }[];
  /**
   * Also run the real kube-controller-manager and kube-scheduler against the server (ReplicaSets,
   * StatefulSets, Jobs, garbage collection, namespace deletion, binding). Pair with
   * `startNodeDouble(kube, { kubeletOnly: true })`: the double then plays only the kubelet.
   */
  controllers?: boolean;
}

/** The Kubernetes components test/kube/build.sh builds from the modules go.mod pins. */
export type KubeComponent =
  | 'kube-apiserver'
  | 'kubectl'
  | 'kube-controller-manager'
  | 'kube-scheduler'
  | 'kubelet'
  /** test/kube/informer: a client-go informer on the hub's placements. */
  | 'informer';

/** Where a test run finds a component already built: vitest's globalSetup puts them there. */
const ENV_OF: Record<KubeComponent, string> = {
  'kube-apiserver': 'OUTPOST_KUBE_APISERVER',
  kubectl: 'OUTPOST_KUBECTL',
  'kube-controller-manager': 'OUTPOST_KUBE_CONTROLLER_MANAGER',
  'kube-scheduler': 'OUTPOST_KUBE_SCHEDULER',
  kubelet: 'OUTPOST_KUBELET',
  informer: 'OUTPOST_KUBE_INFORMER',
};

const built = new Map<KubeComponent, string>();

/**
 * Path of a Kubernetes component's binary at the version test/kube/go.mod pins: its environment
 * variable (`OUTPOST_KUBECTL`...) if set, else what test/kube/build.sh prints (it builds once per
 * machine and version, then answers from its cache). Never a binary found on PATH: the tests run
 * the version they pin, on every machine.
 */
export function kubeBinary(component: KubeComponent): string {
  const known = built.get(component) ?? process.env[ENV_OF[component]];
  if (known) return known;
  try {
    const out = execFileSync('bash', [join(HERE, 'build.sh'), component], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const bin = out.trim().split('\n').pop()!;
    built.set(component, bin);
    process.env[ENV_OF[component]] = bin;
    return bin;
  } catch (err) {
    throw new Error(
      `building ${component} with test/kube/build.sh failed (output above); it needs Go >= 1.24 and the Go module proxy`,
      { cause: err },
    );
  }
}

/** Path of the kube-apiserver binary (kubeBinary). */
export function kubeApiServerBinary(): string {
  return kubeBinary('kube-apiserver');
}

/** Path of kubectl at the pinned version (kubeBinary): what the tests run as kubectl. */
export function kubectlBinary(): string {
  return kubeBinary('kubectl');
}

/** The Kubernetes version pinned in test/kube/go.mod. */
export function pinnedKubernetesVersion(): string {
  const m = /^\s*k8s\.io\/kubernetes (v1\.\S+)/m.exec(readFileSync(join(HERE, 'go.mod'), 'utf8'));
  if (!m) throw new Error('test/kube/go.mod does not require k8s.io/kubernetes at a v1.x release');
  return m[1];
}

async function openssl(dir: string, ...args: string[]): Promise<void> {
  await run('openssl', args, { cwd: dir });
}

/** CA, serving certificate for 127.0.0.1/localhost, and the service-account key pair. */
async function certificates(dir: string): Promise<void> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2'];
  await openssl(dir, 'req', '-x509', ...ec, '-subj', '/CN=outpost-test-ca', '-keyout', 'ca.key', '-out', 'ca.crt');
  await openssl(
    dir,
    'req',
    '-x509',
    ...ec,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-subj',
    '/CN=kube-apiserver',
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc',
    '-addext',
    'extendedKeyUsage=serverAuth',
    '-keyout',
    'server.key',
    '-out',
    'server.crt',
  );
  await openssl(dir, 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'sa.key');
  await openssl(dir, 'pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub');
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function get(url: string, ca: string | undefined, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    // No CA: a component's self-signed serving certificate on loopback, asked only for /healthz.
    const tls = ca ? { ca } : { rejectUnauthorized: false };
    const req = request(url, { ...tls, headers: { authorization: `Bearer ${token}` }, timeout: 5_000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** Starts a process with its output in `log`; rejects `exited` when it ends. */
function start(cmd: string, args: string[], log: string): { proc: ChildProcess; exited: Promise<never> } {
  const fd = openSync(log, 'a');
  const proc = spawn(cmd, args, { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  reapWithParent(proc.pid);
  const exited = new Promise<never>((_, reject) => {
    proc.once('error', (err) => reject(new Error(`${cmd} could not start: ${err.message}`)));
    proc.once('exit', (code, sig) =>
      reject(new Error(`${cmd} exited (${sig ?? code}) before it was ready; its log ${log} ends:\n${tail(log)}`)),
    );
  });
  exited.catch(() => undefined);
  return { proc, exited };
}

async function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const gone = new Promise<void>((r) => proc.once('exit', () => r()));
  proc.kill('SIGTERM');
  const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
  await gone;
  clearTimeout(t);
}

const CONTROLLER_USERS = ['system:kube-controller-manager', 'system:kube-scheduler'] as const;

/**
 * Starts kube-controller-manager and kube-scheduler with the flags the product gives them
 * (edge/clusters/configs.ts): their own identities, loopback, no leader election (one of each; a
 * lease would only delay the start). Each controller runs with its own service account's token
 * (`--use-service-account-credentials`), signed with the server's key, so RBAC is the cluster's.
 * Resolves once both answer /healthz.
 */
async function startControllers(
  dir: string,
  kubeconfigFor: (user: string) => string,
  timeoutMs: number,
): Promise<ChildProcess[]> {
  const [cmPort, schedPort] = [await freePort(), await freePort()];
  const cm = start(
    kubeBinary('kube-controller-manager'),
    [
      `--kubeconfig=${kubeconfigFor('system:kube-controller-manager')}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${cmPort}`,
      `--cert-dir=${join(dir, 'certs-controller-manager')}`,
      '--leader-elect=false',
      `--service-account-private-key-file=${join(dir, 'sa.key')}`,
      `--root-ca-file=${join(dir, 'ca.crt')}`,
      '--use-service-account-credentials=true',
      '--service-cluster-ip-range=10.96.0.0/16',
      '--profiling=false',
      '--v=0',
    ],
    join(dir, 'kube-controller-manager.log'),
  );
  const sched = start(
    kubeBinary('kube-scheduler'),
    [
      `--kubeconfig=${kubeconfigFor('system:kube-scheduler')}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${schedPort}`,
      `--cert-dir=${join(dir, 'certs-scheduler')}`,
      '--leader-elect=false',
      '--profiling=false',
      '--v=0',
    ],
    join(dir, 'kube-scheduler.log'),
  );
  const procs = [cm.proc, sched.proc];
  try {
    const deadline = Date.now() + timeoutMs;
    for (const [name, port, exited] of [
      ['kube-controller-manager', cmPort, cm.exited],
      ['kube-scheduler', schedPort, sched.exited],
    ] as const) {
      let last = '';
      for (;;) {
        const r = await Promise.race([
          get(`https://127.0.0.1:${port}/healthz`, undefined, '').catch((e: Error) => e),
          exited,
        ]);
        if (!(r instanceof Error) && r.status === 200) break;
        last = r instanceof Error ? r.message : `HTTP ${r.status}: ${r.body.slice(0, 500)}`;
        if (Date.now() > deadline)
          throw new Error(
            `${name} was not healthy after ${timeoutMs} ms (last /healthz: ${last}); its log ends:\n${tail(join(dir, `${name}.log`))}`,
          );
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    return procs;
  } catch (err) {
    for (const p of procs) await stopProcess(p);
    throw err;
  }
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of running) p.kill('SIGKILL');
});

/** Starts etcd and kube-apiserver and resolves once `/readyz` answers ok. */
export async function startKubeApiServer(opts: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  const bin = kubeApiServerBinary();
  const version = pinnedKubernetesVersion();
  const dir = await mkdtemp(join(tmpdir(), 'outpost-kube-'));
  const procs: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    for (const p of procs.reverse()) {
      await stopProcess(p);
      running.delete(p);
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await certificates(dir);
    const token = randomBytes(24).toString('hex');
    const users = new Map([
      ['outpost-test-admin', { token, groups: ['system:masters'] }],
      ...(opts.users ?? []).map((u) => [u.name, { token: randomBytes(24).toString('hex'), groups: u.groups }] as const),
      // The names the default RBAC bindings (system:kube-controller-manager, system:kube-scheduler) grant.
      ...(opts.controllers
        ? CONTROLLER_USERS.map(
            (name) => [name, { token: randomBytes(24).toString('hex'), groups: [] as string[] }] as const,
          )
        : []),
    ]);
    writeFileSync(
      join(dir, 'tokens.csv'),
      [...users].map(([name, u]) => `${u.token},${name},${name},"${u.groups.join(',')}"\n`).join(''),
      { mode: 0o600 },
    );
    const [client, peer, secure] = [await freePort(), await freePort(), await freePort()];
    const etcd = start(
      'etcd',
      [
        '--name=default',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${client}`,
        `--advertise-client-urls=http://127.0.0.1:${client}`,
        `--listen-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-cluster=default=http://127.0.0.1:${peer}`,
        '--logger=zap',
        '--log-level=warn',
        '--unsafe-no-fsync',
      ],
      join(dir, 'etcd.log'),
    );
    procs.push(etcd.proc);
    running.add(etcd.proc);
    const api = start(
      bin,
      [
        `--etcd-servers=http://127.0.0.1:${client}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${secure}`,
        `--cert-dir=${join(dir, 'certs')}`,
        `--tls-cert-file=${join(dir, 'server.crt')}`,
        `--tls-private-key-file=${join(dir, 'server.key')}`,
        `--client-ca-file=${join(dir, 'ca.crt')}`,
        `--token-auth-file=${join(dir, 'tokens.csv')}`,
        '--authorization-mode=RBAC',
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-key-file=${join(dir, 'sa.pub')}`,
        `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
        '--service-cluster-ip-range=10.96.0.0/16',
        '--disable-admission-plugins=ServiceAccount',
        '--feature-gates=TranslateStreamCloseWebsocketRequests=false',
        '--kubelet-preferred-address-types=InternalIP',
        '--profiling=false',
        '--v=0',
      ],
      join(dir, 'kube-apiserver.log'),
    );
    procs.push(api.proc);
    running.add(api.proc);
    const caPem = readFileSync(join(dir, 'ca.crt'), 'utf8');
    const url = `https://127.0.0.1:${secure}`;
    const deadline = Date.now() + (opts.readyTimeoutMs ?? 120_000);
    let last = '';
    for (;;) {
      const r = await Promise.race([
        get(`${url}/readyz`, caPem, token).catch((e: Error) => e),
        etcd.exited,
        api.exited,
      ]);
      if (!(r instanceof Error) && r.status === 200) break;
      last = r instanceof Error ? r.message : `HTTP ${r.status}: ${r.body.slice(0, 500)}`;
      if (Date.now() > deadline)
        throw new Error(
          `kube-apiserver at ${url} was not ready after ${opts.readyTimeoutMs ?? 120_000} ms (last /readyz: ${last}); its log ends:\n${tail(join(dir, 'kube-apiserver.log'))}`,
        );
      await new Promise((r) => setTimeout(r, 250));
    }
    const kubeconfigFor = (user: string): string => {
      const u = users.get(user);
      if (!u) throw new Error(`no user ${user}; pass it in startKubeApiServer({ users })`);
      const file = join(dir, `${user}.kubeconfig`);
      writeFileSync(
        file,
        toYaml({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [
            {
              name: 'outpost-test',
              cluster: { server: url, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
            },
          ],
          users: [{ name: user, user: { token: u.token } }],
          contexts: [{ name: 'outpost-test', context: { cluster: 'outpost-test', user } }],
          'current-context': 'outpost-test',
        }),
        { mode: 0o600 },
      );
      return file;
    };
    const kubeconfig = kubeconfigFor('outpost-test-admin');
    if (opts.controllers) {
      const started = await startControllers(dir, kubeconfigFor, opts.readyTimeoutMs ?? 120_000);
      for (const p of started) {
        procs.push(p);
        running.add(p);
      }
    }
    const controllers = opts.controllers ?? false;
    return { url, kubeconfig, token, caPem, version, dir, controllers, kubeconfigFor, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
