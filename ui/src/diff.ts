/**
 * Line diff for comparing two revisions' YAML: longest common subsequence on the lines between
 * the common prefix and suffix. Manifests are short; past MAX_CELLS the middle is shown as
 * replaced rather than spending seconds in the browser.
 */

export interface DiffLine {
  op: 'same' | 'add' | 'del';
  text: string;
  /** 1-based line numbers in the old and new text. */
  a?: number;
  b?: number;
}

const MAX_CELLS = 4_000_000;

export function diffLines(oldText: string, newText: string): DiffLine[] {
  const a = oldText === '' ? [] : oldText.replace(/\n$/, '').split('\n');
  const b = newText === '' ? [] : newText.replace(/\n$/, '').split('\n');
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const out: DiffLine[] = [];
  for (let i = 0; i < pre; i++) out.push({ op: 'same', text: a[i], a: i + 1, b: i + 1 });
  const am = a.slice(pre, a.length - suf);
  const bm = b.slice(pre, b.length - suf);
  const n = am.length;
  const m = bm.length;
  if (n * m > MAX_CELLS) {
    am.forEach((t, i) => out.push({ op: 'del', text: t, a: pre + i + 1 }));
    bm.forEach((t, j) => out.push({ op: 'add', text: t, b: pre + j + 1 }));
  } else {
    // lcs[i][j] = LCS length of am[i..] and bm[j..], in one flat array. On a tie the removal goes
    // first, so a changed line reads "- old" then "+ new".
    const w = m + 1;
    const lcs = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        lcs[i * w + j] =
          am[i] === bm[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && am[i] === bm[j]) {
        out.push({ op: 'same', text: am[i], a: pre + i + 1, b: pre + j + 1 });
        i++;
        j++;
      } else if (j < m && (i === n || lcs[i * w + j + 1] > lcs[(i + 1) * w + j])) {
        out.push({ op: 'add', text: bm[j], b: pre + j + 1 });
        j++;
      } else {
        out.push({ op: 'del', text: am[i], a: pre + i + 1 });
        i++;
      }
    }
  }
  for (let k = 0; k < suf; k++)
    out.push({ op: 'same', text: a[a.length - suf + k], a: a.length - suf + k + 1, b: b.length - suf + k + 1 });
  return out;
}

export function diffStats(lines: DiffLine[]): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const l of lines) {
    if (l.op === 'add') added++;
    else if (l.op === 'del') removed++;
  }
  return { added, removed };
}

/** Keeps changed lines and `context` lines around them; gaps become `null` (rendered as "⋯"). */
export function withContext(lines: DiffLine[], context = 3): (DiffLine | null)[] {
  const keep = new Array<boolean>(lines.length).fill(false);
  lines.forEach((l, i) => {
    if (l.op === 'same') return;
    for (let k = Math.max(0, i - context); k <= Math.min(lines.length - 1, i + context); k++) keep[k] = true;
  });
  const out: (DiffLine | null)[] = [];
  let gap = false;
  lines.forEach((l, i) => {
    if (keep[i]) {
      out.push(l);
      gap = false;
    } else if (!gap) {
      out.push(null);
      gap = true;
    }
  });
  return out;
}
