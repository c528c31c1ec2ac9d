/**
 * @module Fetching a GitRepo's commit with Debian's `git`, and reading its files without a checkout.
 *
 * Bounded and contained (docs/security.md, "Git as a source"):
 * - one bare repository per GitRepo under DATA/gitops/, fetched `--depth 1` with a forced refspec
 *   into `refs/outpost/head` (a force-push simply replaces it), never checked out: files are read
 *   from the commit's tree (`ls-tree`, `cat-file --batch`), so no hook, filter, attribute or
 *   submodule ever runs (`core.hooksPath=/dev/null` as well, and `--no-recurse-submodules`);
 * - a timeout per git command, and a size limit on what a fetch may write (polled while it runs;
 *   the fetch is killed past it) and on the manifest files read;
 * - the hub user's Git configuration is ignored (no system or global config: no credential helper,
 *   no `insteadOf`), only the repository's protocol is allowed (`GIT_ALLOW_PROTOCOL`: no `ext::`,
 *   no `file://`), `GIT_TERMINAL_PROMPT=0`;
 * - credentials reach git only through its environment, never its argv or a config file: an
 *   HTTPS password through `GIT_ASKPASS` (a script that prints an environment variable, written
 *   in a private temp dir), an SSH key as a file of that temp dir (0600) with the GitRepo's
 *   known hosts and `StrictHostKeyChecking=yes`. The temp dir is removed after each command.
 *   Redirects are not followed, so a password never goes to another host.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REDACTED } from '../../core/secrets.js';
import type { GitRepoSpec } from '../../core/resources.js';
import type { GitCredentials } from './credentials.js';

export interface GitLimits {
  /** Per git command (ms). */
  timeoutMs: number;
  /** What the repository's directory may hold after a fetch (bytes). */
  maxRepoBytes: number;
  /** The manifest files read from one commit, together (bytes). */
  maxManifestBytes: number;
}

export const DEFAULT_GIT_LIMITS: GitLimits = {
  // A shallow fetch of a config repository takes seconds; a minute covers a slow link.
  timeoutMs: 60_000,
  maxRepoBytes: 256 * 1024 * 1024,
  maxManifestBytes: 64 * 1024 * 1024,
};

/** A git command that failed: its message is git's (credentials removed), for the GitRepo's status. */
export class GitError extends Error {
  override name = 'GitError';
}

export interface TreeFile {
  path: string;
  sha: string;
  size: number;
  /** A symbolic link or a submodule: not followed. */
  special?: 'symlink' | 'submodule';
}

interface RunOptions {
  cwd?: string;
  input?: string;
  creds?: GitCredentials;
  repoUrl?: string;
  limits: GitLimits;
  /** Watched while the command runs: past maxRepoBytes it is killed. */
  watchDir?: string;
}

const ASKPASS = `#!/bin/sh
case "$1" in
  Username*) printf '%s\\n' "$OUTPOST_GIT_USERNAME" ;;
  *) printf '%s\\n' "$OUTPOST_GIT_PASSWORD" ;;
esac
`;

function dirBytes(dir: string): number {
  let n = 0;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) n += dirBytes(p);
    else
      try {
        n += fs.lstatSync(p).size;
      } catch {
        // removed while counting (git renames its temporary packs)
      }
  }
  return n;
}

function protocolOf(url: string): string {
  const m = /^([a-z]+):\/\//.exec(url);
  return m ? m[1] : 'ssh';
}

/** Removes every credential from a text git wrote (it should hold none; this makes sure). */
function scrub(text: string, creds: GitCredentials | undefined): string {
  let out = text;
  for (const v of [creds?.password, creds?.sshPrivateKey]) if (v && v.length >= 4) out = out.split(v).join(REDACTED);
  return out;
}

