/**
 * @module interconnect (issue #46, docs/interconnect.md): TCP through the hub between two real edge
 * agents (`outpost edge`, process driver) and one `outpost hub` process on loopback, side by side
 * with the same traffic over a direct loopback connection to the workload (the floor), in one run:
 *
 * - one long stream: STREAM_BYTES written by a client to a sink that answers with the count once
 *   the client half-closed; throughput, and the hub's CPU per MiB relayed and its RSS during it;
 * - SHORT_CONNECTIONS short request/response connections one after another: connect, 64 bytes out,
 *   echoed back, close; p50/p99 of the time to the first answer byte (a relayed connection's
 *   connect is made at the far edge, so this is its connect latency) and of the whole connection.
 *
 * The same traffic also goes through an SSH `-L` forward hop (bench/lib/ssh-hop.ts: its own sshd
 * on loopback), the comparison the issue sets: the hub at least 50% of its throughput, p99 connect
 * within 2x of it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { HubApi, placement } from '../lib/api.js';
import { HubProcess, ROOT } from '../lib/hub-process.js';
import { startSshHop, type SshHop } from '../lib/ssh-hop.js';
import { percentile, rssBytes, sleep, treeCpuMs, until } from '../lib/sys.js';
import { remaining, type Scenario, type ScenarioContext } from './common.js';

const STREAM_BYTES = 512 * 1024 * 1024;
const SHORT_CONNECTIONS = 1_000;
const CHUNK = 1024 * 1024;

export const SERVERS = `
const net = require('net');
const [mode, port] = process.argv.slice(1);
net.createServer({ allowHalfOpen: true }, (s) => {
  s.on('error', () => undefined);
  if (mode === 'echo') return s.pipe(s);
  let n = 0;
  s.on('data', (c) => (n += c.length));
  s.on('end', () => s.end(String(n)));
}).listen(Number(port), '127.0.0.1');
`;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
}

/** Writes `bytes` to port, half-closes, and resolves once the sink's count came back. */
function stream(port: number, bytes: number): Promise<{ ms: number; echoedCount: number }> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const sock = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    const buf = Buffer.alloc(CHUNK, 0x5a);
    let sent = 0;
    let answer = '';
    const more = (): void => {
      while (sent < bytes) {
        sent += CHUNK;
        if (!sock.write(buf)) return void sock.once('drain', more);
      }
      sock.end();
    };
    sock.once('connect', more);
    sock.on('data', (c) => (answer += c));
    sock.once('error', reject);
    sock.once('close', () => resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, echoedCount: Number(answer) }));
  });
}

/** One short connection: 64 bytes out, echoed back, closed; the time to the first answer byte and to the close. */
function short(port: number): Promise<{ firstByteMs: number; totalMs: number }> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    let first: bigint | undefined;
    const sock = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    sock.setNoDelay(true);
    sock.once('connect', () => sock.end(Buffer.alloc(64, 0x61)));
    sock.on('data', () => (first ??= process.hrtime.bigint()));
    sock.once('error', reject);
    sock.once('close', () => {
      const end = process.hrtime.bigint();
      if (first === undefined) return reject(new Error(`port ${port}: closed without an answer`));
      resolve({ firstByteMs: Number(first - t0) / 1e6, totalMs: Number(end - t0) / 1e6 });
    });
  });
}

async function shortRun(port: number, n: number) {
  const first: number[] = [];
  const total: number[] = [];
  const t0 = Date.now();
  for (let i = 0; i < n; i++) {
    const r = await short(port);
    first.push(r.firstByteMs);
    total.push(r.totalMs);
  }
  const r2 = (v: number | undefined) => (v === undefined ? undefined : Math.round(v * 100) / 100);
  // BENCH_INTERCONNECT_SAMPLES=PREFIX: each run's times to the first byte, in order, to PREFIX-PORT.json (where the
  // slow connections fall: docs/benchmarks.md, "Interconnect, fifth round").
  const samples = process.env.BENCH_INTERCONNECT_SAMPLES;
  if (samples) fs.writeFileSync(`${samples}-${port}.json`, JSON.stringify(first));
  return {
    connections: n,
    wallMs: Date.now() - t0,
    firstByteP50Ms: r2(percentile(first, 50)),
    firstByteP99Ms: r2(percentile(first, 99)),
    connectionP50Ms: r2(percentile(total, 50)),
    connectionP99Ms: r2(percentile(total, 99)),
  };
}

