export function LabelChips(props: { labels?: Record<string, string>; max?: number }) {
  const entries = Object.entries(props.labels ?? {});
  if (entries.length === 0) return <span class="muted">none</span>;
  const max = props.max ?? entries.length;
  return (
    <ul class="chips" aria-label="labels">
      {entries.slice(0, max).map(([k, v]) => (
        <li key={k} class="chip">
          {k}={v}
        </li>
      ))}
      {entries.length > max && <li class="chip chip-more">+{entries.length - max}</li>}
    </ul>
  );
}
