/**
 * @module The peers `fanout-peers` measures beside our own fan-out, one process per role (the
 * role in BENCH_PEER_ROLE), driven over IPC like bench/edge-worker.ts (bench/lib/fleet.ts Worker):
 *
 * - `am-server`: the reference sync server of the CRDT we use: an automerge-repo `Repo` with the
 *   WebSocket server adapter (on a `ws` server on loopback) and the Node filesystem storage
 *   adapter, holding one document per client. It shares a document only with the peers that asked
 *   for it (`announce` false, as automerge-repo's sync server does).
 * - `am-clients`: many automerge-repo clients in one process, one `Repo` with its own WebSocket
 *   client adapter per client, each holding one document; they note when the change arrives.
 * - `wire-server`: a plain `ws` server that sends every client one frame of a given size and
 *   waits for every reply: the floor of any fan-out over WebSockets on this machine.
 * - `wire-clients`: plain `ws` clients that answer every frame with 8 bytes.
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Repo, type AutomergeUrl, type DocHandle, type PeerId } from '@automerge/automerge-repo';
import { NodeWSServerAdapter, WebSocketClientAdapter } from '@automerge/automerge-repo-network-websocket';
import { NodeFSStorageAdapter } from '@automerge/automerge-repo-storage-nodefs';
import { WebSocket, WebSocketServer } from 'ws';

const role = process.env.BENCH_PEER_ROLE ?? '';
const index = Number(process.env.BENCH_WORKER_INDEX ?? 0);

/** A workload spec of the shape and size of ours: one Pod manifest with a container. */
interface SpecDoc {
  workloads: Record<
    string,
    {
      generation: number;
      manifests: {
        kind: string;
        metadata: { name: string };
        spec: { containers: { name: string; image: string; env: { name: string; value: string }[] }[] };
      }[];
    }
  >;
}

function initialSpec(): SpecDoc {
  return {
    workloads: {
      'bench-app': {
        generation: 1,
        manifests: [
          {
            kind: 'Pod',
            metadata: { name: 'bench-app' },
            spec: {
              containers: [
                { name: 'app', image: 'registry.example/bench-app:1', env: [{ name: 'MODE', value: 'bench' }] },
              ],
            },
          },
        ],
      },
    },
  };
}

type Cmd = { op: string; rid: number } & Record<string, unknown>;

// ---- automerge-repo server ----
let amServer: { repo: Repo; wss: WebSocketServer; handles: DocHandle<SpecDoc>[] } | undefined;

async function amServerStart(dir: string, n: number): Promise<{ port: number; urls: AutomergeUrl[] }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, backlog: 4096 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const repo = new Repo({
    network: [new NodeWSServerAdapter(wss as never)],
    storage: new NodeFSStorageAdapter(dir),
    peerId: 'bench-sync-server' as PeerId,
    shareConfig: { announce: async () => false, access: async () => true },
  });
  const handles: DocHandle<SpecDoc>[] = [];
  for (let i = 0; i < n; i++) handles.push(repo.create<SpecDoc>(initialSpec()));
  await repo.flush();
  amServer = { repo, wss, handles };
  return { port: (wss.address() as AddressInfo).port, urls: handles.map((h) => h.url) };
}

function amServerChange(image: string): { t0: number; changedMs: number } {
  const t0 = Date.now();
  for (const h of amServer!.handles)
    h.change((d) => {
      const w = d.workloads['bench-app']!;
      w.generation += 1;
      w.manifests[0]!.spec.containers[0]!.image = image;
    });
  return { t0, changedMs: Date.now() - t0 };
}

// ---- automerge-repo clients ----
const amClients: { repo: Repo; handle: DocHandle<SpecDoc>; arrivedAt?: number }[] = [];
let expectImage = '';

