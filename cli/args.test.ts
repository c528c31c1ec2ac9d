// Argument parsing and exit codes. Usage errors (exit 2) are caught before any request, so these
// runs point at a hub that does not exist and would fail with exit 1 if a request were made.
import { CommanderError, InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { nextVersion, parseTime } from './cmd-data.js';
import { parseLabelEdits } from './cmd-edge.js';
import { CliError, exitCodeOf, UsageError } from './errors.js';
import { expectKind, parseKind, parseKindArg } from './kinds.js';
import { apiToken, runCli } from '../test/fixtures/cli.js';

const NOWHERE = { OUTPOST_HUB: 'http://127.0.0.1:9', OUTPOST_TOKEN: apiToken(), OUTPOST_PROJECT: 'default' };

describe('kinds', () => {
  it('accepts singular, plural and short forms in any case', () => {
    for (const [typed, kind] of [
      ['edge', 'Edge'],
      ['edges', 'Edge'],
      ['e', 'Edge'],
      ['Workload', 'Workload'],
      ['workloads', 'Workload'],
      ['wl', 'Workload'],
      ['placement', 'Placement'],
      ['PLACEMENTS', 'Placement'],
      ['pl', 'Placement'],
    ]) {
      expect(parseKind(typed).kind, typed).toBe(kind);
    }
  });

  it('rejects other kinds with the list of valid ones', () => {
    expect(() => parseKind('pods')).toThrow(InvalidArgumentError);
    expect(() => parseKind('pods')).toThrow(/unknown kind "pods": use one of edge\|edges\|e, workload/);
  });

  it('reads KIND/NAME', () => {
    expect(parseKindArg('pl/eu')).toMatchObject({ info: { kind: 'Placement' }, name: 'eu' });
    expect(() => parseKindArg('pl/')).toThrow(/no name after/);
    expect(() => expectKind('Workload')('placement')).toThrow(/works on workloads, not placements/);
  });
});

describe('label edits', () => {
  it('sets with k=v and removes with k-', () => {
    expect(parseLabelEdits(['region=eu', 'tier=', 'legacy-', 'example.com/x-'])).toEqual({
      region: 'eu',
      tier: '',
      legacy: null,
      'example.com/x': null,
    });
  });

  it('a value may end in "-" when it is set', () => {
    expect(parseLabelEdits(['a=b-c'])).toEqual({ a: 'b-c' });
  });

  it('rejects bad keys, bad values, conflicting edits and no edits', () => {
    expect(() => parseLabelEdits([])).toThrow(/at least one label edit/);
    expect(() => parseLabelEdits(['Bad Key=x'])).toThrow(/invalid label key/);
    expect(() => parseLabelEdits(['a=b c'])).toThrow(/invalid value/);
    expect(() => parseLabelEdits(['-'])).toThrow(/invalid label removal/);
    expect(() => parseLabelEdits(['a=1', 'a-'])).toThrow(/edited twice/);
    expect(() => parseLabelEdits(['a=1,b=2'])).toThrow(/one key=value or key- per argument/);
  });
});

describe('exitCodeOf', () => {
  it('maps usage to 2, failures to 1, help to 0', () => {
    expect(exitCodeOf(new UsageError('x'))).toBe(2);
    expect(exitCodeOf(new CommanderError(1, 'commander.invalidArgument', 'x'))).toBe(2);
    expect(exitCodeOf(new CommanderError(0, 'commander.helpDisplayed', 'x'))).toBe(0);
    expect(exitCodeOf(new CliError('x'))).toBe(1);
    expect(exitCodeOf(new Error('x'))).toBe(1);
  });
});

describe('bad usage exits 2 before talking to the hub', () => {
  const cases: [string[], RegExp][] = [
    [['get', 'pods'], /unknown kind "pods"/],
    [['get', 'edges', '-o', 'xml'], /unknown output format "xml": use one of table, wide, yaml, json/],
    [['get', 'edges', '-l', 'a in ()'], /needs at least one value/],
    [['get', 'edge', 'e1', '-l', 'a=b'], /-l selects among many objects; leave it out when naming them/],
    [
      ['get', 'edge/e1', 'e2'],
      /"e2" has no kind: once one object is given as KIND\/NAME, give each so \(outpost get edge\/e1 edge\/e2\)/,
    ],
    [['describe', 'edge'], /describe needs a name/],
    [['delete', 'edge', 'e1'], /decommissioned .*outpost edge decommission e1/],
    [['apply'], /required option '-f, --filename <path>' not specified/],
    [['rollout', 'status', 'workload', 'web'], /works on placements, not workloads/],
    [['rollout', 'status', 'pl', 'eu', '--timeout', 'soon'], /invalid duration "soon"/],
    [['rollout', 'undo', 'wl', 'web', '--to-revision', '0'], /invalid revision "0"/],
    [['token', 'create', '--labels', 'region'], /write labels as key=value/],
    [['token', 'create', '--uses', '-3'], /invalid number of uses|unknown option/],
    [['token', 'create', '--api'], /--api needs --role/],
    [['token', 'create', '--api', '--role', 'root'], /Allowed choices are viewer, operator, admin/],
    [['token', 'create', '--role', 'viewer'], /--role is for API tokens: add --api/],
    [['token', 'create', '--api', '--role', 'viewer', '--uses', '2'], /--labels and --uses are for join tokens/],
    [['edge', 'label', 'e1', 'Bad Key=1'], /invalid label key/],
    [['edge', 'label', 'E1', 'a=1'], /invalid edge name "E1"/],
    [['edge', 'decommission', 'e1'], /refusing to decommission edge e1 without confirmation: add --yes/],
    [['get', 'edges', '--project', 'Not_A_Project'], /invalid project/],
    [['login', '--hub', 'https://h:1', '--token', 'garbage'], /not an Outpost token/],
    [
      ['login', '--hub', 'https://h:1', '--token', `opj1.none.0123456789abcdef.${'A'.repeat(42)}w`],
      /is a join token .*not an API token/,
    ],
  ];
  for (const [args, msg] of cases) {
    it(args.join(' '), async () => {
      const r = await runCli(args, { env: NOWHERE });
      expect(r.stderr).toMatch(msg);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
    });
  }
});

describe('failures the user must act on exit 1', () => {
  it('no hub configured says how to log in', async () => {
    const r = await runCli(['get', 'edges'], { env: { OUTPOST_CONFIG: '/nonexistent/outpost.json' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'not logged in to a hub (no /nonexistent/outpost.json): run `outpost login --hub URL --token T`, or set OUTPOST_HUB and OUTPOST_TOKEN',
    );
  });

  it('a hub that is not running: says so and how to start one', async () => {
    const r = await runCli(['get', 'edges'], { env: NOWHERE });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('cannot reach the hub at http://127.0.0.1:9: is it running? (outpost hub --data DIR)');
  });
});

describe('outpost data publish: times and versions', () => {
  it('takes an ISO time with a zone or a delay from now', () => {
    const now = Date.parse('2026-11-25T06:00:00Z');
    expect(parseTime('+15m', now)).toBe('2026-11-25T06:15:00.000Z');
    expect(parseTime('2h', now)).toBe('2026-11-25T08:00:00.000Z');
    expect(parseTime('2026-12-01T06:00:00+01:00', now)).toBe('2026-12-01T05:00:00.000Z');
    expect(() => parseTime('tomorrow', now)).toThrow(/write an ISO time with a zone/);
    expect(() => parseTime('12/01/2026', now)).toThrow(/invalid time/);
  });

  it('counts versions v1, v2, ... unless told', () => {
    expect(nextVersion(undefined)).toBe('v1');
    expect(nextVersion('v1')).toBe('v2');
    expect(nextVersion('v41')).toBe('v42');
    expect(nextVersion('2026.11')).toBe('v1');
  });
});
