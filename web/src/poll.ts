import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';

export interface Polled<T> {
  data: T | null;
  error: string | null;
  /** When the last answer arrived (ms). */
  at: number;
  reload(): void;
}

/**
 * Calls `load` now and then every `intervalMs` after the previous answer (never two at once),
 * while the page shows; `deps` restart it.
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, deps: unknown[]): Polled<T> {
  const [state, setState] = useState<{ data: T | null; error: string | null; at: number }>({
    data: null,
    error: null,
    at: 0,
  });
  const kick = useRef<() => void>(() => {});
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setState({ data: null, error: null, at: 0 });
    const run = async () => {
      clearTimeout(timer);
      try {
        const data = await load();
        // The same object again (nothing changed): no re-render.
        if (!stopped)
          setState((s) => (s.data === data && s.error === null ? s : { data, error: null, at: Date.now() }));
      } catch (error) {
        if (!stopped)
          setState((s) => ({
            ...s,
            error: error instanceof ApiError ? error.message : String(error),
            at: Date.now(),
          }));
      }
      if (!stopped && intervalMs > 0) timer = setTimeout(run, intervalMs);
    };
    kick.current = () => void run();
    void run();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, deps);
  return { ...state, reload: () => kick.current() };
}

/** Re-renders every `ms` (for "time in queue" clocks). */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
