/**
 * Data loading for pages: fetch on mount and whenever the live-update counter moves, keep showing
 * the previous data while refetching (no flicker on every change), never run two loads of the same
 * view at once (a burst of changes becomes one extra load), and refresh every 30 s for what
 * changes with time alone (last seen, Offline after missed heartbeats).
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, app, useApp } from './store.js';

export const PERIODIC_REFRESH_MS = 30_000;
/**
 * A view reloads at most this often on live changes (the last change is never dropped): a large
 * fleet reports all the time, and each reload of a list page costs the hub a page of statuses.
 */
export const MIN_RELOAD_MS = 1_000;

export interface Loaded<T> {
  data?: T;
  error?: Error;
  loading: boolean;
  reload(): void;
}

interface View {
  ctl: AbortController;
  running: boolean;
  again: boolean;
  lastStart: number;
  timer?: ReturnType<typeof setTimeout>;
}

/** `live: false` skips live-change reloads (the periodic refresh still runs): for costly views such as history. */
export function useLoad<T>(
  load: ((signal: AbortSignal) => Promise<T>) | null,
  deps: unknown[],
  opts: { live?: boolean } = {},
): Loaded<T> {
  const { tick } = useApp();
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: !!load });
  const [nonce, setNonce] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const view = useRef<View>();

  const run = useCallback(async (v: View) => {
    const fn = loadRef.current;
    if (!fn) return;
    if (v.running) {
      v.again = true;
      return;
    }
    v.running = true;
    setState((s) => ({ ...s, loading: true }));
    try {
      do {
        v.again = false;
        v.lastStart = Date.now();
        const data = await fn(v.ctl.signal);
        if (v.ctl.signal.aborted) return;
        setState({ data, loading: false });
      } while (v.again && !v.ctl.signal.aborted);
    } catch (err) {
      if (v.ctl.signal.aborted || (err as Error).name === 'AbortError') return;
      setState((s) => ({ data: s.data, error: err as Error, loading: false }));
    } finally {
      v.running = false;
    }
  }, []);

  // A new view (deps): start over, dropping the old data.
  useEffect(() => {
    const v: View = { ctl: new AbortController(), running: false, again: false, lastStart: 0 };
    view.current = v;
    setState({ loading: !!loadRef.current });
    void run(v);
    return () => {
      v.ctl.abort();
      clearTimeout(v.timer);
    };
  }, deps);

  // Same view, something changed: refetch in place, throttled.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    const v = view.current;
    if (!v || v.timer || opts.live === false) return;
    const wait = v.lastStart + MIN_RELOAD_MS - Date.now();
    if (wait <= 0) void run(v);
    else
      v.timer = setTimeout(() => {
        v.timer = undefined;
        void run(v);
      }, wait);
  }, [tick]);

  // An explicit reload (after an action) runs at once.
  useEffect(() => {
    if (nonce > 0 && view.current) void run(view.current);
  }, [nonce]);

  useEffect(() => {
    const t = setInterval(() => {
      if (app.state.link === 'live' && view.current) void run(view.current);
    }, PERIODIC_REFRESH_MS);
    return () => clearInterval(t);
  }, []);

  return { ...state, reload: () => setNonce((n) => n + 1) };
}

/** GET a path with useLoad; `null` loads nothing. */
export function useGet<T>(path: string | null, opts: { live?: boolean } = {}): Loaded<T> {
  return useLoad<T>(path ? (signal) => api.get<T>(path, signal) : null, [path], opts);
}

/** Runs an action, tracking busy and error, for buttons. */
export function useAction(): {
  busy: boolean;
  error?: Error;
  run(fn: () => Promise<unknown>): Promise<boolean>;
  clear(): void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  return {
    busy,
    error,
    clear: () => setError(undefined),
    run: async (fn) => {
      setBusy(true);
      setError(undefined);
      try {
        await fn();
        app.bump();
        return true;
      } catch (err) {
        setError(err as Error);
        return false;
      } finally {
        setBusy(false);
      }
    },
  };
}
