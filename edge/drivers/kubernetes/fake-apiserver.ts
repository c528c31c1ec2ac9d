/**
 * @module A Kubernetes API server stand-in, in process, over real HTTPS. TEST SUPPORT ONLY: it
 * lives beside the kubernetes driver (not in test/) so that later tests (the tunnel, the edge
 * agent end to end) can reuse it. Nothing in the product imports it.
 *
 * Why it exists: no Kubernetes distribution can run on the machines Outpost is built on (Debian
 * ships kubectl and etcd, but no kube-apiserver or kubelet, and nothing else can be downloaded).
 * So the driver is tested against this stand-in, and the same tests run against a real cluster
 * when `OUTPOST_TEST_KUBECONFIG` is set (see docs/drivers.md).
 *
 * What it implements, in the real wire formats (so @kubernetes/client-node and Debian's kubectl
 * work against it): discovery (`/version`, `/api`, `/apis`, `/api/v1`, `/apis/apps/v1`) for
 * Namespace, Pod, ConfigMap, Secret, Service and Deployment; GET and LIST with `labelSelector`
 * (and Table output for kubectl); POST; server-side apply (`application/apply-patch+yaml` with
 * `fieldManager` and `force`, managedFields, 409 conflicts); merge patches; DELETE with
 * propagation; namespace termination; `Status` objects for 401/403/404/409/422; resourceVersion,
 * uid, generation; pod logs (`pods/log`, tail and follow); pod exec over the websocket protocol
 * (`v5/v4.channel.k8s.io`). Bearer-token authentication as in the kubeconfig it writes.
 *
 * Controllers are simulated (see `fake-apiserver-controllers.ts`), and its kubelet runs
 * containers that have a command as real host processes (see `fake-apiserver-kubelet.ts`).
 * Not implemented: watch (answers 405), PUT, other kinds, RBAC, admission. It serves HTTPS with a throwaway self-signed certificate (see
 * `fake-apiserver-tls.ts`).
 *
 * @example
 * const api = await startFakeApiServer({ startDelayMs: 100 });
 * await api.writeKubeconfig('/tmp/x/kubeconfig');
 * // ... createKubernetesDriver({ kubeconfig: '/tmp/x/kubeconfig', dataDir })
 * await api.close();
 */
import type { IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:https';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Duplex } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { WebSocketServer, type WebSocket } from 'ws';
import { stringify as toYaml } from 'yaml';
import { Controllers } from './fake-apiserver-controllers.js';
import { Handler, sendError, sendJson } from './fake-apiserver-http.js';
import { Kubelet } from './fake-apiserver-kubelet.js';
import { selfSignedCert } from './fake-apiserver-tls.js';
import { ObjectStore, RESOURCES, notFound, render, statusError, type Obj } from './fake-apiserver-store.js';

export type { Obj } from './fake-apiserver-store.js';

export interface FakeApiServerOptions {
  /** Delay before a new pod's containers start (scheduling and image pull on a real node). Default 100 ms. */
  startDelayMs?: number;
  /** First CrashLoopBackOff delay; a real kubelet uses 10 s. Default 300 ms. */
  crashBackoffMs?: number;
  /** Overrides Deployments' progressDeadlineSeconds so a failing rollout is reported quickly. */
  progressDeadlineMs?: number;
  /** How often controllers run. Default 25 ms. */
  tickMs?: number;
}

export interface FakeApiServer {
  /** `https://127.0.0.1:PORT` */
  readonly url: string;
  /** The self-signed serving certificate, which is also the CA in the kubeconfig. */
  readonly caPem: string;
  /** The bearer token clients must send. */
  readonly token: string;
  /** A kubeconfig for this server (context `outpost-standin`). */
  kubeconfig(): string;
  writeKubeconfig(path: string): Promise<void>;
  /** An object as a GET would return it, or undefined. */
  get(kind: string, namespace: string | undefined, name: string): Obj | undefined;
  list(kind: string, namespace?: string): Obj[];
  /** Appends a line to a running container's log (canned output for log tests). */
  appendLog(namespace: string, pod: string, line: string, container?: string): void;
  close(): Promise<void>;
}

const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];

