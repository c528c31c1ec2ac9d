/**
 * Edges online over time as an SVG step chart. The numbers behind it are also in the accessible
 * name (min, max, now) and in a visually hidden table for screen readers.
 */
import { dateTime } from '../format.js';

export interface ChartPoint {
  t: string;
  online: number;
}

const W = 640;
const H = 180;
const PAD = { l: 40, r: 12, t: 12, b: 28 };

/** A "nice" top for the y axis: 1, 2, 5 times a power of ten, at least `max`. */
export function niceMax(max: number): number {
  if (max <= 4) return Math.max(1, max);
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

export function chartPath(points: ChartPoint[], top: number): { line: string; area: string } {
  if (points.length === 0) return { line: '', area: '' };
  const t0 = Date.parse(points[0].t);
  const t1 = Date.parse(points[points.length - 1].t);
  const x = (t: string) => PAD.l + ((Date.parse(t) - t0) / Math.max(1, t1 - t0)) * (W - PAD.l - PAD.r);
  const y = (v: number) => PAD.t + (1 - v / top) * (H - PAD.t - PAD.b);
  let line = `M${x(points[0].t).toFixed(1)},${y(points[0].online).toFixed(1)}`;
  for (let i = 1; i < points.length; i++) line += `H${x(points[i].t).toFixed(1)}V${y(points[i].online).toFixed(1)}`;
  const area = `${line}V${y(0).toFixed(1)}H${x(points[0].t).toFixed(1)}Z`;
  return { line, area };
}

const hhmm = (t: string) => dateTime(t).slice(11, 16);

export function OnlineChart(props: { points: ChartPoint[]; total: number; hours: number }) {
  const pts = props.points;
  const values = pts.map((p) => p.online);
  const max = Math.max(0, ...values);
  const top = niceMax(Math.max(max, props.total));
  const { line, area } = chartPath(pts, top);
  const now = values[values.length - 1] ?? 0;
  const summary = `Edges online over the last ${props.hours} hours: between ${Math.min(...values, now)} and ${max}, now ${now} of ${props.total}.`;
  const ticks = [0, top / 2, top];
  const xTicks = pts.length ? [pts[0], pts[Math.floor(pts.length / 2)], pts[pts.length - 1]] : [];
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary} preserveAspectRatio="none">
        {ticks.map((v) => {
          const y = PAD.t + (1 - v / top) * (H - PAD.t - PAD.b);
          return (
            <g key={v}>
              <line x1={PAD.l} x2={W - PAD.r} y1={y} y2={y} class="grid" />
              <text x={PAD.l - 6} y={y + 4} text-anchor="end" class="axis">
                {Number.isInteger(v) ? v : v.toFixed(1)}
              </text>
            </g>
          );
        })}
        {xTicks.map((p, i) => (
          <text
            key={i}
            x={i === 0 ? PAD.l : i === 1 ? (W + PAD.l - PAD.r) / 2 : W - PAD.r}
            y={H - 8}
            text-anchor={i === 0 ? 'start' : i === 1 ? 'middle' : 'end'}
            class="axis"
          >
            {i === 2 ? 'now' : hhmm(p.t)}
          </text>
        ))}
        <path d={area} class="area" />
        <path d={line} class="line" />
      </svg>
      <figcaption>{summary}</figcaption>
      <table class="sr-only">
        <caption>Edges online</caption>
        <thead>
          <tr>
            <th scope="col">time</th>
            <th scope="col">online</th>
          </tr>
        </thead>
        <tbody>
          {pts
            .filter((_, i) => i % 6 === 0 || i === pts.length - 1)
            .map((p) => (
              <tr key={p.t}>
                <td>{dateTime(p.t)}</td>
                <td>{p.online}</td>
              </tr>
            ))}
        </tbody>
      </table>
    </figure>
  );
}
