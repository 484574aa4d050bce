// Formatting shared by the pages: durations, states with a glyph and a word (never colour alone).

export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export function since(iso: string | undefined, now: number): string {
  if (!iso) return '—';
  return duration((now - Date.parse(iso)) / 1000);
}

export function percent(fraction: number | null | undefined): string {
  if (fraction === null || fraction === undefined) return '—';
  return `${(fraction * 100).toFixed(fraction > 0 && fraction < 0.1 ? 1 : 0)}%`;
}

/** Glyph + label per state: the glyph and the word carry the state, colour only repeats it. */
const STATES: Record<string, [string, string]> = {
  not_ready: ['◌', 'not ready'],
  pending: ['○', 'pending'],
  testing: ['◐', 'testing'],
  tests_passed: ['✓', 'tests passed'],
  pending_failure: ['!', 'pending failure'],
  merged: ['✔', 'merged'],
  failed: ['✖', 'failed'],
  cancelled: ['⊘', 'cancelled'],
  // queue states
  running: ['▶', 'running'],
  paused: ['‖', 'paused'],
  draining: ['⇣', 'draining'],
  switching_modes: ['⇄', 'switching modes'],
  // test runs and checks
  in_progress: ['◐', 'in progress'],
  succeeded: ['✔', 'succeeded'],
  SUCCESS: ['✔', 'success'],
  FAILURE: ['✖', 'failure'],
  PENDING: ['◐', 'pending'],
  // webhook endpoints (deliveries use pending / succeeded / failed)
  enabled: ['●', 'enabled'],
  disabled: ['⊘', 'disabled'],
  // flaky tests
  healthy: ['✔', 'healthy'],
  flaky: ['≈', 'flaky'],
  broken: ['✖', 'broken'],
  not_enough_runs: ['◌', 'not enough runs yet'],
};

export function stateGlyph(state: string | undefined): string {
  return STATES[state ?? '']?.[0] ?? '•';
}
export function stateLabel(state: string | undefined): string {
  return STATES[state ?? '']?.[1] ?? (state ?? 'unknown').replaceAll('_', ' ');
}

export function repoPath(repo: { host: string; owner: string; name: string }): string {
  return `${enc(repo.host)}/${enc(repo.owner)}/${enc(repo.name)}`;
}
export const enc = encodeURIComponent;

/**
 * `url` when it is an absolute http(s) URL, else null. Links built from stored settings (a ticket
 * URL template) are rendered only through this: a `javascript:` or `data:` URL would run in the
 * dashboard's page when clicked, whatever the server let through.
 */
export function safeHref(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

export { timeLeft } from '../../src/flaky/time-left.js';
