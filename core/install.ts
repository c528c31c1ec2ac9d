/**
 * @module The file steps of `outpost hub install` and `outpost edge install`: copy the executable,
 * create the data directory, write the systemd unit. Both roles describe their steps as data, so
 * `--dry-run` can print exactly what a real run would write, and a real run applies the same list.
 * (hub/ and edge/ cannot share code sideways; this is the one piece of I/O they both need.)
 */
import fs from 'node:fs';
import path from 'node:path';

export type InstallStep =
  | { kind: 'copy'; from: string; to: string; mode: number }
  | { kind: 'dir'; path: string; mode: number }
  | { kind: 'file'; path: string; mode: number; content: string; secret?: boolean };

const octal = (mode: number): string => `0${mode.toString(8)}`;

/** Absolute path for a flag value (a unit needs absolute paths; the user may type relative ones). */
export function absolute(p: string): string {
  return path.resolve(p);
}

function samePath(a: string, b: string): boolean {
  try {
    return fs.realpathSync(a) === fs.realpathSync(b);
  } catch {
    return false;
  }
}

/** What a step would do, for `--dry-run`: a file's full content follows its line. */
export function describeStep(s: InstallStep): string {
  switch (s.kind) {
    case 'copy':
      return samePath(s.from, s.to)
        ? `keep ${s.to} (the running executable is already there)\n`
        : `copy ${s.from} -> ${s.to} (mode ${octal(s.mode)})\n`;
    case 'dir':
      return `create directory ${s.path} (mode ${octal(s.mode)})\n`;
    case 'file':
      if (s.secret) return `write ${s.path} (mode ${octal(s.mode)}; not shown: it holds a password)\n`;
      return `write ${s.path} (mode ${octal(s.mode)}):\n${s.content.replace(/^/gm, '    ').replace(/ +$/gm, '')}${s.content.endsWith('\n') ? '' : '\n'}`;
  }
}

function explain(err: unknown, what: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  const hint =
    code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
      ? ': permission denied; run as root (sudo), or choose writable paths with --unit-dir, --bin and --data'
      : code === 'ETXTBSY'
        ? ': the file is busy'
        : '';
  return new Error(`${what}${hint}`, { cause: err });
}

/** Writes through a temporary file and a rename, so nothing ever sees half a file. */
function atomicWrite(target: string, write: (tmp: string) => void, mode: number): void {
  fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o755 });
  const tmp = path.join(path.dirname(target), `.${path.basename(target)}.new-${process.pid}`);
  try {
    write(tmp);
    fs.chmodSync(tmp, mode);
    // A rename replaces a running executable safely (the old inode lives on); writing over it in
    // place would fail with ETXTBSY or corrupt the running copy.
    fs.renameSync(tmp, target);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}

/** Applies one step; returns the line to report. */
export function applyStep(s: InstallStep): string {
  switch (s.kind) {
    case 'copy':
      if (samePath(s.from, s.to)) return `kept ${s.to} (the running executable is already there)\n`;
      try {
        atomicWrite(s.to, (tmp) => fs.copyFileSync(s.from, tmp), s.mode);
      } catch (err) {
        throw explain(err, `cannot copy the executable to ${s.to}`);
      }
      return `copied ${s.from} -> ${s.to}\n`;
    case 'dir': {
      const existed = fs.existsSync(s.path);
      try {
        fs.mkdirSync(s.path, { recursive: true, mode: s.mode });
        // An existing directory gets the mode too: it holds credentials.
        fs.chmodSync(s.path, s.mode);
      } catch (err) {
        throw explain(err, `cannot create the data directory ${s.path}`);
      }
      return `${existed ? 'kept' : 'created'} ${s.path} (mode ${octal(s.mode)})\n`;
    }
    case 'file': {
      const existed = fs.existsSync(s.path);
      try {
        atomicWrite(s.path, (tmp) => fs.writeFileSync(tmp, s.content), s.mode);
      } catch (err) {
        throw explain(err, `cannot write ${s.path}`);
      }
      return `${existed ? 'replaced' : 'wrote'} ${s.path}\n`;
    }
  }
}

/**
 * Where the installed executable comes from. Only the packaged executable can be copied to a
 * host: under node/tsx `process.execPath` is node itself, which cannot run `outpost`.
 */
export function installSource(packaged: boolean, execPath: string, command: string): string {
  if (!packaged) {
    throw new Error(
      `${command} installs the running executable, but this is not the packaged outpost (it runs under ${path.basename(execPath)}): ` +
        `build it with \`npm run build\` and run \`dist/outpost ${command.replace(/^outpost /, '')} ...\` instead`,
    );
  }
  return execPath;
}
