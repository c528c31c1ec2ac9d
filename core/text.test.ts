import { describe, expect, it } from 'vitest';
import { visibleText } from './text.js';

describe('visibleText', () => {
  it('writes control characters as escapes a person can read', () => {
    expect(visibleText('a\u001b[2J\nb')).toBe('a\\x1b[2J\\nb');
    expect(visibleText('\r\t\u0000\u0007\u007f\u009b')).toBe('\\r\\t\\x00\\x07\\x7f\\x9b');
    // Line separators and bidirectional overrides (a name that reads backwards).
    expect(visibleText('x\u2028y\u202egpj.exe')).toBe('x\\u2028y\\u202egpj.exe');
  });

  it('leaves other text alone, backslashes too, so escaping twice changes nothing', () => {
    for (const s of ['clips/0001.mp4', 'café ✓ 日本', 'C:\\dir\\x1b', '']) expect(visibleText(s)).toBe(s);
    const once = visibleText('a\u001b[2J\nb');
    expect(visibleText(once)).toBe(once);
  });

  it('keeps the layout characters asked for', () => {
    expect(visibleText('l1\r\n\u001b[32mok\tl2', '\n\r\t')).toBe('l1\r\n\\x1b[32mok\tl2');
    expect(visibleText('a\tb\nc', '\t')).toBe('a\tb\\nc');
  });
});
