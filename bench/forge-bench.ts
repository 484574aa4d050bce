/**
 * What the forge benchmarks (bench/github.ts, bench/gitlab.ts) share: sampling when a test commit's
 * CI went green and how long the target took to move to it, waiting until the forge emulator has
 * been quiet (status and comment updates go on after the last landing), counting requests per
 * route and deliveries per event, percentiles, and printing the common lines.
 */

/** A forge emulator as the benches read it. */
export interface BenchEmulator {
  readonly requests: ReadonlyArray<{ method: string; path: string; status: number }>;
  readonly deliveries: ReadonlyArray<{ event: string }>;
}

/** `p`-th percentile of `xs` (NaN when empty). */
export const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN;
};

/** A request's route: SHAs and numbers replaced, so requests of one kind count together. */
export function routeOf(method: string, path: string): string {
  return `${method} ${path
    .replace(/\/api\/v3/, '')
    .replace(/[0-9a-f]{40}/g, '{sha}')
    .replace(/\/\d+(\/|$)/g, '/{n}$1')
    .replace(/heads\/[^/]+$/, 'heads/{branch}')}`;
}

/**
 * Samples every 20 ms: when each pushed test commit went green (`green(sha)`), and, when the
 * target moved to a green commit, how long after it went green. Call `stop()` for the latencies.
 */
export function sampleGreenToLanded(
  pushedTest: ReadonlySet<string>,
  green: (sha: string) => boolean,
  target: () => Promise<string | null>,
): { stop(): Promise<number[]> } {
  const greenAt = new Map<string, number>();
  const latencies: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    let last = await target();
    while (sampling) {
      const now = Date.now();
      for (const sha of pushedTest) if (!greenAt.has(sha) && green(sha)) greenAt.set(sha, now);
      const head = await target();
      if (head && head !== last) {
        last = head;
        const g = greenAt.get(head);
        if (g !== undefined) latencies.push(Date.now() - g);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    async stop() {
      sampling = false;
      await sampler;
      return latencies;
    },
  };
}

/**
 * Waits for a PR to settle without making the forge work for it: watches the emulator (free) until
 * the PR is closed there (`closedOnForge`: merged or closed), asking the server (`settledNow`) only
 * then, and every 5 s for a PR that stays open (a failed one). Asking the server every 100 ms, as
 * the e2e tests' waitFor does, reads the PR on the forge at every call past the server's freshness
 * window: requests of the bench's client, not of the queue.
 */
export async function settledQuietly<T>(
  closedOnForge: () => boolean,
  settledNow: () => Promise<T | null>,
  timeoutMs = 300_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let asked = Date.now(); ; await new Promise((r) => setTimeout(r, 50))) {
    if (closedOnForge() || Date.now() - asked >= 5000) {
      asked = Date.now();
      const done = await settledNow();
      if (done) return done;
    }
    if (Date.now() > deadline) throw new Error('timed out waiting for a PR to settle');
  }
}

/** Waits until the emulator received no request for 3 s. */
export async function quiet(emu: BenchEmulator): Promise<void> {
  for (
    let seen = -1, quietSince = Date.now();
    Date.now() - quietSince < 3000;
    await new Promise((r) => setTimeout(r, 200))
  )
    if (emu.requests.length !== seen) [seen, quietSince] = [emu.requests.length, Date.now()];
}

/** Requests per route (with how many answered each status, e.g. `GET /x [200 12, 304 30]`) and deliveries per event. */
export function tally(emu: BenchEmulator): { byRoute: Map<string, number>; events: Map<string, number> } {
  const counts = new Map<string, Map<number, number>>();
  for (const r of emu.requests) {
    const route = routeOf(r.method, r.path);
    const by = counts.get(route) ?? new Map<number, number>();
    by.set(r.status, (by.get(r.status) ?? 0) + 1);
    counts.set(route, by);
  }
  const byRoute = new Map<string, number>();
  for (const [route, by] of counts) {
    const statuses = [...by].sort((a, b) => a[0] - b[0]);
    byRoute.set(
      `${route} [${statuses.map(([s, n]) => `${s} ${n}`).join(', ')}]`,
      statuses.reduce((t, [, n]) => t + n, 0),
    );
  }
  const events = new Map<string, number>();
  for (const d of emu.deliveries) events.set(d.event, (events.get(d.event) ?? 0) + 1);
  return { byRoute, events };
}

/** The lines every forge bench prints: what merged, green → landed, deliveries, and requests per route. */
export function report(
  f: {
    mode: string;
    merged: number;
    wallMs: number;
    latencies: number[];
    byRoute: Map<string, number>;
    events: Map<string, number>;
  },
  of: number,
  words: { check: string; deliveries: string },
  more: string[],
): void {
  console.log(`\n${f.mode}: ${f.merged}/${of} merged in ${(f.wallMs / 1000).toFixed(1)} s`);
  for (const line of more) console.log(`  ${line}`);
  console.log(
    `  last ${words.check} green -> target moved: p50 ${pct(f.latencies, 50)} ms, max ${Math.max(...f.latencies)} ms (${f.latencies.length} landings)`,
  );
  if (f.events.size)
    console.log(`  ${words.deliveries}: ${[...f.events].map(([e, n]) => `${e} ${n}`).join(', ')}`);
  for (const [route, n] of [...f.byRoute].sort((a, b) => b[1] - a[1]))
    console.log(`    ${String(n).padStart(4)}  ${route}`);
}