/** Runs git with a clean environment; resolves its stdout, rejects a GitError naming what failed. */
async function git(args: string[], o: RunOptions): Promise<Buffer> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'outpost-git-'));
  try {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: tmp,
      LC_ALL: 'C',
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_ALLOW_PROTOCOL: o.repoUrl ? protocolOf(o.repoUrl) : 'https',
      // `ssh` without a key of ours must not read the hub user's keys or agent either.
      SSH_AUTH_SOCK: '',
      GIT_SSH_COMMAND: `ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=${path.join(tmp, 'known_hosts')} -o IdentitiesOnly=yes -o IdentityFile=${path.join(tmp, 'id')}`,
    };
    const c = o.creds;
    if (c?.password !== undefined) {
      const askpass = path.join(tmp, 'askpass');
      fs.writeFileSync(askpass, ASKPASS, { mode: 0o700 });
      env.GIT_ASKPASS = askpass;
      env.OUTPOST_GIT_USERNAME = c.username ?? 'git';
      env.OUTPOST_GIT_PASSWORD = c.password;
    }
    if (c?.sshPrivateKey !== undefined) {
      const key = c.sshPrivateKey.endsWith('\n') ? c.sshPrivateKey : `${c.sshPrivateKey}\n`;
      fs.writeFileSync(path.join(tmp, 'id'), key, { mode: 0o600 });
    }
    fs.writeFileSync(path.join(tmp, 'known_hosts'), c?.knownHosts ?? '', { mode: 0o600 });
    const base = [
      '-c',
      'core.hooksPath=/dev/null',
      '-c',
      'http.followRedirects=false',
      '-c',
      'credential.helper=',
      '-c',
      'protocol.version=2',
    ];
    return await new Promise<Buffer>((resolve, reject) => {
      const child = spawn('git', [...base, ...args], { cwd: o.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      let err = '';
      let killed: string | undefined;
      const kill = (why: string) => {
        killed ??= why;
        child.kill('SIGKILL');
      };
      const timer = setTimeout(
        () => kill(`git ${args[0]} took longer than ${o.limits.timeoutMs / 1000}s`),
        o.limits.timeoutMs,
      );
      const watch = o.watchDir
        ? setInterval(() => {
            const bytes = dirBytes(o.watchDir!);
            if (bytes > o.limits.maxRepoBytes)
              kill(
                `the repository is larger than ${Math.round(o.limits.maxRepoBytes / 1048576)} MiB (the hub's limit)`,
              );
          }, 200)
        : undefined;
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.stderr.on('data', (d: Buffer) => {
        if (err.length < 8192) err += d.toString('utf8');
      });
      child.on('error', (e) => {
        clearTimeout(timer);
        if (watch) clearInterval(watch);
        reject(new GitError(`cannot run git: ${e.message} (install Debian's git package on the hub)`));
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        if (watch) clearInterval(watch);
        if (killed) return reject(new GitError(killed));
        if (code !== 0) {
          const msg = scrub(err, c)
            .split('\n')
            .map((l) => l.trim())
            .filter((l) => l && !l.startsWith('hint:'))
            .join('; ');
          return reject(new GitError(msg || `git ${args[0]} exited with ${code}`));
        }
        resolve(Buffer.concat(out));
      });
      child.stdin.on('error', () => undefined);
      child.stdin.end(o.input ?? '');
    });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** The refspec that brings the GitRepo's ref into refs/outpost/head. */
function refspec(spec: GitRepoSpec): string {
  if (spec.commit) return `+${spec.commit}:refs/outpost/head`;
  if (spec.tag) return `+refs/tags/${spec.tag}:refs/outpost/head`;
  return `+refs/heads/${spec.branch}:refs/outpost/head`;
}

/** What a fetch of the ref finds: git's "couldn't find remote ref" said for people. */
function explain(err: GitError, spec: GitRepoSpec): GitError {
  if (/couldn't find remote ref|not our ref|no such remote ref/i.test(err.message)) {
    const what = spec.commit ? `commit ${spec.commit}` : spec.tag ? `tag ${spec.tag}` : `branch ${spec.branch}`;
    return new GitError(`${what} is not in ${spec.repo}: ${err.message}`);
  }
  return err;
}

/**
 * Fetches the GitRepo's ref into its bare repository `dir` (made on first use) and returns the
 * commit id it points at.
 */
export async function fetchHead(
  dir: string,
  spec: GitRepoSpec,
  creds: GitCredentials | undefined,
  limits: GitLimits = DEFAULT_GIT_LIMITS,
): Promise<string> {
  if (!fs.existsSync(path.join(dir, 'HEAD'))) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    // No template: no sample hooks, nothing but what git needs.
    await git(['init', '--bare', '--quiet', '--template=', dir], { limits });
  }
  try {
    await git(
      [
        'fetch',
        '--quiet',
        '--no-tags',
        '--no-recurse-submodules',
        '--no-write-fetch-head',
        '--depth=1',
        '--force',
        spec.repo,
        refspec(spec),
      ],
      { cwd: dir, creds, repoUrl: spec.repo, limits, watchDir: dir },
    );
  } catch (err) {
    if (err instanceof GitError && /larger than/.test(err.message)) fs.rmSync(dir, { recursive: true, force: true });
    throw err instanceof GitError ? explain(err, spec) : err;
  }
  const bytes = dirBytes(dir);
  if (bytes > limits.maxRepoBytes) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new GitError(
      `the repository is larger than ${Math.round(limits.maxRepoBytes / 1048576)} MiB (the hub's limit)`,
    );
  }
  const sha = (await git(['rev-parse', '--verify', 'refs/outpost/head^{commit}'], { cwd: dir, limits }))
    .toString()
    .trim();
  // Old packs of rewritten history are dropped now and then, not at every fetch.
  if (bytes > limits.maxRepoBytes / 2) await git(['gc', '--prune=now', '--quiet'], { cwd: dir, limits });
  return sha;
}

