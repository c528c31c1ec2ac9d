/**
 * @module A node's artifacts on the edge (docs/clusters.md, "On the site"): each is fetched over
 * the edge's own connection (the blob queue, resumable), checked before use as an agent release is
 * (edge/upgrade/release.ts `checkRelease`: the signature under the release key this edge pinned,
 * for this artifact's name, its scope against the edge's project, then the bytes' digest and
 * size), and installed under the node's `bin/` by its digest: an executable copied (0755), an
 * archive unpacked, by rename from a temporary name, so a path that exists is complete. The blob is
 * dropped once installed (the binaries are what the node runs). The pause image is imported into
 * the node's containerd once it runs.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import * as tar from 'tar';
import type { BlobDigest } from '../../core/blobs.js';
import {
  ARCHIVE_ARTIFACTS,
  ARCHIVE_FILES,
  ARTIFACT_NAMES,
  artifactSignatureKind,
  type ArtifactName,
  type ClusterArtifact,
} from '../../core/cluster.js';
import { sha256File } from '../../sync/blob-files.js';
import type { EdgeBlobStore } from '../blobs/store.js';
import type { EdgeTransfers } from '../blobs/transfers.js';
import { checkRelease, type ReleaseTrust } from '../upgrade/release.js';
import type { NodeLayout, NodeSpec } from './configs.js';

const run = promisify(execFile);

export interface ArtifactDeps {
  blobs: EdgeBlobStore;
  transfers: Pick<EdgeTransfers, 'fetch'>;
  trust: ReleaseTrust;
}

/** Fetches, checks and installs one artifact at `dest` (nothing when it is there). */
export async function stageArtifact(
  d: ArtifactDeps,
  name: ArtifactName,
  a: ClusterArtifact,
  dest: string,
): Promise<void> {
  if (fs.existsSync(dest)) return;
  const digest = a.digest as BlobDigest;
  if (!d.blobs.files.has(digest)) {
    d.blobs.checkRoom(a.size - d.blobs.files.partialSize(digest), `cluster artifact ${name}`);
    await d.transfers.fetch(digest);
  }
  await checkRelease(d.blobs.files, d.trust, a, artifactSignatureKind(name));
  const tmp = `${dest}.tmp`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(dest), { recursive: true, mode: 0o755 });
  const src = d.blobs.files.path(digest);
  if (ARCHIVE_ARTIFACTS.includes(name)) {
    fs.mkdirSync(tmp, { mode: 0o755 });
    await tar.x({ file: src, cwd: tmp, strict: true, preservePaths: false, noChmod: false });
    const lacking = (ARCHIVE_FILES[name] ?? []).filter((f) => !fs.existsSync(path.join(tmp, f)));
    if (lacking.length) {
      fs.rmSync(tmp, { recursive: true, force: true });
      throw new Error(`cluster artifact ${name} lacks ${lacking.join(', ')}`);
    }
  } else {
    await fs.promises.copyFile(src, tmp);
    await fs.promises.chmod(tmp, name === 'pause' ? 0o644 : 0o755);
    // The copy is what runs: hashed again, so a disk error between check and copy cannot slip through.
    if ((await sha256File(tmp)) !== a.digest) {
      fs.rmSync(tmp, { force: true });
      throw new Error(`the staged copy of cluster artifact ${name} does not hash to ${a.digest} (disk error?)`);
    }
  }
  fs.renameSync(tmp, dest);
  await d.blobs.remove(digest);
}

/** What a pass hears of step 1 (follower.ts): before the first fetch and after the last install. */
export interface StageProgress {
  staging(missing: ArtifactName[]): void;
  staged(count: number): void;
}

/** Step 1 of a pass: stages, one after another, each artifact of `o` the node has not installed. */
export async function stageMissing(
  d: ArtifactDeps,
  l: NodeLayout,
  o: Pick<NodeSpec, 'spec'>,
  progress: StageProgress,
): Promise<void> {
  const missing = ARTIFACT_NAMES.filter((n) => !fs.existsSync(l.artifact(n, o.spec.artifacts[n].digest)));
  if (!missing.length) return;
  progress.staging(missing);
  for (const n of missing) await stageArtifact(d, n, o.spec.artifacts[n], l.artifact(n, o.spec.artifacts[n].digest));
  progress.staged(missing.length);
}

/** Imports the pause image into the node's containerd (namespace k8s.io), once: its name is the template's. */
export async function importPauseImage(o: NodeSpec, l: NodeLayout): Promise<void> {
  const ctr = path.join(l.artifact('containerd', o.spec.artifacts.containerd.digest), 'ctr');
  const base = ['--address', path.join(l.run, 'containerd.sock'), '--namespace', 'k8s.io'];
  const { stdout } = await run(ctr, [...base, 'images', 'ls', '-q']);
  if (stdout.split('\n').includes(o.spec.pauseImage)) return;
  await run(ctr, [...base, 'images', 'import', l.artifact('pause', o.spec.artifacts.pause.digest)], {
    timeout: 120_000,
  });
  const after = (await run(ctr, [...base, 'images', 'ls', '-q'])).stdout.split('\n');
  if (!after.includes(o.spec.pauseImage))
    throw new Error(
      `the pause artifact holds ${after.filter(Boolean).join(', ') || 'no image'}, not ${o.spec.pauseImage} (the template's pauseImage)`,
    );
}

/** Removes the installed artifacts the node's version no longer uses (after an upgrade held). */
export function removeUnusedArtifacts(l: NodeLayout, o: Pick<NodeSpec, 'spec'>): void {
  const used = new Set(ARTIFACT_NAMES.map((n) => path.basename(l.artifact(n, o.spec.artifacts[n].digest))));
  for (const e of fs.readdirSync(l.bin))
    if (!used.has(e)) fs.rmSync(path.join(l.bin, e), { recursive: true, force: true });
}
