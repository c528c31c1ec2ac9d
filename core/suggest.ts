/**
 * @module "Did you mean": the nearest known name to a misspelt one, for errors about unknown
 * fields, kinds and verbs. Optimal string alignment distance (Levenshtein plus adjacent swaps,
 * so `failureTreshold` and `contianers` are one edit from the real names).
 */

/** Edits (insert, delete, substitute, swap two neighbours) turning `a` into `b`. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * The known name closest to `name`, if it is close enough to be a likely typo: a different case
 * only, or at most a third of the name's length in edits (at least 1, at most 3). Ties go to the
 * first in `known`.
 */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const sameCase = known.find((k) => k.toLowerCase() === lower);
  if (sameCase) return sameCase;
  const limit = Math.min(3, Math.max(1, Math.floor(name.length / 3)));
  let best: string | undefined;
  let bestD = limit + 1;
  for (const k of known) {
    const dist = editDistance(lower, k.toLowerCase());
    if (dist < bestD) {
      best = k;
      bestD = dist;
    }
  }
  return best;
}

/** `unknown field failureTreshold; did you mean failureThreshold?` (several: one clause each). */
export function unknownFieldsMessage(keys: readonly string[], known: readonly string[]): string {
  return keys
    .map((k) => {
      const hint = nearestName(k, known);
      return `unknown field ${k}${hint ? `; did you mean ${hint}?` : ''}`;
    })
    .join('; ')
    .concat(keys.some((k) => nearestName(k, known)) ? '' : ` (known fields: ${known.join(', ')})`);
}
