/**
 * @module `outpost hub install`: one command per host. Copies the running executable to --bin,
 * creates the data directory (0700) and writes outpost-hub.service, then says what to run.
 * `--dry-run` prints every step and file instead. systemd is never called: enabling the service
 * stays the operator's decision (and systemd may not run where the unit is prepared).
 *
 * @example
 * process.stdout.write(installHub({ dataDir: '/var/lib/outpost-hub', listen: '0.0.0.0:7443', unitDir: '/etc/systemd/system', bin: '/usr/local/bin/outpost', dryRun: true, packaged: true, execPath: '/tmp/outpost' }));
 */
import os from 'node:os';
import path from 'node:path';
import { absolute, applyStep, describeStep, installSource, type InstallStep } from '../core/install.js';
import { environment, execLine, renderUnit, unitPath, type UnitEntry } from '../core/systemd.js';
import { buildInfo } from '../core/version.js';
import { postgresUrlProblem } from './state/pg/open.js';
import { redactUrl } from './state/pg/statements.js';

export const HUB_UNIT = 'outpost-hub.service';

export interface HubInstallOptions {
  dataDir: string;
  listen: string;
  unitDir: string;
  bin: string;
  dryRun?: boolean;
  /** Whether the running code is the packaged executable, and its path. */
  packaged: boolean;
  execPath: string;
  /** `outpost hub` flags carried into ExecStart. */
  insecureHttp?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  hosts?: string[];
  requireApproval?: boolean;
  /** Hub replicas (docs/operations.md, "HA and scale-out"): the database URL goes to DATA/hub.env (0600), never the unit. */
  database?: string;
  identityKey?: string;
  advertiseUrl?: string;
  /** The identity provider (`--oidc-*`): the secret stays in its file, only the file's path is in the unit. */
  oidcIssuer?: string;
  oidcClientId?: string;
  oidcClientSecretFile?: string;
  oidcGroupsClaim?: string;
  oidcScopes?: string;
  oidcRefreshInterval?: number;
  oidcSessionTtl?: number;
  /** Blob files elsewhere than DATA/blobs (replicas share one): writable by the service too. */
  blobDir?: string;
  /**
   * The Helm chart renderer to install with the hub (`--helm`, or outpost-helm beside the running
   * executable): copied beside --bin as outpost-helm, and named by --helm in ExecStart. In the unit
   * options: the installed path.
   */
  helm?: string;
}

/** The renderer's name beside the installed executable (build/helm). */
export const HELM_RENDERER = 'outpost-helm';

/** The environment file of a hub on PostgreSQL: the URL holds a password, so not in the unit (mode 0644) nor in `ps`. */
export const HUB_ENV_FILE = 'hub.env';

function listenPort(listen: string): number {
  const m = /^(.*):(\d+)$/.exec(listen);
  if (!m || Number(m[2]) > 65535) throw new Error(`--listen ${listen}: use HOST:PORT, e.g. 0.0.0.0:7443`);
  return Number(m[2]);
}

/** What the unit is written from: where things go, and the `outpost hub` flags carried into ExecStart. */
export type HubUnitOptions = Omit<HubInstallOptions, 'unitDir' | 'dryRun' | 'packaged' | 'execPath'>;

