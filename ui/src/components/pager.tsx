/** Previous/next over the API's `continue` cursors; the page stack lives in the caller. */
export function Pager(props: {
  page: number;
  hasNext: boolean;
  onPrev(): void;
  onNext(): void;
  shown: number;
  label: string;
}) {
  return (
    <nav class="pager" aria-label={`${props.label} pages`}>
      <button type="button" class="btn" disabled={props.page === 0} onClick={props.onPrev}>
        ← Previous
      </button>
      <span aria-live="polite">
        Page {props.page + 1} · {props.shown} shown
      </span>
      <button type="button" class="btn" disabled={!props.hasNext} onClick={props.onNext}>
        Next →
      </button>
    </nav>
  );
}