async function amClientsConnect(port: number, urls: AutomergeUrl[], window: number): Promise<number> {
  let next = 0;
  const one = async (): Promise<void> => {
    while (next < urls.length) {
      const i = next++;
      const repo = new Repo({
        network: [new WebSocketClientAdapter(`ws://127.0.0.1:${port}`)],
        peerId: `bench-client-${index}-${i}` as PeerId,
      });
      // Ask only once connected to the server: a find with no peer yet ends as "unavailable".
      const deadline = Date.now() + 120_000;
      while (repo.peers.length === 0) {
        if (Date.now() > deadline) throw new Error(`client ${i} could not reach the server in 120 s`);
        await new Promise((r) => setTimeout(r, 20));
      }
      const handle = await repo.find<SpecDoc>(urls[i]!);
      const c: (typeof amClients)[number] = { repo, handle };
      handle.on('change', ({ doc }) => {
        if (
          c.arrivedAt === undefined &&
          doc.workloads['bench-app']?.manifests[0]?.spec.containers[0]?.image === expectImage
        )
          c.arrivedAt = Date.now();
      });
      amClients.push(c);
    }
  };
  await Promise.all(Array.from({ length: window }, one));
  return amClients.length;
}

// ---- wire floor ----
let wire: { wss: WebSocketServer; clients: Set<WebSocket>; onReply?: () => void } | undefined;

async function wireServerStart(): Promise<number> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, backlog: 4096, perMessageDeflate: false });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const w: NonNullable<typeof wire> = { wss, clients: new Set() };
  wss.on('connection', (ws) => {
    w.clients.add(ws);
    ws.on('message', () => w.onReply?.());
    ws.on('close', () => w.clients.delete(ws));
  });
  wire = w;
  return (wss.address() as AddressInfo).port;
}

function wireServerSend(bytes: number): Promise<{ t0: number; doneAt: number; clients: number }> {
  const w = wire!;
  const frame = Buffer.alloc(bytes, 0x61);
  const n = w.clients.size;
  return new Promise((resolve) => {
    let replies = 0;
    const t0 = Date.now();
    w.onReply = () => {
      if (++replies === n) resolve({ t0, doneAt: Date.now(), clients: n });
    };
    for (const ws of w.clients) ws.send(frame);
  });
}

const wireClients: { ws: WebSocket; arrivedAt?: number }[] = [];

async function wireClientsConnect(port: number, n: number, window: number): Promise<number> {
  let next = 0;
  const reply = Buffer.alloc(8);
  const one = async (): Promise<void> => {
    while (next < n) {
      next++;
      const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
      const c: (typeof wireClients)[number] = { ws };
      ws.on('message', () => {
        c.arrivedAt = Date.now();
        ws.send(reply);
      });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      wireClients.push(c);
    }
  };
  await Promise.all(Array.from({ length: window }, one));
  return wireClients.length;
}

async function handle(cmd: Cmd): Promise<unknown> {
  switch (`${role}:${cmd.op}`) {
    case 'am-server:start':
      fs.mkdirSync(cmd.dir as string, { recursive: true });
      return amServerStart(cmd.dir as string, cmd.n as number);
    case 'am-server:change':
      return amServerChange(cmd.image as string);
    case 'am-clients:connect':
      return amClientsConnect(cmd.port as number, cmd.urls as AutomergeUrl[], (cmd.window as number) ?? 50);
    case 'am-clients:expect':
      expectImage = cmd.image as string;
      for (const c of amClients) c.arrivedAt = undefined;
      return true;
    case 'am-clients:arrivals':
      return amClients.flatMap((c) => (c.arrivedAt === undefined ? [] : [c.arrivedAt]));
    case 'wire-server:start':
      return wireServerStart();
    case 'wire-server:send':
      return wireServerSend(cmd.bytes as number);
    case 'wire-clients:connect':
      return wireClientsConnect(cmd.port as number, cmd.n as number, (cmd.window as number) ?? 100);
    case 'wire-clients:arrivals':
      return wireClients.flatMap((c) => (c.arrivedAt === undefined ? [] : [c.arrivedAt]));
    default:
      if (cmd.op === 'stop') {
        setImmediate(() => process.exit(0));
        return true;
      }
      throw new Error(`unknown op ${cmd.op} for role ${role}`);
  }
}

process.on('message', (raw) => {
  const cmd = raw as Cmd;
  handle(cmd).then(
    (result) => process.send!({ rid: cmd.rid, result }),
    (err: unknown) => process.send!({ rid: cmd.rid, error: err instanceof Error ? err.message : String(err) }),
  );
});
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true, pid: process.pid });
