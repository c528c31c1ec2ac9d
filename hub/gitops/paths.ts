/**
 * @module Which files of a commit a GitRepo applies (`spec.paths`): globs with `*` (within one
 * path segment), `**` (any number of segments), `?` and `{a,b}`; a plain path is a file, or a
 * directory standing for every manifest file below it. Only .yaml, .yml and .json files are read.
 * A hand-written matcher, not a dependency: these four forms are all Fleet's paths need.
 */

const MANIFEST_FILE = /\.(ya?ml|json)$/i;

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i];
    if (ch === '*' && glob[i + 1] === '*') {
      // `**/` matches zero or more whole segments; a trailing `**` matches everything below.
      if (glob[i + 2] === '/') {
        re += '(?:[^/]+/)*';
        i += 2;
      } else {
        re += '.*';
        i += 1;
      }
    } else if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else if (ch === '{') {
      const end = glob.indexOf('}', i);
      if (end < 0) re += '\\{';
      else {
        re += `(?:${glob
          .slice(i + 1, end)
          .split(',')
          .map((a) => a.replace(/[.+^$()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*'))
          .join('|')})`;
        i = end;
      }
    } else re += ch.replace(/[.+^$()|[\]\\}]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** A matcher of repository file paths (`a/b.yaml`, no leading `./`) for the GitRepo's `paths`. */
export function pathMatcher(paths: readonly string[]): (file: string) => boolean {
  const tests = paths.map((p) => {
    const clean = p.replace(/^\.\/+/, '').replace(/\/+$/, '');
    if (clean === '' || clean === '.') return () => true;
    if (/[*?{]/.test(clean)) {
      const re = globToRegExp(clean);
      return (f: string) => re.test(f);
    }
    return (f: string) => f === clean || f.startsWith(`${clean}/`);
  });
  return (file) => MANIFEST_FILE.test(file) && tests.some((t) => t(file));
}

/** A Helm chart's own file: charts are another part's (issue #45, part 2), refused here by name. */
export function isChartFile(file: string): boolean {
  return /(^|\/)Chart\.ya?ml$/.test(file);
}