/** The command line the service runs: everything the hub needs is on it but the database URL (hub.env). */
export function hubArgv(o: Omit<HubUnitOptions, 'database'>): string[] {
  const argv = [o.bin, 'hub', '--data', o.dataDir, '--listen', o.listen];
  if (o.insecureHttp) argv.push('--insecure-http');
  if (o.tlsCert) argv.push('--tls-cert', o.tlsCert);
  if (o.tlsKey) argv.push('--tls-key', o.tlsKey);
  if (o.tlsCa) argv.push('--tls-ca', o.tlsCa);
  for (const h of o.hosts ?? []) argv.push('--host', h);
  if (o.requireApproval) argv.push('--require-approval');
  if (o.identityKey) argv.push('--identity-key', o.identityKey);
  if (o.advertiseUrl) argv.push('--advertise-url', o.advertiseUrl);
  if (o.blobDir) argv.push('--blob-dir', o.blobDir);
  if (o.helm) argv.push('--helm', o.helm);
  if (o.oidcIssuer) argv.push('--oidc-issuer', o.oidcIssuer);
  if (o.oidcClientId) argv.push('--oidc-client-id', o.oidcClientId);
  if (o.oidcClientSecretFile) argv.push('--oidc-client-secret-file', o.oidcClientSecretFile);
  if (o.oidcGroupsClaim) argv.push('--oidc-groups-claim', o.oidcGroupsClaim);
  if (o.oidcScopes) argv.push('--oidc-scopes', o.oidcScopes);
  if (o.oidcRefreshInterval !== undefined) argv.push('--oidc-refresh-interval', `${o.oidcRefreshInterval}ms`);
  if (o.oidcSessionTtl !== undefined) argv.push('--oidc-session-ttl', `${o.oidcSessionTtl}ms`);
  return argv;
}

export function hubUnit(o: HubUnitOptions): string {
  const { version, commit } = buildInfo();
  const port = listenPort(o.listen);
  const data = unitPath('--data', o.dataDir);
  const service: UnitEntry[] = [
    ['Type', 'simple'],
    ['ExecStart', execLine(hubArgv(o))],
    ['Restart', 'always'],
    ['RestartSec', '2s'],
    // The hub closes sync sessions and flushes SQLite on SIGTERM; give it time before SIGKILL.
    ['TimeoutStopSec', '30s'],
    { comment: 'Every connected edge holds one socket.' },
    ['LimitNOFILE', '1048576'],
    { comment: 'The packaged executable unpacks its SQLite addon once; keep it out of the (protected) home.' },
    ['CacheDirectory', 'outpost-hub'],
    ['CacheDirectoryMode', '0700'],
    ['Environment', environment('OUTPOST_CACHE_DIR', '/var/cache/outpost-hub')],
    ...(o.database
      ? ([
          { comment: 'OUTPOST_DATABASE (the URL holds a password: mode 0600, not in this file).' },
          ['EnvironmentFile', unitPath('the environment file', path.join(o.dataDir, HUB_ENV_FILE))],
        ] satisfies UnitEntry[])
      : []),
    ['UMask', '0077'],
    { comment: 'Hardening: the hub needs its data directory, its port and nothing else.' },
    ['NoNewPrivileges', 'yes'],
    ['ProtectSystem', 'strict'],
    ['ReadWritePaths', o.blobDir ? `${data} ${unitPath('--blob-dir', o.blobDir)}` : data],
    ['ProtectHome', 'yes'],
    ['PrivateTmp', 'yes'],
    ['PrivateDevices', 'yes'],
    ['ProtectKernelTunables', 'yes'],
    ['ProtectKernelModules', 'yes'],
    ['ProtectKernelLogs', 'yes'],
    ['ProtectControlGroups', 'yes'],
    ['ProtectClock', 'yes'],
    ['ProtectHostname', 'yes'],
    ['RestrictSUIDSGID', 'yes'],
    ['RestrictRealtime', 'yes'],
    ['RestrictNamespaces', 'yes'],
    ['LockPersonality', 'yes'],
    ['RestrictAddressFamilies', 'AF_INET AF_INET6 AF_UNIX'],
    ['SystemCallArchitectures', 'native'],
    // Root keeps no capability at all, except binding a port below 1024 when asked to.
    ['CapabilityBoundingSet', port > 0 && port < 1024 ? 'CAP_NET_BIND_SERVICE' : ''],
  ];
  return renderUnit({
    header: [
      `Written by \`outpost hub install\` (outpost ${version}, commit ${commit}). Running it again rewrites this file;`,
      'keep local changes in a drop-in instead: systemctl edit outpost-hub. See docs/operations.md.',
    ],
    sections: {
      Unit: [
        ['Description', 'Outpost hub (control plane: REST API, edge sync, metrics)'],
        ['Wants', 'network-online.target'],
        ['After', 'network-online.target'],
      ],
      Service: service,
      Install: [['WantedBy', 'multi-user.target']],
    },
  });
}

