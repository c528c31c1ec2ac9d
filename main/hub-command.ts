/**
 * @module `outpost hub` and its verbs `migrate`, `identity-key`, `backup`, `restore` and `install`: their flags,
 * checked here (a bad combination is a UsageError, exit code 2), and the hub code each one runs,
 * loaded on demand so `outpost --version` and the CLI start without it. main.ts adds the command.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command, Option } from 'commander';
import { UsageError } from '../cli/index.js';
import { byteSizeOption, durationOption, positiveIntegerOption } from './flags.js';
import { untilSignal } from './signals.js';
import { applyV8Flags } from './v8-flags.js';
import { cliLogging } from '../core/logger.js';

/** The flags of `outpost hub` that its verbs read too (`install` writes them into the unit). */
interface HubFlags {
  data: string;
  listen: string;
  insecureHttp?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  host?: string[];
  requireApproval?: boolean;
  database?: string;
  identityKey?: string;
  advertiseUrl?: string;
  oidcIssuer?: string;
  oidcClientId?: string;
  oidcClientSecretFile?: string;
  oidcGroupsClaim?: string;
  oidcScopes?: string;
  oidcRefreshInterval?: number;
  oidcSessionTtl?: number;
}

/** The identity provider of `--oidc-*` (docs/security.md, "People"); undefined without --oidc-issuer. */
function oidcOf(g: HubFlags) {
  const any = g.oidcClientId || g.oidcClientSecretFile || g.oidcGroupsClaim || g.oidcScopes;
  if (!g.oidcIssuer) {
    if (any) throw new UsageError('--oidc-client-id and the other --oidc-* flags need --oidc-issuer URL');
    return undefined;
  }
  if (!g.oidcClientId || !g.oidcClientSecretFile)
    throw new UsageError(
      '--oidc-issuer needs --oidc-client-id ID and --oidc-client-secret-file FILE (the client registered for this hub at the provider)',
    );
  return {
    issuer: g.oidcIssuer,
    clientId: g.oidcClientId,
    clientSecretFile: g.oidcClientSecretFile,
    ...(g.oidcGroupsClaim ? { groupsClaim: g.oidcGroupsClaim } : {}),
    ...(g.oidcScopes ? { scopes: g.oidcScopes } : {}),
    ...(g.oidcRefreshInterval !== undefined ? { refreshMs: g.oidcRefreshInterval } : {}),
    ...(g.oidcSessionTtl !== undefined ? { sessionTtlMs: g.oidcSessionTtl } : {}),
  };
}

