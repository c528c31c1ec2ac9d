/** The phase rules of status.ts on made-up podman views: containers left down and pods missing as drift. */
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

describe('podman status: pods missing', () => {
  const two: PodmanWorkloadState = {
    ...state,
    templates: [
      { kind: 'Pod', name: 'web', replicas: 1 },
      { kind: 'Deployment', name: 'd', replicas: 2 },
    ],
  };
  const view = (name: string, hash = 'h1'): PodView => ({
    name,
    status: 'Running',
    labels: { 'outpost.dev/hash': hash },
  });
  const running = (pod: string) => container('c', { pod, id: `id-${pod}` });

  it('reports a declared pod that is gone as drift, phase Modified, with the message of what puts it back', () => {
    const o = observe('web', two, [view('web'), view('d-pod-0')], [running('web'), running('d-pod-0')], NOW);
    expect(o.modified).toEqual(['Pod/d-pod-1']);
    expect(o.phase).toBe('Modified');
    expect(o.objects['Pod/d-pod-1']).toEqual({
      ready: false,
      message: 'missing (removed outside Outpost?); the next apply recreates it',
    });
    expect(o.objects['Deployment/d']).toEqual({ ready: false, message: '1/2 pods ready' });
    expect(o.message).toBe('1 pod(s) missing (removed outside Outpost?): d-pod-1; the next apply recreates them');
  });

  it('says so when no pod is left, and keeps Degraded when what runs crash-loops', () => {
    const none = observe('web', two, [], [], NOW);
    expect(none.modified).toEqual(['Pod/web', 'Pod/d-pod-0', 'Pod/d-pod-1']);
    expect(none.phase).toBe('Modified');
    expect(none.message).toBe('no pods exist (removed outside Outpost?); the next apply recreates them');
    const looping = container('c', { restarts: 3, startedAt: NOW - 1_000 });
    const crashing = observe('web', two, [view('web')], [looping], NOW);
    expect(crashing.phase).toBe('Degraded');
    expect(crashing.modified).toEqual(['Pod/d-pod-0', 'Pod/d-pod-1']);
  });

  it("does not count another version's pod of the same name (one left behind by an update), and reports it as left over", () => {
    const o = observe('web', state, [view('web', 'h0')], [running('web')], NOW);
    expect(o.modified).toEqual(['Pod/web', 'Pod/web@h0']);
    expect(o.objects['Pod/web@h0']?.message).toMatch(/^left over from version h0 beside the running /);
    // While an operation runs, a pod of another version is its doing (an update's new or old pods).
    expect(observe('web', state, [view('web', 'h0')], [running('web')], NOW, true).modified).toBeUndefined();
  });

  it('reports no drift while an operation on the workload is in progress, nor when stopped or failed', () => {
    const busy = observe('web', two, [view('web')], [running('web'), exited('b', 60_000)], NOW, true);
    expect(busy.modified).toBeUndefined();
    expect(busy.phase).toBe('Progressing');
    expect(busy.message).toBe('2 pod(s) missing while an operation on the workload is in progress');
    const paused = observe('web', { ...two, stopped: true }, [view('web')], [], NOW);
    expect([paused.phase, paused.modified]).toEqual(['Paused', undefined]);
    const failed = observe('web', { ...two, error: 'podman kube play failed: x' }, [], [], NOW);
    expect([failed.phase, failed.modified]).toEqual(['Failed', undefined]);
  });
});
