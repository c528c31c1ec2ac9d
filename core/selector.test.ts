import { describe, expect, it } from 'vitest';
import { LabelSelector, Labels } from './resources.js';
import { formatSelector, matchesSelector, parseLabels, parseSelectorString, selectEdges } from './selector.js';

const eu = { region: 'eu', tier: 'small', 'example.com/gpu': 'nvidia' };

describe('matchesSelector', () => {
  const cases: [string, LabelSelector | undefined, boolean][] = [
    ['undefined matches nothing', undefined, false],
    ['empty matches everything', {}, true],
    ['empty lists match everything', { matchLabels: {}, matchExpressions: [] }, true],
    ['matchLabels hit', { matchLabels: { region: 'eu' } }, true],
    ['matchLabels wrong value', { matchLabels: { region: 'us' } }, false],
    ['matchLabels all must hold', { matchLabels: { region: 'eu', tier: 'large' } }, false],
    ['matchLabels missing key', { matchLabels: { zone: 'a' } }, false],
    ['prefixed key', { matchLabels: { 'example.com/gpu': 'nvidia' } }, true],
    ['In hit', { matchExpressions: [{ key: 'region', operator: 'In', values: ['us', 'eu'] }] }, true],
    ['In miss', { matchExpressions: [{ key: 'region', operator: 'In', values: ['us'] }] }, false],
    ['In absent key', { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }, false],
    ['NotIn hit', { matchExpressions: [{ key: 'region', operator: 'NotIn', values: ['us'] }] }, true],
    ['NotIn miss', { matchExpressions: [{ key: 'region', operator: 'NotIn', values: ['eu'] }] }, false],
    ['NotIn absent key matches', { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }, true],
    ['Exists', { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, true],
    ['Exists absent', { matchExpressions: [{ key: 'zone', operator: 'Exists' }] }, false],
    ['DoesNotExist', { matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] }, true],
    ['DoesNotExist present', { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, false],
    [
      'labels AND expressions',
      { matchLabels: { region: 'eu' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['large'] }] },
      false,
    ],
    ['inherited properties are not labels', { matchExpressions: [{ key: 'constructor', operator: 'Exists' }] }, false],
  ];
  it.each(cases)('%s', (_name, sel, want) => {
    expect(matchesSelector(eu, sel)).toBe(want);
  });

  it('treats an empty label value as present', () => {
    expect(matchesSelector({ gpu: '' }, { matchExpressions: [{ key: 'gpu', operator: 'Exists' }] })).toBe(true);
    expect(matchesSelector({ gpu: '' }, { matchLabels: { gpu: '' } })).toBe(true);
    expect(matchesSelector({}, { matchLabels: { gpu: '' } })).toBe(false);
  });
});

describe('selectEdges', () => {
  const edges = [
    { name: 'e3', labels: { region: 'eu' } },
    { name: 'e1', labels: { region: 'eu' } },
    { name: 'e2', labels: { region: 'us' } },
    { name: 'drained', labels: { region: 'eu' }, unschedulable: true },
  ];

  it('returns selector matches sorted, without unschedulable edges', () => {
    expect(selectEdges(edges, { edgeSelector: { matchLabels: { region: 'eu' } } })).toEqual(['e1', 'e3']);
  });

  it('unions explicit names that exist and ignores unknown ones', () => {
    expect(
      selectEdges(edges, { edgeSelector: { matchLabels: { region: 'eu' } }, edges: ['e2', 'e1', 'ghost'] }),
    ).toEqual(['e1', 'e2', 'e3']);
  });

  it('selects only the named edges when there is no selector', () => {
    expect(selectEdges(edges, { edges: ['e2'] })).toEqual(['e2']);
  });

  it('does not select a drained edge even by name', () => {
    expect(selectEdges(edges, { edges: ['drained'] })).toEqual([]);
  });

  it('selects all schedulable edges with an empty selector and none with neither', () => {
    expect(selectEdges(edges, { edgeSelector: {} })).toEqual(['e1', 'e2', 'e3']);
    expect(selectEdges(edges, {})).toEqual([]);
  });
});