export function startEdge(ctx: ScenarioContext, hubUrl: string, name: string, token: string): ChildProcess {
  const logFile = path.join(ctx.runDir, `${name}.log`);
  const log = fs.openSync(logFile, 'a');
  const argv = ctx.hubBinary ? [ctx.hubBinary] : [process.execPath, '--import', 'tsx', path.join(ROOT, 'main.ts')];
  const child = spawn(
    argv[0]!,
    [
      ...argv.slice(1),
      'edge',
      '--data',
      path.join(ctx.runDir, name),
      '--hub',
      hubUrl,
      '--join-token',
      token,
      '--name',
      name,
      '--driver',
      'process',
    ],
    {
      cwd: ROOT,
      // BENCH_EDGE_NODE_OPTIONS: Node flags for the agents alone (e.g. `--cpu-prof --cpu-prof-dir DIR`).
      env: {
        ...process.env,
        OUTPOST_LOG_LEVEL: 'info',
        ...(process.env.BENCH_EDGE_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_EDGE_NODE_OPTIONS } : {}),
      },
      stdio: ['ignore', log, log],
    },
  );
  fs.closeSync(log);
  return child;
}

export const interconnect: Scenario = async (ctx, out) => {
  const hub = new HubProcess({
    dataDir: path.join(ctx.runDir, 'hub'),
    logFile: path.join(ctx.runDir, 'hub.log'),
    binary: ctx.hubBinary,
    cpuProfDir: ctx.cpuProfDir,
    // As a hub runs by default (the edges pin its CA from the join token): the SSH hop encrypts too.
    tls: true,
  });
  await hub.start();
  const edges: ChildProcess[] = [];
  let ssh: SshHop | undefined;
  try {
    const api = new HubApi(hub.url, hub.adminToken, hub.caPem());
    const [echoPort, sinkPort, echoImport, sinkImport] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    for (const [name, role] of [
      ['icb-consumer', 'consumer'],
      ['icb-server', 'server'],
    ] as const)
      edges.push(startEdge(ctx, hub.url, name, await api.joinToken(1, { role })));
    const container = (mode: string, port: number) => ({
      name: mode,
      // The run directory last: how its processes are found and ended afterwards (killUnder).
      command: [process.execPath, '-e', SERVERS, mode, String(port), ctx.runDir],
      ports: [{ containerPort: port }],
      readinessProbe: { tcpSocket: { port }, periodSeconds: 1 },
    });
    await api.apply([
      {
        kind: 'Workload',
        metadata: { name: 'icb' },
        spec: {
          manifests: [
            {
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: { name: 'icb' },
              spec: { containers: [container('echo', echoPort), container('sink', sinkPort)] },
            },
          ],
        },
      },
      placement('icb', ['icb'], { labels: { role: 'server' } }),
      ...(
        [
          ['echo', echoPort, echoImport],
          ['sink', sinkPort, sinkImport],
        ] as const
      ).flatMap(([name, port, local]) => [
        { kind: 'ServiceExport', metadata: { name }, spec: { workload: 'icb', port } },
        { kind: 'ServiceImport', metadata: { name }, spec: { export: name, port: local, edges: ['icb-consumer'] } },
      ]),
    ]);
    for (const name of ['echo', 'sink'])
      await until(
        async () => {
          const imp = await api.request<any>('GET', `/projects/default/serviceimports/${name}`);
          const exp = await api.request<any>('GET', `/projects/default/serviceexports/${name}`);
          return imp.status?.listening === 1 && exp.status?.healthy === 1;
        },
        { timeoutMs: Math.min(remaining(ctx), 120_000), intervalMs: 250, what: `import ${name} listening and served` },
      );
    const [sshdPort, echoSsh, sinkSsh] = [await freePort(), await freePort(), await freePort()];
    ssh = await startSshHop(path.join(ctx.runDir, 'ssh'), sshdPort, [
      { local: echoSsh, target: echoPort },
      { local: sinkSsh, target: sinkPort },
    ]);
    // Warm the paths (tsx compiles on first use; the first relayed connection opens the tunnel's mux).
    for (const port of [echoPort, echoSsh, echoImport]) await short(port);
    ctx.log(`interconnect: streaming ${STREAM_BYTES / CHUNK} MiB direct, through ssh -L, then through the hub`);

    // CPU of the hop: the hub process, or ssh and sshd with its session children.
    const hopCpuMs = (hop: 'hub' | 'ssh') =>
      hop === 'hub' ? (treeCpuMs(hub.pid) ?? 0) : (treeCpuMs(ssh!.sshdPid) ?? 0) + (treeCpuMs(ssh!.sshPid) ?? 0);
    const runStream = async (port: number, hop: 'hub' | 'ssh') => {
      const cpu0 = hopCpuMs(hop);
      const edgeCpu0 = edges.map((e) => treeCpuMs(e.pid!) ?? 0);
      let maxRss = rssBytes(hub.pid) ?? 0;
      const sampler = setInterval(() => (maxRss = Math.max(maxRss, rssBytes(hub.pid) ?? 0)), 100);
      const r = await stream(port, STREAM_BYTES).finally(() => clearInterval(sampler));
      const cpu = hopCpuMs(hop) - cpu0;
      // The two agents' CPU (with their workloads: the sink is the serving agent's child).
      const edgeCpu = edges.map((e, i) => Math.round((treeCpuMs(e.pid!) ?? 0) - edgeCpu0[i]!));
      if (r.echoedCount !== STREAM_BYTES) throw new Error(`the sink counted ${r.echoedCount} of ${STREAM_BYTES} bytes`);
      const mib = STREAM_BYTES / CHUNK;
      return {
        bytes: STREAM_BYTES,
        ms: Math.round(r.ms),
        mibPerSecond: Math.round((mib / (r.ms / 1000)) * 10) / 10,
        hopCpuMs: Math.round(cpu),
        hopCpuMsPerMiB: Math.round((cpu / mib) * 100) / 100,
        edgesCpuMs: edgeCpu,
        hubMaxRssBytes: maxRss,
      };
    };
    const hubRssBefore = rssBytes(hub.pid);
    const direct = await runStream(sinkPort, 'hub');
    await sleep(1_000);
    const viaSsh = await runStream(sinkSsh, 'ssh');
    await sleep(1_000);
    const relayed = await runStream(sinkImport, 'hub');
    ctx.log(`interconnect: ${SHORT_CONNECTIONS} short connections direct, through ssh -L, then through the hub`);
    const shortDirect = await shortRun(echoPort, SHORT_CONNECTIONS);
    const shortSsh = await shortRun(echoSsh, SHORT_CONNECTIONS);
    const shortRelayed = await shortRun(echoImport, SHORT_CONNECTIONS);
    const imp = await api.request<any>('GET', '/projects/default/serviceimports/echo');

    const share = Math.round((relayed.mibPerSecond / viaSsh.mibPerSecond) * 1000) / 1000;
    const p99Ratio = Math.round((shortRelayed.firstByteP99Ms! / shortSsh.firstByteP99Ms!) * 100) / 100;
    out.metrics.stream = {
      direct,
      ssh: viaSsh,
      relayed,
      relayedShareOfDirect: Math.round((relayed.mibPerSecond / direct.mibPerSecond) * 1000) / 1000,
      relayedShareOfSsh: share,
    };
    out.metrics.short = { direct: shortDirect, ssh: shortSsh, relayed: shortRelayed, relayedP99OverSsh: p99Ratio };
    out.metrics.consumerReport = {
      connectP50Ms: imp.status?.connectP50Ms,
      connectP99Ms: imp.status?.connectP99Ms,
      errors: imp.status?.errors,
    };
    out.metrics.hubRssBytes = { before: hubRssBefore, after: rssBytes(hub.pid) };
    out.targets.push(
      {
        what: 'one long stream through the hub, share of the SSH -L hop',
        target: '>= 50%',
        value: `${relayed.mibPerSecond} MiB/s vs ${viaSsh.mibPerSecond} MiB/s ssh (${Math.round(share * 100)}%), ${direct.mibPerSecond} MiB/s direct`,
        met: share >= 0.5,
      },
      {
        what: 'hop CPU per MiB (hub; ssh + sshd)',
        target: 'report',
        value: `${relayed.hopCpuMsPerMiB} ms/MiB hub, ${viaSsh.hopCpuMsPerMiB} ms/MiB ssh`,
      },
      {
        what: `p99 time to the first answer byte, ${SHORT_CONNECTIONS} short connections, hub over SSH -L`,
        target: '<= 2x',
        value: `${shortRelayed.firstByteP99Ms} ms vs ${shortSsh.firstByteP99Ms} ms ssh (${p99Ratio}x), ${shortDirect.firstByteP99Ms} ms direct`,
        met: p99Ratio <= 2,
      },
    );
    if (imp.status?.errors)
      out.bottleneck.push(`the import counted ${imp.status.errors} refused or failed connections`);
  } finally {
    await ssh?.stop();
    for (const e of edges) e.kill('SIGTERM');
    await sleep(2_000);
    // The hub first, gracefully (its command line names the run directory too: killed below, it
    // never wrote its CPU profile); then the process driver's workloads, which outlive their agent
    // by design: end what this run started.
    await hub.stop();
    killUnder(ctx.runDir);
  }
};

/** SIGKILLs the processes whose command line names `dir` (this run's agents and workloads), with their groups. */
export function killUnder(dir: string): void {
  const own = process.pid;
  const self = fs.readFileSync('/proc/self/stat', 'utf8');
  const ownGroup = Number(self.slice(self.lastIndexOf(')') + 2).split(' ')[2]);
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p) || Number(p) === own) continue;
    try {
      if (!fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(dir)) continue;
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      const pgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (pgid && pgid !== ownGroup) process.kill(-pgid, 'SIGKILL');
      process.kill(Number(p), 'SIGKILL');
    } catch {
      /* gone meanwhile */
    }
  }
}
