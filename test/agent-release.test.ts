/**
 * Agent releases against a real hub (TLS, real SQLite, real files): `outpost agent push` uploads
 * a binary and prints the release the hub signed with its release key; an edge enrolling pins the
 * hub's public release key next to its CA; the edge stages a release only when the signature
 * verifies with that key and the bytes hash to the signed digest; anything else is refused before
 * a file is written. The binary passes the hub's malware scan (a real clamd with a signature database
 * made here) before it is signed: a Quarantined binary is never signed, and with clamd down nothing
 * is (fail-closed).
 */
import { sign } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { BlobDigest } from '../core/blobs.js';
import { newReleaseKeyPair, signRelease, verifyRelease, type SignedRelease } from '../core/release.js';
import { TestClamd, TEST_SIGNATURE } from './fixtures/clamd.js';
import { runCli } from './fixtures/cli.js';
import { HubClient } from '../cli/client.js';
import { readEdgeConfig } from '../edge/config.js';
import { enroll } from '../edge/enroll.js';
import { stageRelease } from '../edge/upgrade/release.js';
import { startHub, type Hub } from '../hub/hub.js';
import { BlobFiles } from '../sync/blob-files.js';
import { tempDir } from './helpers.js';

let dir: string;
let hub: Hub;
let env: NodeJS.ProcessEnv;
let binary: string;
let clamd: TestClamd;
const MALWARE = Buffer.from(`#!/bin/sh\n# outpost release test malware ${process.pid} ${Date.now()}\n`);
const cli = (args: string[]) => runCli(args, { env });

beforeAll(async () => {
  dir = tempDir('outpost-release-');
  clamd = new TestClamd(path.join(dir, 'clamd'), MALWARE);
  await clamd.start();
  hub = await startHub({
    dataDir: path.join(dir, 'hub'),
    listen: '127.0.0.1:0',
    scanner: { kind: 'clamd', target: { path: clamd.socket }, label: `clamd:unix:${clamd.socket}` },
  });
  env = { OUTPOST_CONFIG: path.join(dir, 'cli', 'config.json') };
  expect((await cli(['login', '--hub', hub.url, '--token', hub.adminToken])).code).toBe(0);
  // A stand-in executable that answers --version like outpost does.
  binary = path.join(dir, 'outpost-next');
  fs.writeFileSync(binary, '#!/bin/sh\necho "outpost 9.9.9 (commit test, node v24)"\n', { mode: 0o755 });
});

