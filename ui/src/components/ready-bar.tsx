/** READY x/y at a glance: a bar filled by the ready share, the count in text, and the worst state named. */
import type { Summary } from '../types.js';
import { Badge, byRank } from './badge.js';

export function ReadyBar(props: {
  summary: Pick<Summary, 'ready' | 'total' | 'states' | 'worst'>;
  label: string;
  compact?: boolean;
}) {
  const { ready, total, worst, states } = props.summary;
  const pct = total === 0 ? 0 : Math.round((ready / total) * 100);
  const breakdown = byRank(states ?? {})
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');
  return (
    <div class="ready">
      <div class="ready-line">
        <span class="ready-count">
          READY {ready}/{total}
        </span>
        {worst && worst !== 'Ready' && <Badge value={worst} title={`worst state: ${worst}`} />}
      </div>
      <div
        class={`bar ${ready === total && total > 0 ? 'bar-full' : ''} ${worst && ['Degraded', 'Failed', 'Error'].includes(worst) ? 'bar-bad' : ''}`}
        role="progressbar"
        aria-label={`${props.label}: ${ready} of ${total} ready`}
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={ready}
        aria-valuetext={`${ready} of ${total} ready${breakdown ? ` (${breakdown})` : ''}`}
      >
        <div class="bar-fill" style={{ width: `${pct}%` }} />
      </div>
      {!props.compact && breakdown && <div class="ready-breakdown">{breakdown}</div>}
    </div>
  );
}
