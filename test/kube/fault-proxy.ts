/**
 * @module A test double in front of the REAL kube-apiserver: a reverse proxy on loopback (HTTPS
 * with the API server's own certificate, which names 127.0.0.1) that forwards every request to the
 * API server and, for the
 * requests a rule matches, answers a fault of its own instead (e.g. HTTP 500 to the server-side
 * apply of a Deployment), so the kubernetes driver can be tested against answers a real server
 * gives under load or mid-upgrade. `kubeconfig` points a client at the proxy with the API
 * server's own token.
 *
 * @example
 * const proxy = await startFaultProxy(kube);
 * proxy.fail({ method: 'PATCH', path: /\/deployments\//, status: 500, times: 1 });
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { KubeApiServer } from './harness.js';

export interface FaultRule {
  method?: string;
  path: RegExp;
  status: number;
  /** How many matching requests get the fault; unlimited when absent. */
  times?: number;
  message?: string;
}

export interface FaultProxy {
  /** `https://127.0.0.1:PORT` */
  readonly url: string;
  /** A kubeconfig for the admin, through the proxy. */
  readonly kubeconfig: string;
  fail(rule: FaultRule): void;
  /** Forwards everything again. */
  clear(): void;
  /** Requests that got a fault so far, as `METHOD path`. */
  readonly faulted: string[];
  stop(): Promise<void>;
}

export async function startFaultProxy(kube: KubeApiServer): Promise<FaultProxy> {
  const target = new URL(kube.url);
  const agent = new https.Agent({ ca: kube.caPem, keepAlive: true });
  let rules: (FaultRule & { left: number })[] = [];
  const faulted: string[] = [];

  const faultFor = (req: IncomingMessage): FaultRule | undefined => {
    const path = (req.url ?? '/').split('?')[0];
    const r = rules.find((x) => (!x.method || x.method === req.method) && x.path.test(path) && x.left > 0);
    if (!r) return undefined;
    r.left -= 1;
    return r;
  };

  const tls = { cert: readFileSync(join(kube.dir, 'server.crt')), key: readFileSync(join(kube.dir, 'server.key')) };
  const server = https.createServer(tls, (req: IncomingMessage, res: ServerResponse) => {
    const rule = faultFor(req);
    if (rule) {
      faulted.push(`${req.method} ${req.url}`);
      req.resume();
      const message = rule.message ?? `injected fault: HTTP ${rule.status}`;
      res.writeHead(rule.status, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message,
          reason: rule.status >= 500 ? 'InternalError' : 'BadRequest',
          code: rule.status,
        }),
      );
      return;
    }
    const up = https.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
        agent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502).end(String(err));
      else res.destroy();
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const kubeconfig = join(kube.dir, `fault-proxy-${(server.address() as AddressInfo).port}.kubeconfig`);
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'proxy',
          cluster: { server: url, 'certificate-authority-data': Buffer.from(kube.caPem).toString('base64') },
        },
      ],
      users: [{ name: 'admin', user: { token: kube.token } }],
      contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'admin' } }],
      'current-context': 'proxy',
    }),
    { mode: 0o600 },
  );
  return {
    url,
    kubeconfig,
    faulted,
    fail: (rule) => rules.push({ ...rule, left: rule.times ?? Infinity }),
    clear: () => {
      rules = [];
    },
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