/** Every file of the commit's tree, with its size (no content read yet). */
export async function listTree(
  dir: string,
  commit: string,
  limits: GitLimits = DEFAULT_GIT_LIMITS,
): Promise<TreeFile[]> {
  const out = (await git(['ls-tree', '-r', '-l', '-z', '--full-tree', commit], { cwd: dir, limits })).toString('utf8');
  const files: TreeFile[] = [];
  for (const entry of out.split('\0')) {
    if (!entry) continue;
    const tab = entry.indexOf('\t');
    const [mode, type, sha, size] = entry.slice(0, tab).split(/\s+/);
    const p = entry.slice(tab + 1);
    if (type === 'commit') files.push({ path: p, sha, size: 0, special: 'submodule' });
    else if (type === 'blob')
      files.push({ path: p, sha, size: Number(size), ...(mode === '120000' ? { special: 'symlink' as const } : {}) });
  }
  return files;
}

/** The contents of blobs, in one `cat-file --batch`, as UTF-8 text by sha. */
export async function readBlobs(
  dir: string,
  shas: string[],
  limits: GitLimits = DEFAULT_GIT_LIMITS,
): Promise<Map<string, string>> {
  const unique = [...new Set(shas)];
  const out = await git(['cat-file', '--batch'], { cwd: dir, limits, input: unique.map((s) => `${s}\n`).join('') });
  const texts = new Map<string, string>();
  let at = 0;
  for (const sha of unique) {
    const nl = out.indexOf(10, at);
    const header = out.subarray(at, nl).toString('utf8').split(' ');
    if (header[0] !== sha || header[1] !== 'blob') throw new GitError(`cannot read blob ${sha}: ${header.join(' ')}`);
    const size = Number(header[2]);
    texts.set(sha, out.subarray(nl + 1, nl + 1 + size).toString('utf8'));
    at = nl + 1 + size + 1;
  }
  return texts;
}
