/**
 * @module `outpost image push|ls`: the hub's image cache (docs/drivers.md, "The hub's image cache").
 * `push` reads an OCI archive (`podman save --format oci-archive -o app.tar IMAGE`, or
 * `skopeo copy ... oci-archive:app.tar`), uploads its config and layers as blobs (deduplicated by
 * digest: a layer the hub holds is not sent again), then its manifest, and tags it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Option, type Command } from 'commander';
import * as tar from 'tar';
import { isDigest } from '../core/blobs.js';
import { formatSize, pushBlob } from './cmd-blob.js';
import { openSession, type CliDeps } from './context.js';
import { CliError, UsageError } from './errors.js';
import { formatTable, line, toJson, toYaml } from './output.js';

interface ImageTag {
  repository: string;
  tag: string;
  digest: string;
  mediaType: string;
  updatedAt: string;
}

const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

function repoTagArg(s: string): { repository: string; tag: string } {
  const colon = s.lastIndexOf(':');
  if (colon <= 0 || s.includes('@') || colon < s.lastIndexOf('/'))
    throw new UsageError(`"${s}": name the image REPOSITORY:TAG, e.g. team/app:v1`);
  return { repository: s.slice(0, colon), tag: s.slice(colon + 1) };
}

/** The manifest of a one-image OCI layout directory, and the files of the blobs it names. */
function readLayout(dir: string): { manifest: string; mediaType: string; blobs: string[] } {
  const blobFile = (d: unknown): string => {
    if (typeof d !== 'string' || !isDigest(d))
      throw new CliError(`the archive names a blob "${String(d)}" that is not a sha256 digest`);
    const f = path.join(dir, 'blobs', 'sha256', d.slice('sha256:'.length));
    if (!fs.existsSync(f)) throw new CliError(`the archive lacks blob ${d}: is it a complete oci-archive?`);
    return f;
  };
  let index: { manifests?: { digest?: unknown; mediaType?: unknown }[] };
  try {
    index = JSON.parse(fs.readFileSync(path.join(dir, 'index.json'), 'utf8')) as typeof index;
  } catch {
    throw new CliError('the archive has no index.json: make it with podman save --format oci-archive -o FILE IMAGE');
  }
  const ms = index.manifests ?? [];
  if (ms.length !== 1)
    throw new CliError(`the archive holds ${ms.length} manifests: push an archive of exactly one image`);
  if (ms[0].mediaType === OCI_INDEX)
    throw new CliError('the archive holds an image index (several platforms): save one platform of the image');
  const manifest = blobFile(ms[0].digest);
  const m = JSON.parse(fs.readFileSync(manifest, 'utf8')) as {
    config?: { digest?: unknown };
    layers?: { digest?: unknown }[];
  };
  if (!m.config || !Array.isArray(m.layers)) throw new CliError("the archive's manifest is not an image manifest");
  return {
    manifest,
    mediaType: typeof ms[0].mediaType === 'string' ? ms[0].mediaType : OCI_MANIFEST,
    blobs: [blobFile(m.config.digest), ...m.layers.map((l) => blobFile(l.digest))],
  };
}

export function registerImageCommands(program: Command, deps: CliDeps): void {
  const image = program.command('image').description("the hub's image cache: images edges pull from the hub");
  image
    .command('push')
    .description('upload an OCI archive (podman save --format oci-archive) to the hub as REPOSITORY:TAG')
    .argument('<archive>', 'the oci-archive file')
    .argument('<name>', 'REPOSITORY:TAG, e.g. team/app:v1', repoTagArg)
    .action(async (archive: string, name: { repository: string; tag: string }, _o: unknown, cmd: Command) => {
      if (!fs.existsSync(archive)) throw new CliError(`cannot read ${archive}: check the path`);
      const s = await openSession(cmd, deps);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-image-'));
      try {
        await tar.x({ file: archive, cwd: dir, strict: true });
        const layout = readLayout(dir);
        let bytes = 0;
        for (const f of layout.blobs) bytes += (await pushBlob(s, f, 'application/octet-stream')).size;
        const m = await pushBlob(s, layout.manifest, layout.mediaType);
        const t = await s.client.request<ImageTag>('PUT', `/api/v1/projects/${s.project}/images`, {
          body: { repository: name.repository, tag: name.tag, manifest: m.digest },
        });
        line(s.out.out, `${t.repository}:${t.tag}@${t.digest}`);
        if (s.out.err.isTTY)
          line(s.out.err, `${layout.blobs.length} blobs, ${formatSize(bytes)} in project ${s.project}`);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  image
    .command('ls')
    .description('list the images of the project')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'yaml', 'json']).default('table'))
    .action(async (o: { output: string }, cmd: Command) => {
      const s = await openSession(cmd, deps);
      const r = await s.client.get<{ items: ImageTag[] }>(`/api/v1/projects/${s.project}/images`);
      const items = r?.items ?? [];
      if (o.output === 'json') return void s.out.out.write(toJson(items));
      if (o.output === 'yaml') return void s.out.out.write(toYaml(items));
      if (items.length === 0) return line(s.out.err, `no images in project ${s.project}`);
      s.out.out.write(
        formatTable(
          ['REPOSITORY', 'TAG', 'DIGEST', 'UPDATED'],
          items.map((t) => [t.repository, t.tag, t.digest, t.updatedAt]),
        ),
      );
    });
}
