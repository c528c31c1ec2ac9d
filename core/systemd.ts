/**
 * @module systemd unit files, rendered as text (pure: no file is touched here). `outpost hub
 * install` and `outpost edge install` describe their unit as sections of settings; this module
 * quotes the command line and the values the way systemd parses them, so a data directory or a
 * hub URL can never smuggle in a setting or be expanded by systemd.
 *
 * @example
 * renderUnit({
 *   header: ['Written by outpost hub install'],
 *   sections: { Unit: [['Description', 'Outpost hub']], Service: [['ExecStart', execLine(['/usr/local/bin/outpost', 'hub'])]], Install: [['WantedBy', 'multi-user.target']] },
 * });
 */

/** A setting, or a comment line saying why the next settings are there. */
export type UnitEntry = readonly [key: string, value: string] | { readonly comment: string };

export interface UnitFile {
  /** Comment lines at the top of the file. */
  header: string[];
  sections: { Unit: UnitEntry[]; Service: UnitEntry[]; Install: UnitEntry[] };
}

// Characters systemd reads literally in an unquoted word of a command line.
const PLAIN_WORD = /^[A-Za-z0-9_@+=:,./-]+$/;

/** Refuses what systemd cannot carry on one line (a newline would start a new setting). */
function checkLine(what: string, s: string): void {
  if (/[\n\r\0]/.test(s))
    throw new Error(
      `${what} ${JSON.stringify(s)} contains a line break or NUL: systemd units cannot hold it, choose another value`,
    );
}

/**
 * One argument of ExecStart: `%` (specifiers) and `$` (environment expansion) are escaped, anything
 * beyond a plain word is double-quoted with C-style escapes.
 */
export function quoteArg(arg: string): string {
  checkLine('the argument', arg);
  const escaped = arg.replace(/%/g, '%%').replace(/\$/g, '$$$$');
  if (arg !== '' && PLAIN_WORD.test(arg)) return escaped;
  return `"${escaped.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** An ExecStart value: the program (absolute) and its arguments, each quoted. */
export function execLine(argv: string[]): string {
  if (!argv[0]?.startsWith('/'))
    throw new Error(`ExecStart needs an absolute program path, got ${JSON.stringify(argv[0])}`);
  return argv.map(quoteArg).join(' ');
}

/**
 * A path for settings that take space-separated path lists (ReadWritePaths=, ...). These do not
 * take quotes in every systemd version, so a path with white space is refused with the fix.
 */
export function unitPath(what: string, p: string): string {
  checkLine(what, p);
  if (!p.startsWith('/')) throw new Error(`${what} ${p}: systemd needs an absolute path`);
  if (/\s/.test(p))
    throw new Error(
      `${what} ${JSON.stringify(p)} contains white space, which systemd path settings cannot hold: choose a path without spaces`,
    );
  return p.replace(/%/g, '%%');
}

/** `Environment=` value for one variable, quoted so spaces and quotes survive. */
export function environment(name: string, value: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new Error(`environment variable name ${JSON.stringify(name)} is not valid`);
  checkLine(`the value of ${name}`, value);
  const v = `${name}=${value}`.replace(/%/g, '%%').replace(/\\/g, '\\\\').replace(/"/g, '\\"');
  return `"${v}"`;
}

/** Free text (Description=): one line, `%` escaped. */
export function unitText(s: string): string {
  checkLine('the text', s);
  return s.replace(/%/g, '%%');
}

export function renderUnit(u: UnitFile): string {
  const lines: string[] = u.header.map((h) => `# ${h}`.trimEnd());
  for (const [name, entries] of Object.entries(u.sections) as [string, UnitEntry[]][]) {
    if (lines.length > 0) lines.push('');
    lines.push(`[${name}]`);
    for (const e of entries) {
      if ('comment' in e) lines.push(`# ${e.comment}`);
      else {
        checkLine(`the value of ${e[0]}=`, e[1]);
        lines.push(`${e[0]}=${e[1]}`);
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The settings of a unit as key -> values (repeated keys keep every value), for tests and checks. */
export function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const out: Record<string, Record<string, string[]>> = {};
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const s = /^\[(.+)\]$/.exec(line);
    if (s) {
      section = s[1];
      out[section] ??= {};
      continue;
    }
    const i = line.indexOf('=');
    if (i <= 0 || !section) throw new Error(`not a unit file line: ${raw}`);
    ((out[section][line.slice(0, i)] ??= []) as string[]).push(line.slice(i + 1));
  }
  return out;
}

/**
 * Splits an ExecStart value back into argv, undoing `quoteArg` (double quotes, backslash escapes,
 * `%%` and `$$`). Enough for the units we write; not a full systemd parser.
 */
export function splitExecLine(line: string): string[] {
  const argv: string[] = [];
  let i = 0;
  while (i < line.length) {
    while (line[i] === ' ') i++;
    if (i >= line.length) break;
    let word = '';
    if (line[i] === '"') {
      i++;
      while (i < line.length && line[i] !== '"') {
        if (line[i] === '\\' && i + 1 < line.length) i++;
        word += line[i++];
      }
      i++;
    } else {
      while (i < line.length && line[i] !== ' ') word += line[i++];
    }
    argv.push(word.replace(/%%/g, '%').replace(/\$\$/g, '$'));
  }
  return argv;
}
