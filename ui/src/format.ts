/** Small formatting helpers shared by the pages. Pure: tested in format.test.ts. */

/** `42s`, `5m`, `3h 2m`, `4d 1h` for a duration in milliseconds. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60 && m < 10 ? ` ${s % 60}s` : ''}`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${m % 60 ? ` ${m % 60}m` : ''}`;
  const d = Math.floor(h / 24);
  return `${d}d${h % 24 ? ` ${h % 24}h` : ''}`;
}

/** "5m ago" for a past ISO time (or epoch ms); "just now" under 2 s. */
export function ago(t: string | number | undefined, now = Date.now()): string {
  if (t === undefined) return 'never';
  const ms = now - (typeof t === 'number' ? t : Date.parse(t));
  if (Number.isNaN(ms)) return 'unknown';
  if (ms < 2000) return 'just now';
  return `${duration(ms)} ago`;
}

/** Local date and time, to the second, without the locale's guesswork about the year. */
export function dateTime(t: string | number): string {
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function bytes(n: number | undefined): string {
  if (n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 10 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}

/** JSON for a value shown inline (overrides, set values): short and unambiguous. */
export function inlineValue(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}
