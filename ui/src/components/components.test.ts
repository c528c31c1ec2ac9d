// @vitest-environment happy-dom
/** Components rendered into a DOM: what a user (or a screen reader) gets from them. */
import { h, render, type VNode } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../api.js';
import { ConfirmButton } from './confirm.js';
import { chartPath, niceMax, OnlineChart } from './chart.js';
import { ErrorBox } from './error-box.js';
import { ReadyBar } from './ready-bar.js';

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

describe('ReadyBar', () => {
  it('says READY x/y in text, names the worst state and exposes the numbers to assistive technology', () => {
    const el = mount(
      h(ReadyBar, {
        summary: { ready: 3, total: 5, worst: 'Failed', states: { Ready: 3, Failed: 1, Progressing: 1 } },
        label: 'placement web',
      }),
    );
    expect(el.textContent).toContain('READY 3/5');
    expect(el.querySelector('.badge')?.textContent).toBe('Failed');
    const bar = el.querySelector('[role=progressbar]')!;
    expect(bar.getAttribute('aria-label')).toBe('placement web: 3 of 5 ready');
    expect(bar.getAttribute('aria-valuenow')).toBe('3');
    expect(bar.getAttribute('aria-valuemax')).toBe('5');
    // Worst first in the breakdown.
    expect(el.querySelector('.ready-breakdown')?.textContent).toBe('1 Failed, 1 Progressing, 3 Ready');
    expect((el.querySelector('.bar-fill') as HTMLElement).style.width).toBe('60%');
  });

  it('shows no badge when everything is ready', () => {
    const el = mount(
      h(ReadyBar, { summary: { ready: 2, total: 2, worst: 'Ready', states: { Ready: 2 } }, label: 'x' }),
    );
    expect(el.querySelector('.badge')).toBeNull();
    expect(el.querySelector('.bar-full')).not.toBeNull();
  });
});

describe('ConfirmButton', () => {
  it('asks in place with focus on the confirm button; Escape cancels and gives focus back; confirming runs the action once', async () => {
    let runs = 0;
    const el = mount(
      h(ConfirmButton, {
        label: 'Pause rollout',
        confirm: 'Pause this rollout?',
        confirmLabel: 'Pause',
        onConfirm: async () => void runs++,
      }),
    );
    const opener = el.querySelector('button')!;
    await act(() => opener.click());
    expect(el.querySelector('[role=group]')?.getAttribute('aria-label')).toBe('Pause this rollout?');
    expect(document.activeElement?.textContent).toBe('Pause');
    await act(() => {
      el.querySelector('[role=group]')!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    });
    await act(() => new Promise((r) => setTimeout(r, 5)));
    expect(el.querySelector('[role=group]')).toBeNull();
    expect(document.activeElement?.textContent).toBe('Pause rollout');
    expect(runs).toBe(0);

    await act(() => (el.querySelector('button') as HTMLButtonElement).click());
    const yes = [...el.querySelectorAll('button')].find((b) => b.textContent === 'Pause')!;
    await act(async () => yes.click());
    expect(runs).toBe(1);
    expect(el.querySelector('[role=group]')).toBeNull();
  });
});

describe('ErrorBox', () => {
  it('lists every invalid field of a 422 and says nothing was changed', () => {
    const err = new ApiError(422, 'invalid', 'object 1: spec.workloads: name at least one workload', [
      { index: 0, path: 'spec.workloads', message: 'name at least one workload' },
      { index: 1, path: 'metadata.name', message: 'must be 1-63 lower-case letters' },
    ]);
    const el = mount(h(ErrorBox, { error: err }));
    expect(el.querySelector('[role=alert] strong')?.textContent).toBe('The hub rejected it: nothing was changed');
    const items = [...el.querySelectorAll('li')].map((li) => li.textContent);
    expect(items).toEqual([
      'object 1 · spec.workloads: name at least one workload',
      'object 2 · metadata.name: must be 1-63 lower-case letters',
    ]);
  });

  it('renders nothing without an error', () => {
    expect(mount(h(ErrorBox, { error: undefined })).innerHTML).toBe('');
  });
});

describe('OnlineChart', () => {
  const pts = [
    { t: '2026-01-01T10:00:00Z', online: 0 },
    { t: '2026-01-01T11:00:00Z', online: 3 },
    { t: '2026-01-01T12:00:00Z', online: 2 },
  ];
  it('names min, max and now in its accessible name and keeps the numbers in a table', () => {
    const el = mount(h(OnlineChart, { points: pts, total: 4, hours: 2 }));
    expect(el.querySelector('svg')?.getAttribute('aria-label')).toBe(
      'Edges online over the last 2 hours: between 0 and 3, now 2 of 4.',
    );
    expect([...el.querySelectorAll('tbody td:last-child')].map((td) => td.textContent)).toEqual(['0', '2']);
  });

  it('scales to a round top and draws a step line that starts left and ends right', () => {
    expect([0, 1, 4, 5, 7, 10, 11, 99, 101, 10_000].map(niceMax)).toEqual([1, 1, 4, 5, 10, 10, 20, 100, 200, 10_000]);
    const { line, area } = chartPath(pts, 4);
    expect(line.startsWith('M40.0,')).toBe(true);
    expect(line).toMatch(/H628\.0V\S+$/);
    expect(area.endsWith('Z')).toBe(true);
  });
});
