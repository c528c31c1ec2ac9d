/**
 * The manifest editor: YAML in a plain textarea (the keyboard works as everywhere; Tab leaves it),
 * a syntax check as you type with the hub's own parser, a diff of what you changed, and Apply.
 * Apply goes to `POST /api/v1/apply`, which validates every object before it changes any: a 422
 * comes back with one `{path, message}` per invalid field, shown under the editor, and nothing is
 * changed. resourceVersion in the text makes a concurrent change a 409 instead of a silent overwrite.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { enc } from '../api.js';
import { api, app } from '../store.js';
import type { ApplyResponse } from '../types.js';
import { checkYaml } from '../yaml.js';
import { DiffView } from './diff-view.js';
import { ErrorBox } from './error-box.js';

export function YamlEditor(props: {
  initial: string;
  project: string;
  title: string;
  onApplied(r: ApplyResponse): void;
  onCancel?(): void;
  allowUnchanged?: boolean;
}) {
  const [text, setText] = useState(props.initial);
  const [checked, setChecked] = useState(() => checkYaml(props.initial));
  const [review, setReview] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  useEffect(() => {
    const t = setTimeout(() => setChecked(checkYaml(text)), 250);
    return () => clearTimeout(t);
  }, [text]);
  const changed = text !== props.initial;
  const canApply = checked.ok && (changed || !!props.allowUnchanged) && !busy;
  const summary = useMemo(() => {
    if (!checked.ok) return '';
    return checked.objects
      .map(
        (o) =>
          `${(o as { kind?: string }).kind ?? '?'} ${(o as { metadata?: { name?: string } }).metadata?.name ?? '?'}`,
      )
      .join(', ');
  }, [checked]);

  const apply = async () => {
    const now = checkYaml(text);
    setChecked(now);
    if (!now.ok) return;
    setBusy(true);
    setError(undefined);
    try {
      const r = await api.post<ApplyResponse>(`/api/v1/apply?project=${enc(props.project)}`, text, 'application/yaml');
      app.bump();
      props.onApplied(r);
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  };

  const id = `yaml-${props.title.replace(/\W+/g, '-')}`;
  return (
    <div class="editor">
      <label for={id} class="editor-label">
        {props.title}
      </label>
      <textarea
        id={id}
        class="code"
        spellcheck={false}
        autocapitalize="off"
        autocomplete="off"
        rows={Math.min(30, Math.max(12, text.split('\n').length + 2))}
        value={text}
        aria-describedby={`${id}-check`}
        aria-invalid={!checked.ok}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
      />
      <p id={`${id}-check`} class={checked.ok ? 'check ok' : 'check bad'} aria-live="polite">
        {checked.ok ? `YAML is well-formed: ${summary}` : `YAML error: ${checked.message}`}
      </p>
      <div class="actions">
        <button type="button" class="btn primary" disabled={!canApply} onClick={apply}>
          {busy ? 'Applying…' : 'Validate and apply'}
        </button>
        <button type="button" class="btn" aria-expanded={review} disabled={!changed} onClick={() => setReview(!review)}>
          {review ? 'Hide changes' : 'Review changes'}
        </button>
        {props.onCancel && (
          <button type="button" class="btn ghost" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
      <ErrorBox error={error} />
      {review && changed && <DiffView before={props.initial} after={text} label="your changes" />}
    </div>
  );
}
