/**
 * A table of rows under named columns, in its scrolling wrapper: the shape every list page and
 * detail table shares. With `empty`, when it has no rows (`count` 0, not `loading`), one row says
 * so across all columns.
 */
import type { ComponentChildren } from 'preact';

export interface TableProps {
  /** The column names (`<th scope="col">`), in order. */
  columns: string[];
  /** What a screen reader announces for the table (`aria-label`). */
  label?: string;
  /** With `empty`: how many rows `children` holds; 0 (and not loading) shows `empty`. */
  count?: number;
  loading?: boolean;
  /** The text of the row shown when there are none; undefined: none. */
  empty?: ComponentChildren;
  /** The rows (`<tr>`). */
  children: ComponentChildren;
}

export function Table(p: TableProps) {
  return (
    <div class="table-wrap">
      <table class="table" {...(p.label ? { 'aria-label': p.label } : {})}>
        <thead>
          <tr>
            {p.columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {p.children}
          {p.count === 0 && !p.loading && p.empty !== undefined && (
            <tr>
              <td colSpan={p.columns.length} class="muted">
                {p.empty}
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}
