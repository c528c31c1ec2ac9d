// @vitest-environment happy-dom
/** Control characters in rendered text are shown as escapes (ui/src/visible.ts), in a real DOM. */
import { Fragment, h, render, type VNode } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Badge } from './components/badge.js';
import { showControlCharacters } from './visible.js';

const NAME = 'clips/a\u001b[2J\nb\u202e.mp4';

let root: HTMLElement;
function mount(vnode: VNode<any>): HTMLElement {
  root = document.createElement('div');
  document.body.appendChild(root);
  act(() => render(vnode, root));
  return root;
}
afterEach(() => {
  render(null, root);
  root.remove();
});
beforeAll(() => showControlCharacters());

/** Every C0/C1 control and bidi override in the page's text, but the white space named. */
const raw = (s: string, allowed = '') =>
  [...s].filter((c) => /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/.test(c) && !allowed.includes(c));

describe('control characters in the UI', () => {
  it('shows a name from an edge escaped in a table cell, a badge and text a component returns', () => {
    const Name = (p: { n: string }) => p.n as unknown as VNode;
    const el = mount(
      h(
        'table',
        null,
        h(
          'tbody',
          null,
          h('tr', null, [
            h('th', { scope: 'row' }, NAME),
            h('td', null, 'workload ', NAME, ' exported'),
            h('td', null, h(Badge, { value: 'Fail\u001b[31med' })),
            h('td', null, h(Fragment, null, h(Name, { n: 'x\u001b[2Jy' }))),
          ]),
        ),
      ),
    );
    const cells = [...el.querySelectorAll('th, td')].map((c) => c.textContent);
    expect(cells).toEqual([
      'clips/a\\x1b[2J\\nb\\u202e.mp4',
      'workload clips/a\\x1b[2J\\nb\\u202e.mp4 exported',
      'Fail\\x1b[31med',
      'x\\x1b[2Jy',
    ]);
    expect(raw(el.textContent!)).toEqual([]);
    // Attributes are data, not text: left as they are.
    render(h('a', { title: 'a\nb' }, 'x'), el);
    expect(el.querySelector('a')!.getAttribute('title')).toBe('a\nb');
    // Plain text, numbers and markup as they were.
    render(h('p', null, 'READY ', 3, '/', 5, h('strong', null, ' ok')), el);
    expect(el.innerHTML).toBe('<p>READY 3/5<strong> ok</strong></p>');
  });

  it('keeps the lines of logs in a <pre> while escaping what a terminal would act on', () => {
    const el = mount(h('pre', null, 'line 1\r\n\u001b[32mgreen\u001b[0m\tline 2\n'));
    expect(el.textContent).toBe('line 1\r\n\\x1b[32mgreen\\x1b[0m\tline 2\n');
    expect(raw(el.textContent!, '\r\n\t')).toEqual([]);
  });
});