export async function startFakeApiServer(opts: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  const store = new ObjectStore();
  const type = (kind: string) => {
    const r = RESOURCES.find((x) => x.kind === kind);
    if (!r)
      throw new Error(`the stand-in does not serve kind ${kind}; it serves ${RESOURCES.map((x) => x.kind).join(', ')}`);
    return r;
  };
  const kubelet = new Kubelet({
    startDelayMs: opts.startDelayMs ?? 100,
    crashBackoffMs: opts.crashBackoffMs ?? 300,
    lookup: (kind, ns, name) => store.get(type(kind), ns, name)?.obj,
  });
  const controllers = new Controllers(store, kubelet, { progressDeadlineMs: opts.progressDeadlineMs });
  const handler = new Handler(store, controllers, kubelet);
  const token = randomBytes(16).toString('hex');
  // The namespaces every real cluster starts with.
  for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
    store.put(
      type('Namespace'),
      {
        metadata: { name: ns, labels: { 'kubernetes.io/metadata.name': ns } },
        spec: { finalizers: ['kubernetes'] },
        status: { phase: 'Active' },
      },
      [],
    );
  }

  const authorized = (req: IncomingMessage): boolean => req.headers.authorization === `Bearer ${token}`;
  const cert = await selfSignedCert();
  const server: Server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (!authorized(req)) return sendJson(res, 401, statusError(401, 'Unauthorized', 'Unauthorized').status);
    handler.handle(req, res, url).catch((err: unknown) => sendError(res, err));
  });

  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => EXEC_PROTOCOLS.find((p) => offered.has(p)) ?? false,
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refuse = (code: number, status: Obj): void => {
      const text = JSON.stringify(status);
      socket.end(
        `HTTP/1.1 ${code} Error\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
      );
    };
    if (!authorized(req)) return refuse(401, statusError(401, 'Unauthorized', 'Unauthorized').status);
    const url = new URL(req.url ?? '/', 'http://localhost');
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/.exec(url.pathname);
    if (!m) return refuse(404, statusError(404, 'NotFound', 'the server could not find the requested resource').status);
    const [ns, podName] = [decodeURIComponent(m[1]), decodeURIComponent(m[2])];
    const pod = store.get(type('Pod'), ns, podName);
    if (!pod) return refuse(404, notFound(type('Pod'), podName).status);
    const names = ((pod.obj.spec?.containers ?? []) as Obj[]).map((c) => c.name as string);
    const container = url.searchParams.get('container') || (names.length === 1 ? names[0] : '');
    if (!names.includes(container))
      return refuse(
        400,
        statusError(
          400,
          'BadRequest',
          container
            ? `container ${container} is not valid for pod ${podName}`
            : `a container name must be specified for pod ${podName}, choose one of: [${names.join(' ')}]`,
        ).status,
      );
    const command = url.searchParams.getAll('command');
    if (command.length === 0)
      return refuse(400, statusError(400, 'BadRequest', 'you must specify at least 1 command').status);
    wss.handleUpgrade(req, socket, head, (ws) =>
      runExec(ws, pod.obj, container, command, url.searchParams.get('stdin') === 'true'),
    );
  });

  function runExec(ws: WebSocket, pod: Obj, container: string, command: string[], stdin: boolean): void {
    const finish = (status: Obj): void => {
      ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify(status))]));
      ws.close(1000);
    };
    const proc = kubelet.exec(pod.metadata.namespace, pod, container, command);
    if (typeof proc === 'string')
      return finish({ metadata: {}, status: 'Failure', message: proc, reason: 'BadRequest', code: 400 });
    proc.stdout!.on('data', (d: Buffer) => ws.send(Buffer.concat([Buffer.from([1]), d])));
    proc.stderr!.on('data', (d: Buffer) => ws.send(Buffer.concat([Buffer.from([2]), d])));
    if (!stdin) proc.stdin!.end();
    ws.on('message', (data: Buffer) => {
      if (data[0] === 0) proc.stdin!.write(data.subarray(1));
      if (data[0] === 255 && data[1] === 0) proc.stdin!.end();
    });
    ws.on('close', () => proc.exitCode === null && proc.kill('SIGKILL'));
    let spawnError: Error | undefined;
    proc.on('error', (err) => {
      spawnError = err;
    });
    proc.on('close', (code) => {
      if (spawnError) {
        // What containerd reports when the binary is missing; kubectl exits 126 on it.
        const message = `OCI runtime exec failed: exec failed: unable to start container process: exec: "${command[0]}": executable file not found in $PATH: unknown`;
        ws.send(Buffer.concat([Buffer.from([2]), Buffer.from(`${message}\r\n`)]));
        code = 126;
      }
      if (code === 0) return finish({ metadata: {}, status: 'Success' });
      finish({
        metadata: {},
        status: 'Failure',
        message: `command terminated with non-zero exit code: error executing command [${command.join(' ')}], exit code ${code}`,
        reason: 'NonZeroExitCode',
        details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
      });
    });
  }

  const timer = setInterval(() => {
    try {
      controllers.tick();
    } catch (err) {
      // A controller bug must show up in test output, not stop the simulated cluster.
      console.error('fake-apiserver controller tick failed', err);
    }
  }, opts.tickMs ?? 25);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  const url = `https://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;

  const kubeconfig = (): string =>
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'outpost-standin',
          cluster: { server: url, 'certificate-authority-data': Buffer.from(cert.certPem).toString('base64') },
        },
      ],
      users: [{ name: 'outpost-standin', user: { token } }],
      contexts: [{ name: 'outpost-standin', context: { cluster: 'outpost-standin', user: 'outpost-standin' } }],
      'current-context': 'outpost-standin',
    });

  return {
    url,
    caPem: cert.certPem,
    token,
    kubeconfig,
    async writeKubeconfig(path) {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, kubeconfig(), { mode: 0o600 });
    },
    get(kind, namespace, name) {
      const s = store.get(type(kind), namespace, name);
      return s ? render(s) : undefined;
    },
    list(kind, namespace) {
      return store.list(type(kind), namespace).map(render);
    },
    appendLog(namespace, pod, line, container) {
      const p = store.get(type('Pod'), namespace, pod);
      const c = container ?? p?.obj.spec?.containers?.[0]?.name;
      if (!p || !kubelet.append(namespace, pod, c, line))
        throw new Error(
          `appendLog: pod ${namespace}/${pod} has no started container ${c ?? ''}; wait until the pod is Running`,
        );
    },
    async close() {
      clearInterval(timer);
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await kubelet.shutdown();
    },
  };
}
