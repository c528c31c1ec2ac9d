/** An API error as the user needs it: the hub's message, and each invalid field on its own line. */
import { ApiError, NetworkError } from '../api.js';

export function ErrorBox(props: { error?: Error; title?: string }) {
  const e = props.error;
  if (!e) return null;
  const details = e instanceof ApiError ? e.details : undefined;
  const title =
    props.title ??
    (e instanceof NetworkError
      ? 'The hub cannot be reached'
      : e instanceof ApiError && e.code === 'invalid'
        ? 'The hub rejected it: nothing was changed'
        : e instanceof ApiError && e.code === 'conflict'
          ? 'Someone else changed it first'
          : 'Error');
  return (
    <div class="error-box" role="alert">
      <strong>{title}</strong>
      {details && details.length > 0 ? (
        <ul class="field-errors">
          {details.map((d, i) => (
            <li key={i}>
              {d.index !== undefined && <span class="muted">object {d.index + 1} · </span>}
              {d.path && <code>{d.path}</code>}
              {d.path && ': '}
              {d.message}
            </li>
          ))}
        </ul>
      ) : (
        <p>{e.message}</p>
      )}
    </div>
  );
}
