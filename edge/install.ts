/**
 * @module `outpost edge install --hub URL --join-token T`: one command per edge host. Copies the
 * running executable to --bin, creates the data directory (0700), enrolls right away (so the unit
 * needs nothing but `--data`, and a bad token fails now, in front of the operator, rather than in
 * a restart loop), and writes outpost-edge.service. `--dry-run` prints every step and file and
 * contacts nobody: enrolling would use up the join token.
 *
 * The unit depends on the runtime driver: see `edgeUnit` and docs/operations.md.
 */
import path from 'node:path';
import { isValidName } from '../core/ids.js';
import { absolute, applyStep, describeStep, installSource, type InstallStep } from '../core/install.js';
import { environment, execLine, renderUnit, unitPath, unitText, type UnitEntry } from '../core/systemd.js';
import { buildInfo } from '../core/version.js';
import { parseToken } from '../sync/pinned-ca.js';
import {
  configPath,
  defaultEdgeName,
  driverName,
  parseHubList,
  parseInterconnectAddress,
  readEdgeConfig,
  writeEdgeConfig,
  type EdgeConfig,
} from './config.js';
import type { DriverName } from './drivers/driver.js';
import { enroll, type EnrollOnceOptions } from './enroll.js';
import { collectInventory } from './inventory.js';

export const EDGE_UNIT = 'outpost-edge.service';

/** The `outpost edge` flags an installed agent runs with: what `install` was given is carried into ExecStart. */
export interface EdgeRunFlags {
  /** --blob-budget, in bytes. */
  blobBudgetBytes?: number;
  /** --home-redial, in ms. */
  homeRedialMs?: number;
  /** --process-stable-run, in ms. */
  processStableMs?: number;
}

/** The command line the service runs: enrolled already, so the data directory and the run flags. */
export function edgeArgv(o: EdgeRunFlags & { bin: string; dataDir: string }): string[] {
  const argv = [o.bin, 'edge', '--data', o.dataDir];
  if (o.blobBudgetBytes !== undefined) argv.push('--blob-budget', String(o.blobBudgetBytes));
  if (o.homeRedialMs !== undefined) argv.push('--home-redial', `${o.homeRedialMs}ms`);
  if (o.processStableMs !== undefined) argv.push('--process-stable-run', `${o.processStableMs}ms`);
  return argv;
}

export interface EdgeInstallOptions extends EnrollOnceOptions, EdgeRunFlags {
  unitDir: string;
  bin: string;
  dryRun?: boolean;
  packaged: boolean;
  execPath: string;
}

/** Settings that depend on the driver: how far the service can be sandboxed, and what stop kills. */
function driverSettings(driver: DriverName, data: string): UnitEntry[] {
  const common: UnitEntry[] = [
    ['ProtectKernelModules', 'yes'],
    ['ProtectKernelLogs', 'yes'],
    ['ProtectClock', 'yes'],
    ['RestrictRealtime', 'yes'],
    ['LockPersonality', 'yes'],
  ];
  switch (driver) {
    case 'process':
      return [
        { comment: 'Workloads of the process driver outlive the agent (docs/drivers.md): stopping or restarting' },
        { comment: 'the service ends the agent only. They stop when a placement stops selecting this edge.' },
        ['KillMode', 'process'],
        { comment: 'They also run inside this sandbox: they may write only to these paths and cannot gain' },
        {
          comment:
            'privileges (setuid, sudo). More paths: systemctl edit outpost-edge, [Service] ReadWritePaths=/srv/x',
        },
        { comment: "/tmp is the host's on purpose: a private /tmp would vanish under running workloads at restart." },
        ['NoNewPrivileges', 'yes'],
        ['ProtectSystem', 'strict'],
        ['ReadWritePaths', `${data} /tmp /var/tmp`],
        ...common,
      ];
    case 'podman':
      return [
        { comment: "podman's conmon and containers are children of this service and must outlive the agent." },
        ['KillMode', 'process'],
        { comment: 'No file system or privilege sandbox: podman writes /var/lib/containers, /run, /etc/containers' },
        {
          comment:
            'and cgroups, and setuid programs inside containers must keep working. Podman isolates the containers.',
        },
        ...common,
      ];
    case 'kubernetes':
      return [
        { comment: "The kubernetes driver only talks to the cluster's API server: nothing runs here, so stop kills" },
        { comment: 'everything (the default KillMode), and the agent needs its data directory and the network only.' },
        { comment: 'The kubeconfig may live in a home directory (read-only here); an exec credential plugin that' },
        {
          comment:
            'writes a cache needs that path: systemctl edit outpost-edge, [Service] ReadWritePaths=/root/.kube/cache',
        },
        ['NoNewPrivileges', 'yes'],
        ['ProtectSystem', 'strict'],
        ['ReadWritePaths', data],
        ['ProtectHome', 'read-only'],
        ['PrivateTmp', 'yes'],
        ['PrivateDevices', 'yes'],
        ['ProtectKernelTunables', 'yes'],
        ['ProtectControlGroups', 'yes'],
        ['RestrictSUIDSGID', 'yes'],
        ['RestrictNamespaces', 'yes'],
        ['RestrictAddressFamilies', 'AF_INET AF_INET6 AF_UNIX'],
        ['SystemCallArchitectures', 'native'],
        ['CapabilityBoundingSet', ''],
        ...common,
      ];
  }
}

