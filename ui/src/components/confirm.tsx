/**
 * A button for actions that change the fleet: the first press asks, in place, for confirmation
 * (focus moves to the confirm button; Escape or Cancel returns), the second does it.
 */
import { useEffect, useRef, useState } from 'preact/hooks';

export function ConfirmButton(props: {
  label: string;
  confirm: string;
  confirmLabel?: string;
  onConfirm(): Promise<unknown> | void;
  busy?: boolean;
  danger?: boolean;
  class?: string;
}) {
  const [asking, setAsking] = useState(false);
  const yes = useRef<HTMLButtonElement>(null);
  const opener = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) yes.current?.focus();
  }, [asking]);
  const cancel = () => {
    setAsking(false);
    setTimeout(() => opener.current?.focus(), 0);
  };
  if (!asking) {
    return (
      <button
        type="button"
        ref={opener}
        class={props.class ?? (props.danger ? 'btn danger' : 'btn')}
        disabled={props.busy}
        onClick={() => setAsking(true)}
      >
        {props.label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={props.confirm} onKeyDown={(e) => e.key === 'Escape' && cancel()}>
      <span class="confirm-q">{props.confirm}</span>
      <button
        type="button"
        ref={yes}
        class={props.danger ? 'btn danger' : 'btn primary'}
        disabled={props.busy}
        onClick={async () => {
          await props.onConfirm();
          setAsking(false);
        }}
      >
        {props.confirmLabel ?? props.label}
      </button>
      <button type="button" class="btn ghost" onClick={cancel}>
        Cancel
      </button>
    </span>
  );
}
