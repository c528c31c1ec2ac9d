/** @module `outpost blob push|get|ls|rm`: the hub's content-addressed blob store (docs/bytes.md). */
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Option, type Command } from 'commander';
import { isDigest, isMediaType, type BlobInfo } from '../core/blobs.js';
import { openSession, type CliDeps } from './context.js';
import { CliError, UsageError } from './errors.js';
import { formatTable, line, toJson, toYaml } from './output.js';

function digestArg(s: string): string {
  if (!isDigest(s))
    throw new UsageError(`"${s}" is not a blob digest: use sha256: and 64 hex digits (see \`outpost blob ls\`)`);
  return s;
}

async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  await pipeline(fs.createReadStream(file, { highWaterMark: 1024 * 1024 }), h);
  return `sha256:${h.digest('hex')}`;
}

export function formatSize(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** Uploads a file; shared with `outpost agent push`. */
export async function pushBlob(
  s: Awaited<ReturnType<typeof openSession>>,
  file: string,
  mediaType: string,
): Promise<BlobInfo> {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    throw new CliError(`cannot read ${file}: check the path`);
  }
  if (!st.isFile()) throw new CliError(`${file} is not a regular file`);
  // Hashed first: the hub answers at once when it already holds these bytes (nothing is sent).
  const digest = await sha256File(file);
  const r = await s.client.upload<BlobInfo>(`/api/v1/projects/${s.project}/blobs`, file, {
    'content-type': mediaType,
    'x-outpost-digest': digest,
  });
  if (!r || !isDigest(r.digest))
    throw new CliError('the hub answered without a digest: is it an Outpost hub of a compatible version?');
  return r;
}

export function registerBlobCommands(program: Command, deps: CliDeps): void {
  const blob = program.command('blob').description("the hub's blob store: files moved to and from edges, by digest");
  blob
    .command('push')
    .description('upload a file to the hub; prints its digest (sha256:...) on stdout')
    .argument('<file>', 'the file')
    .option('--media-type <type>', 'what the bytes are', 'application/octet-stream')
    .action(async (file: string, o: { mediaType: string }, cmd: Command) => {
      if (!isMediaType(o.mediaType))
        throw new UsageError(`--media-type ${o.mediaType}: use type/subtype, e.g. application/gzip`);
      const s = await openSession(cmd, deps);
      const r = await pushBlob(s, file, o.mediaType);
      line(s.out.out, r.digest);
      if (s.out.err.isTTY) line(s.out.err, `${formatSize(r.size)} in project ${s.project}`);
    });
  blob
    .command('get')
    .description('download a blob')
    .argument('<digest>', 'sha256:...', digestArg)
    .option('-o, --output <file>', 'write to this file (default: stdout)')
    .action(async (digest: string, o: { output?: string }, cmd: Command) => {
      const s = await openSession(cmd, deps);
      if (!o.output && s.out.out.isTTY)
        throw new UsageError('refusing to write a blob to a terminal: pass -o FILE or redirect stdout');
      const tmp = o.output ? `${o.output}.part` : undefined;
      const out = tmp ? fs.createWriteStream(tmp) : (deps.stdout as unknown as NodeJS.WritableStream);
      try {
        await s.client.download(`/api/v1/projects/${s.project}/blobs/${digest}`, out);
      } catch (err) {
        if (tmp) fs.rmSync(tmp, { force: true });
        throw err;
      }
      if (tmp && o.output) fs.renameSync(tmp, o.output);
    });
  blob
    .command('ls')
    .description('list the blobs of the project')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'yaml', 'json']).default('table'))
    .action(async (o: { output: string }, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const r = await s.client.get<{ items: BlobInfo[] }>(`/api/v1/projects/${s.project}/blobs`);
      const items = r?.items ?? [];
      if (o.output === 'json') return void s.out.out.write(toJson(items));
      if (o.output === 'yaml') return void s.out.out.write(toYaml(items));
      if (items.length === 0) return line(s.out.err, `no blobs in project ${s.project}`);
      s.out.out.write(
        formatTable(
          ['DIGEST', 'SIZE', 'MEDIA TYPE', 'UPLOADED BY', 'AGE', 'SCAN', 'REFERENCES'],
          items.map((b) => [
            b.digest,
            formatSize(b.size),
            b.mediaType,
            b.uploadedBy,
            age(deps.now() - Date.parse(b.createdAt)),
            // Agent binaries are scanned before their release is signed (docs/operations.md).
            b.scan ? `${b.scan.state}${b.scan.signature ? `(${b.scan.signature})` : ''}` : '-',
            b.references.length > 0 ? b.references.join(',') : '<none>',
          ]),
        ),
      );
    });
  blob
    .command('rm')
    .description('remove a blob (refused while an object refers to it)')
    .argument('<digest>', 'sha256:...', digestArg)
    .action(async (digest: string, _o: unknown, cmd: Command) => {
      const s = await openSession(cmd, deps);
      await s.client.delete(`/api/v1/projects/${s.project}/blobs/${digest}`);
      line(s.out.err, `blob ${digest} removed`);
    });
}

function age(ms: number): string {
  const sec = Math.max(0, Math.floor(ms / 1000));
  if (sec < 120) return `${sec}s`;
  if (sec < 7200) return `${Math.floor(sec / 60)}m`;
  if (sec < 172800) return `${Math.floor(sec / 3600)}h`;
  return `${Math.floor(sec / 86400)}d`;
}
