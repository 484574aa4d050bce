// Hash routes: the page never puts the token (or anything secret) in a URL.
import { useEffect, useState } from 'preact/hooks';
import type { Repo } from './api.js';

export type Route =
  | { page: 'queues' }
  | { page: 'queue'; repo: Repo; branch: string }
  | { page: 'pr'; repo: Repo; branch: string; number: number }
  | { page: 'flaky'; repo: Repo | null; testId: string | null }
  | { page: 'throughput' }
  | { page: 'webhooks'; endpoint: string | null }
  | { page: 'missing'; path: string };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const repo = (i: number): Repo => ({ host: parts[i], owner: parts[i + 1], name: parts[i + 2] });
  if (parts.length === 0) return { page: 'queues' };
  if (parts[0] === 'queue' && parts.length === 5) return { page: 'queue', repo: repo(1), branch: parts[4] };
  if (parts[0] === 'pr' && parts.length === 6 && /^\d+$/.test(parts[5]))
    return { page: 'pr', repo: repo(1), branch: parts[4], number: Number(parts[5]) };
  if (parts[0] === 'flaky' && parts.length === 1) return { page: 'flaky', repo: null, testId: null };
  if (parts[0] === 'flaky' && parts.length === 4) return { page: 'flaky', repo: repo(1), testId: null };
  if (parts[0] === 'flaky' && parts.length === 6 && parts[4] === 'test')
    return { page: 'flaky', repo: repo(1), testId: parts[5] };
  if (parts[0] === 'throughput') return { page: 'throughput' };
  if (parts[0] === 'webhooks' && parts.length <= 2) return { page: 'webhooks', endpoint: parts[1] ?? null };
  return { page: 'missing', path: hash };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    // The hash may have changed between the first render and this effect.
    on();
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}