afterAll(async () => {
  await hub?.close();
  await clamd?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('agent releases', () => {
  let release: SignedRelease;
  const hubKey = () => fs.readFileSync(path.join(dir, 'hub', 'release', 'release.pub.pem'), 'utf8');

  it('the hub made a release key at first start: the private key 0600, the public key beside it', () => {
    const st = fs.statSync(path.join(dir, 'hub', 'release', 'release-key.pem'));
    expect(st.mode & 0o777).toBe(0o600);
    expect(hubKey()).toMatch(/BEGIN PUBLIC KEY/);
  });

  it('agent push uploads the binary and prints the release signed by the hub', async () => {
    const r = await cli(['agent', 'push', binary]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    release = (parse(r.stdout) as { spec: { release: SignedRelease } }).spec.release;
    expect(release).toMatchObject({ scope: 'default', version: '9.9.9', size: fs.statSync(binary).size });
    expect(verifyRelease(hubKey(), release).digest).toBe(release.digest);
    const ls = JSON.parse((await cli(['blob', 'ls', '-o', 'json'])).stdout) as {
      digest: string;
      mediaType: string;
      scan?: { state: string; engine: string };
    }[];
    expect(ls.find((b) => b.digest === release.digest)?.mediaType).toBe('application/vnd.outpost.agent');
    // The verdict the release was signed on stays with the blob (issue #42, item 10).
    expect(ls.find((b) => b.digest === release.digest)?.scan).toMatchObject({
      state: 'Clean',
      engine: expect.stringMatching(/^ClamAV \d/),
    });
    expect((await cli(['blob', 'ls'])).stdout).toMatch(/\sSCAN\s[^\n]*\n[^\n]*\sClean\s/);
  });

  it('signs only a binary the malware scanner found Clean, and says which engine did', async () => {
    // The release above went through clamd: asking again shows the verdict the hub signed on.
    const client = new HubClient({ hub: hub.url, token: hub.adminToken, ca: hub.caPem });
    const signed = await client.post<{ scan: unknown }>('/api/v1/projects/default/agent-releases', {
      digest: release.digest,
      version: release.version,
    });
    expect(signed.scan).toMatchObject({ state: 'Clean', engine: expect.stringMatching(/^ClamAV \d/) });

    const evil = path.join(dir, 'outpost-evil');
    fs.writeFileSync(evil, MALWARE, { mode: 0o755 });
    const r = await cli(['agent', 'push', evil, '--release-version', '6.6.6']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `\\(6\\.6\\.6\\) is Quarantined: the malware scanner found ${TEST_SIGNATURE.replace(/\./g, '\\.')}.* in it \\(ClamAV .*it is not signed and cannot be deployed`,
      ),
    );
    expect(r.stdout).toBe('');
  });

  it('a viewer or operator may not sign releases', async () => {
    const t = await cli(['token', 'create', '--api', '--role', 'operator']);
    const op = await runCli(['agent', 'push', binary], { env: { ...env, OUTPOST_TOKEN: t.stdout.trim() } });
    expect(op.code).toBe(1);
    expect(op.stderr).toMatch(/may not/);
  });

  it('an edge pins the release key at enrollment and stages only what verifies', async () => {
    const token = (await cli(['token', 'create'])).stdout.trim();
    const edgeDir = path.join(dir, 'edge');
    await enroll({
      dataDir: edgeDir,
      hub: hub.url,
      joinToken: token,
      name: 'e1',
      driver: 'process',
      inventory: {
        hostname: 'h',
        os: 'linux',
        arch: 'x64',
        cpus: 1,
        memoryBytes: 1,
        runtimes: [],
        driver: 'process',
        agentVersion: 't',
      },
    });
    const config = readEdgeConfig(edgeDir)!;
    expect(config.releaseKey).toBe(hubKey());
    const pinned = { releaseKey: config.releaseKey, project: config.project };

    const files = new BlobFiles(path.join(edgeDir, 'blobs'));
    fs.copyFileSync(binary, files.path(release.digest as BlobDigest));
    const agentDir = path.join(edgeDir, 'agent');

    // Signed by another key: refused, nothing written.
    const forged = signRelease(newReleaseKeyPair().privateKeyPem, release);
    await expect(stageRelease(files, pinned, forged, agentDir)).rejects.toThrow(
      /does not verify with the release key this edge pinned at enrollment: refused/,
    );
    // A release naming other bytes than the blob holds (a database row changed, a transfer replaced): refused.
    await expect(
      stageRelease(files, pinned, { ...release, version: '9.9.10', signature: release.signature }, agentDir),
    ).rejects.toThrow(/does not verify/);
    fs.writeFileSync(files.path(release.digest as BlobDigest), 'echo tampered\n');
    await expect(stageRelease(files, pinned, release, agentDir)).rejects.toThrow(
      /has \d+ bytes, the release says|hashes to/,
    );
    expect(fs.existsSync(agentDir) ? fs.readdirSync(agentDir) : []).toEqual([]);
    // No key pinned (an edge enrolled with an older hub): refused with the fix.
    await expect(stageRelease(files, { ...pinned, releaseKey: undefined }, release, agentDir)).rejects.toThrow(
      /enroll it again/,
    );
    // Signed for project default: an edge of another project refuses it.
    await expect(stageRelease(files, { ...pinned, project: 'other' }, release, agentDir)).rejects.toThrow(
      /release 9\.9\.9 is signed for project default, and this edge is in project other: refused/,
    );
    // Signed over the payload before releases had a scope, with the hub's own key: it says nothing
    // of where it may run, so it is refused, not taken as valid everywhere.
    const { scope: _scope, ...unscoped } = release;
    const hubPrivate = fs.readFileSync(path.join(dir, 'hub', 'release', 'release-key.pem'), 'utf8');
    const oldPayload = JSON.stringify({
      kind: 'outpost-agent',
      version: '9.9.9',
      digest: release.digest,
      size: release.size,
    });
    const oldForm = { ...unscoped, signature: sign(null, Buffer.from(oldPayload), hubPrivate).toString('base64') };
    await expect(stageRelease(files, pinned, oldForm, agentDir)).rejects.toThrow(
      /release 9\.9\.9 \(sha256:[0-9a-f]{64}\) has no scope: .* refused; have an admin for every project push the binary again/,
    );

    // The real bytes: staged as an executable beside the running agent.
    fs.copyFileSync(binary, files.path(release.digest as BlobDigest));
    const staged = await stageRelease(files, pinned, release, agentDir);
    // Named by version and digest: a rebuilt binary of the same version never replaces it.
    expect(staged.binary).toBe(path.join(agentDir, `outpost-9.9.9-${release.digest.slice(7, 19)}`));
    expect(fs.statSync(staged.binary).mode & 0o755).toBe(0o755);
    expect(fs.readFileSync(staged.binary).equals(fs.readFileSync(binary))).toBe(true);
  });

  it('signs nothing while the scanner is down (fail-closed), and again once it is back', async () => {
    await clamd.stop();
    // Other bytes than the release above: a binary the scanner has not seen.
    const next = path.join(dir, 'outpost-9.9.11');
    fs.writeFileSync(next, '#!/bin/sh\necho "outpost 9.9.11 (commit test)"\n', { mode: 0o755 });
    const down = await cli(['agent', 'push', next]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/was not scanned, so it is not signed: clamd at .* is unreachable/);
    await clamd.start();
    expect((await cli(['agent', 'push', next])).code).toBe(0);
  });
});