export function hubInstallSteps(o: HubInstallOptions): InstallStep[] {
  const source = installSource(o.packaged, o.execPath, 'outpost hub install');
  const bin = absolute(o.bin);
  const dataDir = absolute(o.dataDir);
  if (o.database) {
    const problem = postgresUrlProblem(o.database);
    if (problem) throw new Error(`--database ${redactUrl(o.database)}: ${problem}`);
  }
  // The renderer goes beside the executable, so the unit names where it was put, not where it came from.
  const helm = o.helm && path.join(path.dirname(bin), HELM_RENDERER);
  const unit = hubUnit({
    ...o,
    bin,
    helm,
    dataDir,
    tlsCert: o.tlsCert && absolute(o.tlsCert),
    tlsKey: o.tlsKey && absolute(o.tlsKey),
    tlsCa: o.tlsCa && absolute(o.tlsCa),
    identityKey: o.identityKey && absolute(o.identityKey),
    blobDir: o.blobDir && absolute(o.blobDir),
  });
  return [
    { kind: 'copy', from: source, to: bin, mode: 0o755 },
    ...(o.helm && helm ? [{ kind: 'copy' as const, from: absolute(o.helm), to: helm, mode: 0o755 }] : []),
    { kind: 'dir', path: dataDir, mode: 0o700 },
    ...(o.database
      ? [
          {
            kind: 'file' as const,
            path: path.join(dataDir, HUB_ENV_FILE),
            mode: 0o600,
            // systemd's EnvironmentFile: double quotes keep the value whole; \ and " escaped inside.
            content: `OUTPOST_DATABASE="${o.database.replace(/[\\"]/g, (c) => `\\${c}`)}"\n`,
            secret: true,
          },
        ]
      : []),
    { kind: 'file', path: path.join(absolute(o.unitDir), HUB_UNIT), mode: 0o644, content: unit },
  ];
}

function nextSteps(o: HubInstallOptions): string {
  const dataDir = absolute(o.dataDir);
  const scheme = o.insecureHttp ? 'http' : 'https';
  const listenHost = /^(.*):\d+$/.exec(o.listen)?.[1].replace(/^\[|\]$/g, '') ?? '';
  // A hub bound to one address is reached there; one bound to all addresses by the host's name.
  const host =
    listenHost === '' || listenHost === '0.0.0.0' || listenHost === '::'
      ? os.hostname()
      : listenHost.includes(':')
        ? `[${listenHost}]`
        : listenHost;
  return [
    'next, as root:',
    '  systemctl daemon-reload && systemctl enable --now outpost-hub',
    '  journalctl -u outpost-hub -f          # the logs (JSON lines)',
    'then, with the admin token the first start writes:',
    `  outpost login --hub ${scheme}://${host}:${listenPort(o.listen)} --token "$(cat ${dataDir}/admin.token)"`,
    '  T=$(outpost token create)             # a join token for edges',
    `  outpost edge install --hub ${scheme}://${host}:${listenPort(o.listen)} --join-token "$T"     # on each edge`,
    ...(o.insecureHttp || o.tlsCert
      ? []
      : [
          `edges must reach the hub by a name its certificate holds (localhost, ${os.hostname()}, the --listen address); add others with --host NAME`,
        ]),
  ].join('\n');
}

/** Runs (or with dryRun describes) the install; returns what to print. */
export function installHub(o: HubInstallOptions): string {
  const steps = hubInstallSteps(o);
  if (o.dryRun)
    return `dry run: nothing was changed. outpost hub install would:\n${steps.map(describeStep).join('')}\n${nextSteps(o)}\n`;
  return `${steps.map(applyStep).join('')}\n${nextSteps(o)}\n`;
}
