import { diffLines, diffStats, withContext } from '../diff.js';

export function DiffView(props: { before: string; after: string; label: string; context?: number }) {
  const lines = diffLines(props.before, props.after);
  const { added, removed } = diffStats(lines);
  if (added === 0 && removed === 0) return <p class="muted">No differences.</p>;
  const shown = withContext(lines, props.context ?? 3);
  return (
    <div class="diff" role="region" aria-label={props.label}>
      <p class="diff-stats">
        <span class="add">+{added}</span> <span class="del">−{removed}</span> lines
      </p>
      <pre class="code">
        {shown.map((l, i) =>
          l === null ? (
            <div key={i} class="diff-gap" aria-label="unchanged lines omitted">
              ⋯
            </div>
          ) : (
            <div key={i} class={`diff-${l.op}`}>
              <span class="ln" aria-hidden="true">
                {l.a ?? ''}
              </span>
              <span class="ln" aria-hidden="true">
                {l.b ?? ''}
              </span>
              <span class="sign">{l.op === 'add' ? '+' : l.op === 'del' ? '−' : ' '}</span>
              {l.text}
            </div>
          ),
        )}
      </pre>
    </div>
  );
}
