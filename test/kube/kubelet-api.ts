/**
 * @module TEST DOUBLE of the kubelet's HTTPS API, the part the API server proxies `pods/log` and
 * `pods/exec` to (used by node-double.ts): `GET /containerLogs/NS/POD/CONTAINER` (tailLines,
 * follow, sinceSeconds, timestamps) and `/exec/NS/POD/CONTAINER` over the websocket channel protocol (`v5/v4.channel.k8s.io`:
 * stdin on channel 0 and its end as the v5 close frame, stdout 1, stderr 2, the exit status as a
 * `Status` on channel 3). The commands run as host processes (kubelet-double.ts). It serves with
 * the harness's certificate; the API server does not verify a kubelet's certificate unless told to.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Obj } from './api.js';
import type { KubeApiServer } from './harness.js';
import type { Kubelet } from './kubelet-double.js';

const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];

export interface KubeletApi {
  port: number;
  close(): Promise<void>;
}

/** `podOf(namespace, name)`: the pod as last listed, for exec. */
export async function startKubeletApi(
  kube: KubeApiServer,
  kubelet: Kubelet,
  podOf: (namespace: string, name: string) => Obj | undefined,
): Promise<KubeletApi> {
  const server: Server = createServer(
    { cert: readFileSync(join(kube.dir, 'server.crt')), key: readFileSync(join(kube.dir, 'server.key')) },
    (req, res) => serveLogs(req, res),
  );
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => EXEC_PROTOCOLS.find((p) => offered.has(p)) ?? false,
  });

  function serveLogs(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'https://localhost');
    const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    const lines = m ? kubelet.logLines(m[1], m[2], m[3]) : undefined;
    if (!m || !lines) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end(`no container ${m ? m.slice(1).join('/') : url.pathname} on this node`);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    // As the kubelet: sinceSeconds counts back from now, timestamps prefixes the RFC 3339 time.
    const since = url.searchParams.get('sinceSeconds');
    const stamps = url.searchParams.get('timestamps') === 'true';
    const show = (l: string, ms: number): string => (stamps ? `${new Date(ms).toISOString()} ${l}` : l);
    const bound = since === null ? -Infinity : Date.now() - Number(since) * 1000;
    const recent = lines.filter((l) => l.ms >= bound);
    const tailLines = url.searchParams.get('tailLines');
    const first = tailLines === null ? recent : recent.slice(-Number(tailLines) || recent.length);
    for (const l of tailLines === '0' ? [] : first) res.write(`${show(l.line, l.ms)}\n`);
    if (url.searchParams.get('follow') !== 'true') return void res.end();
    const off = kubelet.follow(m[1], m[2], m[3], (l) => res.write(`${show(l, Date.now())}\n`));
    res.on('close', () => off?.());
  }

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'https://localhost');
    const m = /^\/exec\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    const pod = m ? podOf(m[1], m[2]) : undefined;
    if (!m || !pod) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const command = url.searchParams.getAll('command');
    const stdin = ['1', 'true'].includes(url.searchParams.get('input') ?? '');
    wss.handleUpgrade(req, socket, head, (ws) => runExec(ws, pod, m[3], command, stdin));
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

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const addr = server.address();

  return {
    port: typeof addr === 'object' && addr ? addr.port : 0,
    async close() {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
