/**
 * Control characters in the text the UI renders, shown rather than swallowed (core/text.ts). The
 * browser escapes markup but not ESC, a newline or a right-to-left override: a file name an
 * edge's workload exported as `a\x1b[2J\nb` would read as `a[2J b`, and one with U+202E would read
 * backwards. Done once for every page, as a Preact `options.vnode` hook, so no page can forget it:
 *
 * - the text children of an element are escaped, tabs excepted (white space in a page, never a
 *   cell boundary); inside `<pre>` and `<textarea>` line feeds and carriage returns stay too:
 *   there they are the layout of logs, command output and manifests;
 * - text Preact creates on its own (a component returning a string, a fragment's text) keeps line
 *   breaks as well, since its element is not known there.
 *
 * Attributes are left alone: they are not rendered as text.
 */
import { options, type VNode } from 'preact';
import { visibleText } from '../../core/text.js';

const LAYOUT = '\n\r\t';
const KEEP_LAYOUT = new Set(['pre', 'textarea']);

function escapeChildren(children: unknown, keep: string): unknown {
  if (typeof children === 'string') return visibleText(children, keep);
  if (!Array.isArray(children)) return children;
  let out: unknown[] | undefined;
  children.forEach((c, i) => {
    const v = escapeChildren(c, keep);
    if (v !== c) (out ??= [...children])[i] = v;
  });
  return out ?? children;
}

let installed = false;

/** Installs the hook (once; further calls do nothing). main.tsx calls it before the first render. */
export function showControlCharacters(): void {
  if (installed) return;
  installed = true;
  const previous = options.vnode;
  options.vnode = (vnode: VNode) => {
    // A text vnode (type null) holds its text in `props`; an element its children in props.children.
    const v = vnode as unknown as { type: unknown; props: unknown };
    if (v.type === null && typeof v.props === 'string') v.props = visibleText(v.props, LAYOUT);
    else if (typeof v.type === 'string' && v.props && typeof v.props === 'object' && 'children' in v.props) {
      const props = v.props as { children: unknown };
      props.children = escapeChildren(props.children, KEEP_LAYOUT.has(v.type) ? LAYOUT : '\t');
    }
    previous?.(vnode);
  };
}
