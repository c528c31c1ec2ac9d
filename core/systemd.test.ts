import { describe, expect, it } from 'vitest';
import { environment, execLine, parseUnit, quoteArg, renderUnit, splitExecLine, unitPath } from './systemd.js';

describe('systemd unit rendering', () => {
  it('quotes ExecStart arguments so systemd gives the program exactly what was asked', () => {
    const argv = [
      '/usr/local/bin/outpost',
      'hub',
      '--data',
      '/var/lib/outpost hub',
      '--host',
      'a"b',
      'x\\y',
      '100%',
      '$HOME',
      '',
    ];
    const line = execLine(argv);
    // systemd would expand these: they must be escaped, never passed through.
    expect(line).toContain('100%%');
    expect(line).toContain('$$HOME');
    expect(line).not.toMatch(/[^$]\$HOME/);
    expect(splitExecLine(line)).toEqual(argv);
    expect(quoteArg('/var/lib/outpost-hub')).toBe('/var/lib/outpost-hub');
  });

  it('refuses what would break a unit file: line breaks, relative programs, spaces in path lists', () => {
    expect(() => quoteArg('a\nExecStartPre=/bin/rm')).toThrow(/line break/);
    expect(() => execLine(['outpost', 'hub'])).toThrow(/absolute/);
    expect(() => unitPath('--data', '/var/lib/my data')).toThrow(/without spaces/);
    expect(() => unitPath('--data', 'data')).toThrow(/absolute/);
    expect(() => environment('BAD NAME', 'x')).toThrow(/not valid/);
  });

  it('renders sections in order with comments, and parses back to the same settings', () => {
    const text = renderUnit({
      header: ['made by a test'],
      sections: {
        Unit: [['Description', 'x']],
        Service: [
          { comment: 'why' },
          ['ExecStart', execLine(['/bin/true', 'a b'])],
          ['Environment', environment('K', 'v "q" 50%')],
          ['ReadWritePaths', '/a /b'],
        ],
        Install: [['WantedBy', 'multi-user.target']],
      },
    });
    expect(text.split('\n').slice(0, 4)).toEqual(['# made by a test', '', '[Unit]', 'Description=x']);
    expect(text).toContain('# why\nExecStart=/bin/true "a b"\n');
    expect(text.endsWith('\n')).toBe(true);
    const u = parseUnit(text);
    expect(u.Service.Environment).toEqual(['"K=v \\"q\\" 50%%"']);
    expect(u.Service.ReadWritePaths).toEqual(['/a /b']);
    expect(u.Install.WantedBy).toEqual(['multi-user.target']);
  });
});
