/** The phase rules of status.ts on made-up podman views: containers left down as drift. */
import { describe, expect, it } from 'vitest';
import type { PodmanWorkloadState } from './state.js';
import { LEFT_DOWN_MS, observe, type ContainerView, type PodView } from './status.js';

const NOW = Date.parse('2026-11-29T12:00:00Z');

const state: PodmanWorkloadState = {
  name: 'web',
  generation: 3,
  hash: 'h1',
  attemptedAt: NOW - 60_000,
  templates: [{ kind: 'Pod', name: 'web', replicas: 1 }],
  ports: [],
  graceSeconds: 10,
  probes: {},
  claims: [],
};
const pods: PodView[] = [{ name: 'web', status: 'Degraded', labels: { 'outpost.dev/hash': 'h1' } }];

function container(name: string, over: Partial<ContainerView> = {}): ContainerView {
  return {
    id: `id-${name}`,
    container: name,
    pod: 'web',
    template: 'web',
    state: 'running',
    exitCode: 0,
    error: '',
    restarts: 0,
    createdAt: NOW - 60_000,
    startedAt: NOW - 50_000,
    finishedAt: 0,
    restartPolicy: 'always',
    labels: {},
    ...over,
  };
}

/** Exited `ago` ms before NOW, never restarted since. */
const exited = (name: string, ago: number, over: Partial<ContainerView> = {}): ContainerView =>
  container(name, { state: 'exited', exitCode: 137, finishedAt: NOW - ago, ...over });

describe('podman status: containers left down', () => {
  it('reports an Always container down past LEFT_DOWN_MS as drift, so the reconciler applies again', () => {
    const o = observe('web', state, pods, [container('a'), exited('b', LEFT_DOWN_MS + 1)], NOW);
    expect(o.modified).toEqual(['Pod/web/b']);
    // Degraded (a non-zero exit) is worse than Modified and stays.
    expect(o.phase).toBe('Degraded');
    expect(o.message).toBe(
      'web/b: exited (exit code 137), 0 restarts; podman did not start it again, the next apply does',
    );
  });

  it('makes the phase Modified when nothing worse holds (stopped with exit code 0 on site)', () => {
    const o = observe('web', state, pods, [container('a'), exited('b', 60_000, { exitCode: 0 })], NOW);
    expect(o.phase).toBe('Modified');
    expect(o.modified).toEqual(['Pod/web/b']);
  });

  it('leaves podman time to restart a container itself (a crash loop between exit and restart)', () => {
    const o = observe('web', state, pods, [container('a'), exited('b', LEFT_DOWN_MS - 500, { restarts: 4 })], NOW);
    expect(o.modified).toBeUndefined();
    expect(o.phase).toBe('Degraded');
  });

  it('counts a container that never started under Always, but no exit its policy accepts', () => {
    const created = container('c', { state: 'created', startedAt: 0 });
    expect(observe('web', state, pods, [created], NOW).modified).toEqual(['Pod/web/c']);
    const never = exited('n', 60_000, { exitCode: 1, restartPolicy: 'no' });
    const onFailureDone = exited('f', 60_000, { exitCode: 0, restartPolicy: 'on-failure' });
    const o = observe('web', state, pods, [never, onFailureDone], NOW);
    expect(o.modified).toBeUndefined();
    const onFailureCrashed = exited('f', 60_000, { exitCode: 2, restartPolicy: 'on-failure' });
    expect(observe('web', state, pods, [onFailureCrashed], NOW).modified).toEqual(['Pod/web/f']);
  });

  it('reports no drift for a workload stopped on request, nor for one whose last apply failed', () => {
    const down = [exited('a', 60_000), exited('b', 60_000)];
    const paused = observe('web', { ...state, stopped: true }, pods, down, NOW);
    expect(paused.phase).toBe('Paused');
    expect(paused.modified).toBeUndefined();
    // What starts it: the reconciler applies nothing to a workload held stopped or paused on site.
    expect(paused.message).toBe(
      'stopped on request; runs again on a start (`outpost edge action EDGE start web`, or `outpost edge local resume web` after a pause on site), not on an apply',
    );
    const failed = observe('web', { ...state, error: 'podman kube play failed: x' }, pods, down, NOW);
    expect(failed.phase).toBe('Failed');
    expect(failed.modified).toBeUndefined();
  });
});
