/**
 * @module How a node's components are found healthy (docs/clusters.md, "Health"): etcd's
 * `/health`, the API server's `/readyz` (as the cluster's admin, over TLS checked against the
 * cluster CA), the controller-manager's and scheduler's `/healthz` on loopback (their serving
 * certificate is self-made: only their answer is read), the kubelet's `/healthz`, containerd's
 * socket; and the node's `Ready` condition and kubelet version, read from the API server.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import type { ComponentName } from '../../core/cluster.js';
import type { NodeLayout, NodeSpec } from './configs.js';

const TIMEOUT_MS = 5_000;

interface Answer {
  status: number;
  body: string;
}

function get(url: string, tls?: https.RequestOptions): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const mod = url.startsWith('https:') ? https : http;
    const req = mod.get(url, { ...tls, timeout: TIMEOUT_MS }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        if (body.length < 65_536) body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} in ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
  });
}

/** The admin's TLS settings (control plane only). */
export function adminTls(l: NodeLayout): https.RequestOptions {
  const read = (f: string) => fs.readFileSync(path.join(l.pki, f));
  return { ca: read('ca.crt'), cert: read('admin.crt'), key: read('admin.key') };
}

function socketUp(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(file);
    s.setTimeout(TIMEOUT_MS);
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
    s.on('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
}

/** Whether a component answers as healthy; the reason when it does not. */
export async function componentHealth(
  name: ComponentName,
  o: NodeSpec,
  l: NodeLayout,
): Promise<{ healthy: boolean; message?: string }> {
  const p = o.ports;
  const ok = (a: Answer, good: (b: string) => boolean) =>
    a.status === 200 && good(a.body)
      ? { healthy: true }
      : { healthy: false, message: `HTTP ${a.status}: ${a.body.trim().slice(0, 200)}` };
  try {
    switch (name) {
      case 'containerd':
        return (await socketUp(path.join(l.run, 'containerd.sock')))
          ? { healthy: true }
          : { healthy: false, message: 'its socket does not answer' };
      case 'etcd':
        return ok(await get(`http://127.0.0.1:${p.etcdClient}/health`), (b) => /"health":\s*"true"/.test(b));
      case 'kube-apiserver':
        return ok(await get(`https://127.0.0.1:${p.apiServer}/readyz`, adminTls(l)), (b) => b.trim() === 'ok');
      case 'kube-controller-manager':
        return ok(
          await get(`https://127.0.0.1:${p.controllerManager}/healthz`, { rejectUnauthorized: false }),
          (b) => b.trim() === 'ok',
        );
      case 'kube-scheduler':
        return ok(
          await get(`https://127.0.0.1:${p.scheduler}/healthz`, { rejectUnauthorized: false }),
          (b) => b.trim() === 'ok',
        );
      case 'kubelet':
        return ok(await get(`http://127.0.0.1:${p.kubeletHealthz}/healthz`), (b) => b.trim() === 'ok');
    }
  } catch (err) {
    return { healthy: false, message: (err as Error).message.slice(0, 200) };
  }
}

/** The node as the API server sees it: Ready, the kubelet's version, why not Ready. */
/**
 * Where this node reads its Node object: a control plane from its own API server as the admin, a
 * worker from the control plane's as its kubelet (the Node authorizer lets it read its own node).
 */
function nodeApi(o: NodeSpec, l: NodeLayout): { base: string; tls: https.RequestOptions } {
  if (o.role === 'worker' && o.apiServer) {
    const read = (f: string) => fs.readFileSync(path.join(l.pki, f));
    return {
      base: `https://${o.apiServer.address}:${o.ports.apiServer}`,
      tls: {
        ca: read('ca.crt'),
        cert: read('kubelet-client.crt'),
        key: read('kubelet-client.key'),
        servername: o.apiServer.serverName,
      },
    };
  }
  return { base: `https://127.0.0.1:${o.ports.apiServer}`, tls: adminTls(l) };
}

export interface NodeSeen {
  ready: boolean;
  kubeletVersion?: string;
  reason?: string;
  /** The pod subnet the controller-manager gave the node (a worker's CNI config is written from it). */
  podCIDR?: string;
}

export async function nodeState(o: NodeSpec, l: NodeLayout, edge: string): Promise<NodeSeen> {
  try {
    const api = nodeApi(o, l);
    const a = await get(`${api.base}/api/v1/nodes/${edge}`, api.tls);
    if (a.status === 404) return { ready: false, reason: 'the kubelet has not registered the node yet' };
    if (a.status !== 200) return { ready: false, reason: `HTTP ${a.status} reading the node` };
    const n = JSON.parse(a.body) as {
      spec?: { podCIDR?: string };
      status?: {
        nodeInfo?: { kubeletVersion?: string };
        conditions?: { type: string; status: string; reason?: string; message?: string }[];
      };
    };
    const cond = n.status?.conditions?.find((c) => c.type === 'Ready');
    const ready = cond?.status === 'True';
    return {
      ready,
      ...(n.status?.nodeInfo?.kubeletVersion ? { kubeletVersion: n.status.nodeInfo.kubeletVersion } : {}),
      ...(!ready ? { reason: `${cond?.reason ?? 'NotReady'}: ${cond?.message ?? ''}`.slice(0, 500) } : {}),
      ...(n.spec?.podCIDR && /^[\d.]+\/\d+$/.test(n.spec.podCIDR) ? { podCIDR: n.spec.podCIDR } : {}),
    };
  } catch (err) {
    return { ready: false, reason: (err as Error).message.slice(0, 500) };
  }
}

/**
 * Deletes every pod of the cluster through its API (teardown: the kubelet stops their containers
 * and tears down their sandboxes, networks included, before it is stopped itself).
 */
export async function deleteAllPods(o: NodeSpec, l: NodeLayout): Promise<void> {
  const tls = adminTls(l);
  const base = `https://127.0.0.1:${o.ports.apiServer}`;
  const nsList = await get(`${base}/api/v1/namespaces`, tls);
  if (nsList.status !== 200) throw new Error(`listing namespaces: HTTP ${nsList.status}`);
  const names = (JSON.parse(nsList.body) as { items: { metadata: { name: string } }[] }).items.map(
    (n) => n.metadata.name,
  );
  for (const ns of names)
    await new Promise<void>((resolve, reject) => {
      const req = https.request(
        `${base}/api/v1/namespaces/${ns}/pods?gracePeriodSeconds=0`,
        { ...tls, method: 'DELETE', timeout: TIMEOUT_MS },
        (res) => {
          res.resume();
          res.on('end', () => resolve());
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end();
    });
}

/** How many pods the API server still lists (any namespace). */
export async function podCount(o: NodeSpec, l: NodeLayout): Promise<number> {
  const a = await get(`https://127.0.0.1:${o.ports.apiServer}/api/v1/pods`, adminTls(l));
  if (a.status !== 200) throw new Error(`listing pods: HTTP ${a.status}`);
  return (JSON.parse(a.body) as { items: unknown[] }).items.length;
}
