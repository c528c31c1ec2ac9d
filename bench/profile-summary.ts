/**
 * @module `npx tsx bench/profile-summary.ts FILE.cpuprofile [N]`: the top N functions of a V8 CPU
 * profile (from `npm run bench -- --profile-hub`) by self time and by inclusive time, with the
 * file and line, so a miss in docs/benchmarks.md can cite where the hub spent its CPU.
 */
import fs from 'node:fs';
import path from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * Busy (non-idle) milliseconds per second of the profile, so the phases of a run (enrollment,
 * connect, the measured change) can be told apart and one of them summarized with a window.
 */
export function timeline(profile: Profile): number[] {
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const busy: number[] = [];
  let t = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    const s = Math.floor(t / 1e6);
    busy[s] = (busy[s] ?? 0) + (idle.has(profile.samples[i]) ? 0 : (profile.timeDeltas[i] ?? 0) / 1000);
  }
  return Array.from(busy, (v) => Math.round(v ?? 0));
}

/** `window`: [from, to) in seconds since the profile started; samples outside it are ignored. */
export function summarize(
  profile: Profile,
  top = 25,
  window?: [number, number],
): { totalMs: number; self: [string, number][]; inclusive: [string, number][] } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  let t = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (window && (t < window[0] * 1e6 || t >= window[1] * 1e6)) continue;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const key = (n: Node) =>
    `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url ? `${path.relative(process.cwd(), n.callFrame.url.replace(/^file:\/\//, ''))}:${n.callFrame.lineNumber + 1}` : ''}`.trim();
  const self = new Map<string, number>();
  for (const [id, us] of selfUs) self.set(key(byId.get(id)!), (self.get(key(byId.get(id)!)) ?? 0) + us);
  // Inclusive: walk the tree once, counting each function at most once per stack.
  const parents = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parents.set(c, n.id);
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parents.get(cur)) {
      const k = key(byId.get(cur)!);
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + us);
    }
  }
  const sorted = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => [k, Math.round(v / 1000)] as [string, number]);
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  return { totalMs: Math.round(total / 1000), self: sorted(self), inclusive: sorted(inclusive) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: npx tsx bench/profile-summary.ts FILE.cpuprofile [TOP] [FROM_S TO_S]\n');
    process.exit(2);
  }
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  process.stdout.write(`busy ms per second: ${timeline(profile).join(' ')}\n`);
  const window = process.argv[5] ? ([Number(process.argv[4]), Number(process.argv[5])] as [number, number]) : undefined;
  const s = summarize(profile, Number(process.argv[3] ?? 25), window);
  process.stdout.write(`profile ${file}: ${s.totalMs} ms sampled\n\nself time (ms):\n`);
  for (const [k, v] of s.self) process.stdout.write(`  ${String(v).padStart(7)}  ${k}\n`);
  process.stdout.write('\ninclusive time (ms):\n');
  for (const [k, v] of s.inclusive) process.stdout.write(`  ${String(v).padStart(7)}  ${k}\n`);
}