describe('parseLabels', () => {
  it('parses pairs, trims spaces, allows empty values and prefixed keys', () => {
    expect(parseLabels('region=eu, tier=small,gpu=,example.com/rack=r-1')).toEqual({
      region: 'eu',
      tier: 'small',
      gpu: '',
      'example.com/rack': 'r-1',
    });
  });

  it('parses the empty string and stray commas as no labels', () => {
    expect(parseLabels('')).toEqual({});
    expect(parseLabels('a=b,')).toEqual({ a: 'b' });
  });

  const bad: [string, string][] = [
    [
      'region',
      'invalid label "region": write labels as key=value pairs separated by commas, e.g. region=eu,tier=small',
    ],
    ['=eu', 'invalid label "=eu": the key is empty; write key=value, e.g. region=eu'],
    [
      'region=eu=west',
      'invalid label "region=eu=west": a value cannot contain "="; separate pairs with commas, e.g. region=eu,tier=small',
    ],
    [
      'Region Name=eu',
      'invalid label key "Region Name" in "Region Name=eu": use a key like "region" or "example.com/tier"',
    ],
    ['region=eu west', 'invalid value "eu west" for label "region" in "region=eu west": use at most 63 letters'],
    [`region=${'a'.repeat(64)}`, `invalid value "${'a'.repeat(64)}" for label "region"`],
    ['region=eu,region=us', 'label "region" is given twice ("eu" and "us"): keep one'],
  ];
  it.each(bad)('rejects %j', (input, msg) => {
    expect(() => parseLabels(input)).toThrow(msg);
  });

  it('accepts exactly what the Labels schema accepts', () => {
    const samples: [string, string][] = [
      ['region', 'eu'],
      ['example.com/tier', 'a.b_c-d'],
      ['-bad', 'x'],
      ['ok', '-bad'],
      ['ok', 'bad-'],
      ['UPPER.case_key', 'V1'],
      ['a/b/c', 'x'],
      ['ok', 'a'.repeat(63)],
      ['ok', 'a'.repeat(64)],
    ];
    for (const [k, v] of samples) {
      let ours = true;
      try {
        parseLabels(`${k}=${v}`);
      } catch {
        ours = false;
      }
      expect([k, v, ours]).toEqual([k, v, Labels.safeParse({ [k]: v }).success]);
    }
  });
});

describe('parseSelectorString', () => {
  const cases: [string, LabelSelector][] = [
    ['', {}],
    ['  ', {}],
    ['region=eu', { matchLabels: { region: 'eu' } }],
    ['region==eu', { matchLabels: { region: 'eu' } }],
    ['tier!=small', { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['small'] }] }],
    ['gpu', { matchExpressions: [{ key: 'gpu', operator: 'Exists' }] }],
    ['!legacy', { matchExpressions: [{ key: 'legacy', operator: 'DoesNotExist' }] }],
    ['zone in (a,b)', { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] }],
    ['zone notin ( a , b )', { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a', 'b'] }] }],
    [
      'region=eu,tier!=small,gpu,!legacy,zone in (a,b)',
      {
        matchLabels: { region: 'eu' },
        matchExpressions: [
          { key: 'tier', operator: 'NotIn', values: ['small'] },
          { key: 'gpu', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist' },
          { key: 'zone', operator: 'In', values: ['a', 'b'] },
        ],
      },
    ],
    ['example.com/tier=edge', { matchLabels: { 'example.com/tier': 'edge' } }],
    [
      'region=eu,region=us',
      { matchLabels: { region: 'eu' }, matchExpressions: [{ key: 'region', operator: 'In', values: ['us'] }] },
    ],
  ];
  it.each(cases)('parses %j', (input, want) => {
    expect(parseSelectorString(input)).toEqual(want);
    expect(LabelSelector.safeParse(want).success).toBe(true);
  });

  it('keeps the meaning of two equalities on one key: nothing can match both', () => {
    const sel = parseSelectorString('region=eu,region=us');
    expect(matchesSelector({ region: 'eu' }, sel)).toBe(false);
    expect(matchesSelector({ region: 'us' }, sel)).toBe(false);
  });

  const bad: [string, string][] = [
    ['region=eu,,tier=small', 'invalid selector "region=eu,,tier=small": empty term between commas'],
    ['zone in (a,b', 'invalid selector term "zone in (a,b": use key=value, key!=value, key, !key'],
    ['zone in ()', 'invalid selector term "zone in ()": "in" needs at least one value, e.g. zone in (a,b)'],
    ['cpus>4', 'invalid selector term "cpus>4"'],
    ['Bad Key=x', 'invalid selector term "Bad Key=x"'],
    ['region=eu west', 'invalid value "eu west" for label "region" in selector term "region=eu west"'],
    ['region=a=b', 'invalid value "a=b" for label "region"'],
    ['zone in (a,b c)', 'invalid value "b c" for label "zone"'],
    ['-gpu', 'invalid label key "-gpu" in selector term "-gpu"'],
  ];
  it.each(bad)('rejects %j', (input, msg) => {
    expect(() => parseSelectorString(input)).toThrow(msg);
  });

  it('round-trips through formatSelector', () => {
    const s = 'region=eu,tier!=small,gpu,!legacy,zone in (a,b),rack notin (r1,r2)';
    expect(formatSelector(parseSelectorString(s))).toBe(s);
    expect(formatSelector(undefined)).toBe('<none>');
    expect(formatSelector({})).toBe('<all>');
  });
});