export function edgeUnit(
  o: EdgeRunFlags & { bin: string; dataDir: string; driver: DriverName; name: string; hub: string },
): string {
  const { version, commit } = buildInfo();
  const data = unitPath('--data', o.dataDir);
  return renderUnit({
    header: [
      `Written by \`outpost edge install\` (outpost ${version}, commit ${commit}). Running it again rewrites this file;`,
      'keep local changes in a drop-in instead: systemctl edit outpost-edge. See docs/operations.md.',
    ],
    sections: {
      Unit: [
        ['Description', unitText(`Outpost edge agent ${o.name} (hub ${o.hub}, ${o.driver} driver)`)],
        ['Wants', 'network-online.target'],
        ['After', 'network-online.target'],
      ],
      Service: [
        ['Type', 'simple'],
        { comment: `Enrolled already: ${data}/edge.json holds the hub, the credential, the pinned CA and the driver.` },
        ['ExecStart', execLine(edgeArgv(o))],
        { comment: 'The agent keeps working without the hub; it must run whenever the host does.' },
        ['Restart', 'always'],
        ['RestartSec', '2s'],
        ['TimeoutStopSec', '30s'],
        { comment: 'The packaged executable unpacks its SQLite addon once; keep it in a cache directory of its own.' },
        ['CacheDirectory', 'outpost-edge'],
        ['CacheDirectoryMode', '0700'],
        ['Environment', environment('OUTPOST_CACHE_DIR', '/var/cache/outpost-edge')],
        ...driverSettings(o.driver, data),
      ],
      Install: [['WantedBy', 'multi-user.target']],
    },
  });
}

interface Plan {
  steps: InstallStep[];
  unit: InstallStep;
  enrolled?: EdgeConfig;
  name: string;
  hub: string;
  driver: DriverName;
}

