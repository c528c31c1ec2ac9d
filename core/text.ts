/**
 * @module Text from the edges shown to a person: a file name a workload exported, a reason, an
 * inventory field. A terminal interprets control characters (ESC [2J clears the screen, a newline
 * forges a table row) and a page hides them; shown through `visibleText` they read as escapes
 * instead: `\x1b`, `\n`, `\u202e`. The CLI applies it to every table cell and describe value
 * (cli/output.ts, cli/describe.ts), the UI to every text it renders (ui/src/visible.ts). A
 * backslash stays as it is, so the function can run twice without harm.
 *
 * @example
 * visibleText('a\u001b[2J\nb') // 'a\\x1b[2J\\nb'
 */

/**
 * C0 controls, DEL, C1 controls (0x9b is a CSI to some terminals), line and paragraph
 * separators, and the bidirectional embeddings, overrides and isolates (text that reads in
 * another order than it is stored).
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const TEST = new RegExp(CONTROL.source);

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escape(c: string): string {
  const code = c.charCodeAt(0);
  return (
    NAMED[c] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`)
  );
}

/**
 * `s` with every control character written as an escape, but those in `keep` (some of line
 * feed, carriage return and tab: the layout of text whose lines are content, such as logs in a
 * `<pre>`).
 */
export function visibleText(s: string, keep = ''): string {
  if (!TEST.test(s)) return s;
  return s.replace(CONTROL, (c) => (keep.includes(c) ? c : escape(c)));
}
