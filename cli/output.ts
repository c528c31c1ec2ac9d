/**
 * @module Output of the CLI: injectable writers (tests capture them), aligned plain-text tables
 * (kubectl style), and colour for states only when writing to a terminal that accepts it.
 */
import { stringify } from 'yaml';
import { visibleText } from '../core/text.js';

export interface Writer {
  write(s: string): unknown;
  isTTY?: boolean;
}

export interface Output {
  out: Writer;
  err: Writer;
  /** Colour is used only on a TTY and without NO_COLOR (https://no-color.org). */
  color: boolean;
}

export function line(w: Writer, s = ''): void {
  w.write(s + '\n');
}

const STATE_COLORS: Record<string, number> = {
  Ready: 32,
  Online: 32,
  Complete: 32,
  Progressing: 36,
  Pending: 33,
  Paused: 33,
  Modified: 33,
  Stale: 33,
  Offline: 33,
  Blocked: 33,
  Degraded: 31,
  Failed: 31,
  Error: 31,
};

/** Colours a cell by the state word it starts with (`Offline (3m)` is yellow). */
export function paint(cell: string, color: boolean): string {
  if (!color) return cell;
  const code = STATE_COLORS[cell.split(/[\s,(]/)[0]];
  return code ? `\u001b[${code}m${cell}\u001b[0m` : cell;
}

/**
 * A value as a table cell or describe line shows it: control characters written as escapes
 * (core/text.ts), so a name an edge sent cannot move the cursor, clear the screen or start a row.
 * Colour (`paint`) is added after, to the escaped text.
 */
export const cell = (s: string): string => visibleText(s);

/**
 * Aligned columns separated by three spaces (as kubectl does), headers in capitals, no trailing
 * blanks. Every cell is shown through `cell`. `colorColumns` names the columns whose cells may be
 * painted; padding is computed on the plain text so colour never breaks alignment.
 */
export function formatTable(
  headers: string[],
  rawRows: string[][],
  opts: { color?: boolean; colorColumns?: string[] } = {},
): string {
  const rows = rawRows.map((r) => r.map((c) => cell(c ?? '')));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const painted = new Set((opts.colorColumns ?? []).map((c) => headers.indexOf(c)));
  const render = (cells: string[], isHeader: boolean): string =>
    cells
      .map((c, i) => {
        const text = c ?? '';
        const pad = i === cells.length - 1 ? '' : ' '.repeat(widths[i] - text.length);
        return (!isHeader && painted.has(i) ? paint(text, !!opts.color) : text) + pad;
      })
      .join('   ')
      .replace(/\s+$/, '');
  return [render(headers, true), ...rows.map((r) => render(r, false))].join('\n') + '\n';
}

export function toYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });
}

export function toJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}
