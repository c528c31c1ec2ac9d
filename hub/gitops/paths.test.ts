import { describe, expect, it } from 'vitest';
import { isChartFile, pathMatcher } from './paths.js';

describe('GitRepo paths', () => {
  it('takes a directory as every manifest file below it', () => {
    const m = pathMatcher(['apps']);
    expect(m('apps/web.yaml')).toBe(true);
    expect(m('apps/eu/web.yml')).toBe(true);
    expect(m('apps/data.json')).toBe(true);
    expect(m('apps/README.md')).toBe(false);
    expect(m('apps2/web.yaml')).toBe(false);
    expect(m('other/web.yaml')).toBe(false);
  });

  it('takes "." as the whole repository', () => {
    expect(pathMatcher(['.'])('a/b/c.yaml')).toBe(true);
    expect(pathMatcher(['./'])('c.yaml')).toBe(true);
  });

  it('matches *, ** (zero or more directories), ? and {a,b}', () => {
    const m = pathMatcher(['edges/**/*.yaml', 'base/?.yml', 'sites/{eu,us}/*.yaml']);
    expect(m('edges/web.yaml')).toBe(true);
    expect(m('edges/eu/north/web.yaml')).toBe(true);
    expect(m('edges/web.yml')).toBe(false);
    expect(m('base/a.yml')).toBe(true);
    expect(m('base/ab.yml')).toBe(false);
    expect(m('sites/eu/x.yaml')).toBe(true);
    expect(m('sites/asia/x.yaml')).toBe(false);
    expect(m('sites/eu/deeper/x.yaml')).toBe(false);
  });

  it('treats dots and other regex characters literally', () => {
    const m = pathMatcher(['a.b/*.yaml']);
    expect(m('a.b/x.yaml')).toBe(true);
    expect(m('axb/x.yaml')).toBe(false);
  });

  it("knows a Helm chart's own file", () => {
    expect(isChartFile('charts/web/Chart.yaml')).toBe(true);
    expect(isChartFile('Chart.yml')).toBe(true);
    expect(isChartFile('charts/web/values.yaml')).toBe(false);
  });
});