/** Adds `outpost hub` (the hub process) and its verbs to `program`. */
export function registerHubCommand(program: Command): void {
  const hub = program
    .command('hub')
    .description('run the hub (control plane): REST API, sync endpoint for edges, metrics')
    .option('--data <dir>', 'data directory (SQLite, TLS files, admin token)', '/var/lib/outpost-hub')
    .addOption(
      new Option(
        '--database <url>',
        "keep the hub's tables in this PostgreSQL database (postgres://USER:PASSWORD@HOST:PORT/DB) instead of SQLite in --data; the edges' documents stay in --data",
      ).env('OUTPOST_DATABASE'),
    )
    .addOption(
      new Option(
        '--identity-key <file>',
        'with --database: the key file (outpost hub identity-key > FILE) every replica is given; the hub identity (CA, secrets key, release key) is then kept sealed in the database and shared',
      ).env('OUTPOST_IDENTITY_KEY_FILE'),
    )
    .option('--listen <host:port>', 'address to listen on', '0.0.0.0:7443')
    .addOption(
      new Option(
        '--advertise-url <url>',
        'with --database: the URL the other hub replicas reach this one at, for the tunnel requests they forward (default: the hub URL when --listen names one address, else https://HOSTNAME:PORT)',
      ).env('OUTPOST_ADVERTISE_URL'),
    )
    .option('--insecure-http', 'serve plain HTTP (local development only)')
    .option('--tls-cert <file>', 'serve this certificate chain instead of the hub-made one')
    .option('--tls-key <file>', 'key of --tls-cert')
    .option('--tls-ca <file>', 'root CA of --tls-cert (pinned by tokens)')
    .option('--host <name...>', 'extra DNS names or IPs for the hub-made certificate')
    .option('--require-approval', 'new edges wait as Pending until `outpost edge approve NAME`')
    .option('--oidc-issuer <url>', 'sign people in with this OpenID Connect provider (docs/security.md, "People")')
    .option('--oidc-client-id <id>', "the hub's client id at the provider")
    .option('--oidc-client-secret-file <file>', 'a file whose first line is the client secret')
    .option('--oidc-groups-claim <claim>', "the ID token claim listing the person's groups (default groups)")
    .option('--oidc-scopes <scopes>', 'scopes asked for at sign-in (default "openid email profile groups")')
    .option(
      '--oidc-refresh-interval <duration>',
      'how often sessions are refreshed with the provider: a change there takes effect within it (default 5m)',
      durationOption,
    )
    .option('--oidc-session-ttl <duration>', 'the longest a session lasts (default 12h)', durationOption)
    .option('--blob-quota <size>', 'bytes of blobs each project may hold, e.g. 20GiB', byteSizeOption)
    .option(
      '--blob-idle-timeout <duration>',
      'cut a blob upload or download when no byte moved for this long, e.g. 10m for a link that stalls (default 2m)',
      durationOption,
    )
    .addOption(
      new Option(
        '--blob-dir <dir>',
        'where blob files live (default DATA/blobs); hub replicas share one (a shared filesystem), since their index is in the database',
      ).env('OUTPOST_BLOB_DIR'),
    )
    .option(
      '--data-sink-s3-bucket <bucket>',
      "forward the files edges export to this S3 bucket, with the hub's AWS credentials",
    )
    .option('--data-sink-s3-endpoint <url>', 'an S3-compatible endpoint instead of AWS (MinIO, Ceph...)')
    .option('--data-sink-s3-region <region>', 'the bucket region', 'us-east-1')
    .option('--data-sink-s3-prefix <prefix>', 'prepended to every object key, e.g. outpost/')
    .option(
      '--scanner <scanner>',
      'malware scanner for catalog packages: clamd:unix:PATH, clamd:tcp:HOST:PORT, or none (logged opt-out); without it packages stay Pending',
    )
    .option(
      '--helm <path>',
      'the Helm chart renderer, outpost-helm (build/helm/build.sh); default: outpost-helm beside this executable, if there; without it Helm charts are refused',
    )
    .option(
      '--first-request-timeout <duration>',
      'close a connection that sent no request this long after it connected (default 20s)',
      durationOption,
    )
    .option(
      '--replica-lease <duration>',
      "with --database: how long a replica's hold on its edges lasts unrenewed (renewed three times in it); a replica that died is taken for dead this long after, its edges' connections end. Every replica the same (default 15s, at least 3s)",
      durationOption,
    )
    .option(
      '--max-connections-per-address <n>',
      "connections one source address may hold, edges' sync connections not counted",
      positiveIntegerOption,
      1024,
    )
    .action(
      async (
        o: {
          maxConnectionsPerAddress: number;
          firstRequestTimeout?: number;
          replicaLease?: number;
          blobQuota?: number;
          blobIdleTimeout?: number;
          blobDir?: string;
          dataSinkS3Bucket?: string;
          dataSinkS3Endpoint?: string;
          dataSinkS3Region: string;
          dataSinkS3Prefix?: string;
          scanner?: string;
          helm?: string;
        } & HubFlags,
      ) => {
        if (!!o.tlsCert !== !!o.tlsKey) throw new UsageError('--tls-cert and --tls-key go together');
        if (o.replicaLease !== undefined && !o.database)
          throw new UsageError(
            '--replica-lease needs --database: only hub replicas sharing a PostgreSQL hold leases on their edges',
          );
        if (o.advertiseUrl !== undefined && !o.database)
          throw new UsageError(
            '--advertise-url needs --database: only hub replicas sharing a PostgreSQL forward requests to each other',
          );
        applyV8Flags();
        // Loaded on demand: `outpost --version` and the CLI start faster without the hub and edge code.
        const { startHub } = await import('../hub/hub.js');
        const { parseScanner } = await import('../hub/scan/clamd.js');
        const { parseAdvertiseUrl } = await import('../hub/state/replicas.js');
        const { MIN_LEASE_TTL_MS } = await import('../hub/state/leases.js');
        if (o.replicaLease !== undefined && o.replicaLease < MIN_LEASE_TTL_MS)
          throw new UsageError(
            `--replica-lease ${o.replicaLease / 1000}s: give at least ${MIN_LEASE_TTL_MS / 1000}s (three renewals, each a database round trip, must fit in it)`,
          );
        let advertiseUrl: string | undefined;
        try {
          advertiseUrl = o.advertiseUrl === undefined ? undefined : parseAdvertiseUrl(o.advertiseUrl);
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
        const oidc = oidcOf(o);
        let scanner;
        try {
          scanner = o.scanner === undefined ? undefined : parseScanner(o.scanner);
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
        if (!o.dataSinkS3Bucket && (o.dataSinkS3Endpoint || o.dataSinkS3Prefix))
          throw new UsageError('--data-sink-s3-endpoint and --data-sink-s3-prefix need --data-sink-s3-bucket');
        const helm = o.helm ?? besideExecutable('outpost-helm');
        if (o.helm !== undefined && !fs.existsSync(o.helm))
          throw new UsageError(`--helm ${o.helm}: no such file (build it with bash build/helm/build.sh)`);
        const h = await startHub({
          ...(oidc ? { oidc } : {}),
          ...(scanner ? { scanner } : {}),
          ...(helm ? { helm } : {}),
          ...(o.dataSinkS3Bucket
            ? {
                dataSinkS3: {
                  bucket: o.dataSinkS3Bucket,
                  region: o.dataSinkS3Region,
                  ...(o.dataSinkS3Endpoint ? { endpoint: o.dataSinkS3Endpoint } : {}),
                  ...(o.dataSinkS3Prefix ? { prefix: o.dataSinkS3Prefix } : {}),
                },
              }
            : {}),
          dataDir: o.data,
          listen: o.listen,
          insecureHttp: o.insecureHttp,
          tlsCert: o.tlsCert,
          tlsKey: o.tlsKey,
          tlsCa: o.tlsCa,
          hosts: o.host,
          requireApproval: o.requireApproval,
          maxConnectionsPerAddress: o.maxConnectionsPerAddress,
          ...(o.firstRequestTimeout !== undefined ? { firstRequestTimeoutMs: o.firstRequestTimeout } : {}),
          ...(o.database ? { database: o.database } : {}),
          ...(o.identityKey ? { identityKeyFile: o.identityKey } : {}),
          ...(advertiseUrl ? { advertiseUrl } : {}),
          ...(o.replicaLease !== undefined ? { replicaLeaseMs: o.replicaLease } : {}),
          ...(o.blobQuota !== undefined ? { blobQuotaBytes: o.blobQuota } : {}),
          ...(o.blobIdleTimeout !== undefined ? { blobIdleTimeoutMs: o.blobIdleTimeout } : {}),
          ...(o.blobDir ? { blobDir: o.blobDir } : {}),
        });
        process.stderr.write(`outpost hub listening on ${h.url}\n`);
        // Under systemd stderr goes to the journal, which keeps it and is readable by more users than
        // the data directory: print the token itself only to a person at a terminal.
        if (h.adminTokenCreated)
          process.stderr.write(
            process.stderr.isTTY
              ? `admin token (also in ${o.data}/admin.token, shown once):\n${h.adminToken}\n`
              : `admin token created in ${o.data}/admin.token (mode 0600)\n`,
          );
        await untilSignal((sig) => h.close(`${sig}: an operator stop or restart`));
      },
    );
  hub
    .command('migrate')
    .description(
      "move a stopped SQLite hub's tables (objects, edges, tokens, credentials, ...) into an empty PostgreSQL database; then run outpost hub --data DIR --database URL",
    )
    .action(async (_o: unknown, cmd: Command) => {
      // Its messages are its output: log lines only for warnings, on stderr.
      cliLogging();
      // --data, --database and --identity-key belong to `outpost hub`; commander parses them wherever they appear.
      const { data, database, identityKey, tlsCert } = cmd.optsWithGlobals() as {
        data: string;
        database?: string;
        identityKey?: string;
        tlsCert?: string;
      };
      if (!database)
        throw new Error(
          'outpost hub migrate needs the target: --database postgres://USER:PASSWORD@HOST:PORT/DB (or OUTPOST_DATABASE)',
        );
      const { openPostgres } = await import('../hub/state/pg/open.js');
      const { redactUrl } = await import('../hub/state/pg/statements.js');
      const { migrateSqliteHub, sqliteHubFile } = await import('../hub/state/pg/from-sqlite.js');
      const { loadIdentityKey } = await import('../hub/identity/key.js');
      const { identityAdvice, shareHubIdentity } = await import('../hub/identity/index.js');
      const { postgresHubState } = await import('../hub/state/index.js');
      const { writeDatabaseMarker } = await import('../hub/database-marker.js');
      sqliteHubFile(data); // before touching the database
      const key = identityKey ? loadIdentityKey(identityKey) : undefined;
      const pg = await openPostgres(database);
      try {
        const r = migrateSqliteHub(data, pg);
        // From now on the directory's hub.db is not the hub's state: `hub backup` must know.
        writeDatabaseMarker(data, database);
        for (const t of r.tables) if (t.rows > 0) process.stdout.write(`${t.table}: ${t.rows} rows\n`);
        // The old hub's CA, secrets key and release key, so its edges trust every replica.
        const id = key
          ? await shareHubIdentity(postgresHubState(pg).identity, { dataDir: data, key, ownCa: !tlsCert, make: false })
          : undefined;
        process.stdout.write(
          `moved ${r.rows} rows of ${data}/hub.db into ${redactUrl(database)}; start the hub with: outpost hub --data ${data} --database URL (or OUTPOST_DATABASE)${key ? ' --identity-key FILE' : ''}; edges reconnect with their credentials\n${identityAdvice(data, id)}\n`,
        );
      } finally {
        await pg.close();
      }
    });

  hub
    .command('identity-key')
    .description(
      'print a new identity key (32 random bytes, base64url) for --identity-key: save it to a file (mode 0600) and give the same file to every hub replica',
    )
    .action(async () => {
      const { newIdentityKey } = await import('../hub/identity/key.js');
      process.stdout.write(newIdentityKey());
    });

  hub
    .command('backup')
    .description(
      'take a consistent online backup of a hub (it may be running): its data directory, and with --database (needed for a hub on PostgreSQL) a pg_dump of its tables',
    )
    .requiredOption('--to <file>', 'the backup file to create')
    .action(async (o: { to: string }, cmd: Command) => {
      // Its messages are its output: log lines only for warnings, on stderr.
      cliLogging();
      // --data and --database belong to `outpost hub`; commander parses them wherever they appear.
      const { data, database } = cmd.optsWithGlobals() as { data: string; database?: string };
      const { backupHub } = await import('../hub/backup.js');
      const { redactUrl } = await import('../hub/state/pg/statements.js');
      const r = await backupHub(data, o.to, database ? { database } : {});
      const took = `in ${(r.ms / 1000).toFixed(2)} s`;
      process.stdout.write(
        r.tables === 'postgres'
          ? `backup written to ${o.to} (${r.bytes} bytes, mode 0600) ${took}: the hub's tables in ${redactUrl(database!)} (pg_dump of schema ${r.schema}) and ${data}/hub.db (the edges' documents); restore: outpost hub restore --data DIR --database URL --from ${o.to}, into an empty database\n`
          : `backup written to ${o.to} (${r.bytes} bytes, mode 0600) ${took}; restore: outpost hub restore --data DIR --from ${o.to}, with the tls/ folder and secrets.key copied into DIR\n`,
      );
    });

  hub
    .command('restore')
    .description(
      "put a backup of outpost hub backup into a data directory without a hub.db (the hub stopped); a PostgreSQL hub's backup also needs --database, an empty database",
    )
    .requiredOption('--from <file>', 'the backup file')
    .action(async (o: { from: string }, cmd: Command) => {
      // Its messages are its output: log lines only for warnings, on stderr.
      cliLogging();
      const { data, database } = cmd.optsWithGlobals() as { data: string; database?: string };
      const { restoreHub } = await import('../hub/restore.js');
      const { redactUrl } = await import('../hub/state/pg/statements.js');
      const r = await restoreHub(data, o.from, database ? { database } : {});
      const start = `copy the hub's tls/ folder and secrets.key (and admin.token, if used) into ${data}, then start it: outpost hub --data ${data}`;
      process.stdout.write(
        r.tables === 'postgres'
          ? `restored the backup of ${r.manifest!.createdAt} in ${(r.ms / 1000).toFixed(2)} s: the hub's tables into ${redactUrl(database!)} (schema ${r.manifest!.schema}), the edges' documents into ${data}/hub.db; ${start} --database URL\n`
          : `restored ${o.from} as ${data}/hub.db in ${(r.ms / 1000).toFixed(2)} s; ${start}\n`,
      );
    });

  hub
    .command('install')
    .description(
      'install this executable as the systemd service outpost-hub (copy, data directory, unit); --dry-run shows what it would write',
    )
    .option('--dry-run', 'print every step and file, change nothing')
    .option('--unit-dir <dir>', 'where to write outpost-hub.service', '/etc/systemd/system')
    .option('--bin <file>', 'where to install the executable', '/usr/local/bin/outpost')
    .action(async (o: { dryRun?: boolean; unitDir: string; bin: string }, cmd: Command) => {
      // --data, --listen and the TLS flags belong to `outpost hub`; commander gives them to it.
      const g = cmd.optsWithGlobals() as HubFlags & { blobDir?: string; helm?: string };
      if (!!g.tlsCert !== !!g.tlsKey) throw new UsageError('--tls-cert and --tls-key go together');
      if ((g.identityKey || g.advertiseUrl) && !g.database)
        throw new UsageError('--identity-key and --advertise-url are for hub replicas: give --database too');
      oidcOf(g);
      if (g.helm !== undefined && !fs.existsSync(g.helm))
        throw new UsageError(`--helm ${g.helm}: no such file (build it with bash build/helm/build.sh)`);
      // The chart renderer shipped beside this executable is installed beside the installed one.
      const helm = g.helm ?? besideExecutable('outpost-helm');
      const [{ installHub }, { isPackaged }] = await Promise.all([
        import('../hub/install.js'),
        import('../sync/native.js'),
      ]);
      process.stdout.write(
        installHub({
          ...g,
          dataDir: g.data,
          hosts: g.host,
          ...(helm ? { helm } : {}),
          unitDir: o.unitDir,
          bin: o.bin,
          dryRun: o.dryRun,
          packaged: isPackaged(),
          execPath: process.execPath,
        }),
      );
    });
}

/** `name` in the directory of the running executable, if it is there (the renderer shipped beside outpost). */
function besideExecutable(name: string): string | undefined {
  const p = path.join(path.dirname(process.execPath), name);
  return fs.existsSync(p) ? p : undefined;
}