function plan(o: EdgeInstallOptions): Plan {
  const source = installSource(o.packaged, o.execPath, 'outpost edge install');
  const bin = absolute(o.bin);
  const dataDir = absolute(o.dataDir);
  const enrolled = readEdgeConfig(dataDir);
  let name: string;
  let hub: string;
  let driver: DriverName;
  if (enrolled) {
    // Installing again (a new binary, a lost unit file): keep the identity, refuse to change it.
    if (o.name && o.name !== enrolled.name)
      throw new Error(
        `${dataDir} already belongs to edge ${enrolled.name}: use another --data directory to enroll ${o.name}`,
      );
    if (o.driver && o.driver !== enrolled.driver)
      throw new Error(
        `edge ${enrolled.name} was enrolled with the ${enrolled.driver} driver: to change drivers, decommission it (outpost edge decommission ${enrolled.name}) and install with a new --data directory`,
      );
    ({ name, hub, driver } = enrolled);
  } else {
    if (!o.hub || !o.joinToken)
      throw new Error(
        `${dataDir} holds no enrolled edge: pass --hub URL and --join-token T (create one on the hub with \`outpost token create\`)`,
      );
    name = o.name ?? defaultEdgeName();
    if (!isValidName(name))
      throw new Error(`--name ${name}: use 1-63 lower-case letters, digits or '-' (the hostname is the default)`);
    if (parseToken(o.joinToken)?.kind !== 'join')
      throw new Error(
        '--join-token: this is not a join token (it starts with opj1.); create one on the hub with `outpost token create`',
      );
    // One URL or the replicas' list (edge/config.ts); enrollment keeps the list in edge.json.
    hub = parseHubList(o.hub).join(',');
    driver = driverName(o.driver ?? 'process');
    if (driver === 'kubernetes' && o.kubeconfig === undefined) {
      // A service sees neither the shell's KUBECONFIG nor a predictable HOME: the path goes in edge.json.
      throw new Error(
        "--driver kubernetes: pass --kubeconfig FILE (the service does not inherit your shell's environment or home)",
      );
    }
  }
  return {
    steps: [
      { kind: 'copy', from: source, to: bin, mode: 0o755 },
      { kind: 'dir', path: dataDir, mode: 0o700 },
    ],
    unit: {
      kind: 'file',
      path: path.join(absolute(o.unitDir), EDGE_UNIT),
      mode: 0o644,
      content: edgeUnit({
        bin,
        dataDir,
        driver,
        name,
        hub,
        ...(o.blobBudgetBytes !== undefined ? { blobBudgetBytes: o.blobBudgetBytes } : {}),
        ...(o.homeRedialMs !== undefined ? { homeRedialMs: o.homeRedialMs } : {}),
        ...(o.processStableMs !== undefined ? { processStableMs: o.processStableMs } : {}),
      }),
    },
    enrolled,
    name,
    hub,
    driver,
  };
}

function nextSteps(dataDir: string): string {
  return [
    'next, as root:',
    '  systemctl daemon-reload && systemctl enable --now outpost-edge',
    '  journalctl -u outpost-edge -f          # the logs (JSON lines)',
    `  outpost edge local status --data ${dataDir}`,
  ].join('\n');
}

/** Runs (or with dryRun describes) the install; returns what to print. */
export async function installEdge(o: EdgeInstallOptions): Promise<string> {
  const p = plan(o);
  const dataDir = absolute(o.dataDir);
  // Checked before anything is written (enroll and a later start parse it again).
  const address = o.interconnectAddress === undefined ? undefined : parseInterconnectAddress(o.interconnectAddress);
  const labels =
    Object.entries(o.labels ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',') || 'none';
  if (o.dryRun) {
    const enrollLine = p.enrolled
      ? `keep the enrollment of edge ${p.name} with ${p.hub} (${configPath(dataDir)})\n`
      : `enroll edge ${p.name} with ${p.hub} (driver ${p.driver}, labels ${labels}): write ${configPath(dataDir)} (mode 0600) with the credential the hub returns; not contacted in a dry run\n`;
    return `dry run: nothing was changed. outpost edge install would:\n${p.steps.map(describeStep).join('')}${enrollLine}${describeStep(p.unit)}\n${nextSteps(dataDir)}\n`;
  }
  let out = p.steps.map(applyStep).join('');
  if (p.enrolled) {
    out += `kept the enrollment of edge ${p.name} with ${p.hub}\n`;
    if (o.interconnectAddress !== undefined && address !== p.enrolled.interconnectAddress) {
      writeEdgeConfig(dataDir, { ...p.enrolled, interconnectAddress: address });
      out += `interconnect address: ${address ?? 'auto'}\n`;
    }
  } else {
    const { version } = buildInfo();
    try {
      await enroll({
        dataDir,
        hub: p.hub,
        joinToken: o.joinToken!,
        name: p.name,
        labels: o.labels,
        driver: p.driver,
        inventory: collectInventory(p.driver, version, { kubeconfig: o.kubeconfig }),
        ...(o.kubeconfig ? { kubeconfig: absolute(o.kubeconfig) } : {}),
        ...(o.interconnectAddress !== undefined ? { interconnectAddress: o.interconnectAddress } : {}),
      });
    } catch (err) {
      throw new Error(`enrolling edge ${p.name} with ${p.hub} failed; no unit was written`, { cause: err });
    }
    out += `enrolled edge ${p.name} with ${p.hub} (driver ${p.driver}, labels ${labels})\n`;
  }
  out += applyStep(p.unit);
  return `${out}\n${nextSteps(dataDir)}\n`;
}
