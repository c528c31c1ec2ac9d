/**
 * Data loading for pages: fetch on mount and whenever the live-update counter moves, keep showing
 * the previous data while refetching (no flicker on every change), never run two loads of the same
 * view at once (a burst of changes becomes one extra load), and refresh every 30 s for what
 * changes with time alone (last seen, Offline after missed heartbeats).
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, app, useApp } from './store.js';

export const PERIODIC_REFRESH_MS = 30_000;

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
}

export function useLoad<T>(load: ((signal: AbortSignal) => Promise<T>) | null, deps: unknown[]): Loaded<T> {
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
    const v: View = { ctl: new AbortController(), running: false, again: false };
    view.current = v;
    setState({ loading: !!loadRef.current });
    void run(v);
    return () => v.ctl.abort();
  }, deps);

  // Same view, something changed: refetch in place.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    if (view.current) void run(view.current);
  }, [tick, nonce]);

  useEffect(() => {
    const t = setInterval(() => {
      if (app.state.link === 'live' && view.current) void run(view.current);
    }, PERIODIC_REFRESH_MS);
    return () => clearInterval(t);
  }, []);

  return { ...state, reload: () => setNonce((n) => n + 1) };
}

/** GET a path with useLoad; `null` loads nothing. */
export function useGet<T>(path: string | null): Loaded<T> {
  return useLoad<T>(path ? (signal) => api.get<T>(path, signal) : null, [path]);
}

/** Runs an action, tracking busy and error, for buttons. */
export function useAction(): { busy: boolean; error?: Error; run(fn: () => Promise<unknown>): Promise<boolean>; clear(): void } {
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
