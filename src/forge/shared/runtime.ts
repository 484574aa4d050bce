/**
 * What every forge driver that talks to a remote forge (GitHub, GitLab) keeps for its roles, one
 * object per server: the options every such driver has, the target heads seen and those the queue
 * put there itself, a small state file (`<dataDir>/<forge>/state.json`: comment or note ids, PRs
 * closed after landing; no secrets), the host that drives the queues, the work in flight, and one
 * `git fetch` at a time into each bare cache.
 * Each driver's runtime.ts extends it with its client and its bare caches.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { repoKey, type Repo } from '../../contract/index.js';
import { findEntry, type EngineEvent } from '../../engine/index.js';
import type { DriverHost, DriverQueue } from '../types.js';

export { repoKey };

/** Test branches: `railyard-merge/pr-<n>[-<n>…]/<runId>`. */
export const TEST_BRANCH_RE = /^railyard-merge\/pr-\d+(?:-\d+)*\/([^/]+)$/;

export interface RemoteDriverOptions {
  /** `<dataDir>/<forge>/` holds the bare caches and `state.json` (no secrets). */
  dataDir: string;
  /** Poll interval: target heads and test branches (git), the PRs in the queue and the CI of test commits, webhooks or not. */
  pollMs: number;
  /** With no requiredStatuses, a test commit with no check reported after this long fails (TEST_RUN_NO_CHECKS_REPORTED). */
  ciStartMs: number;
  /** The webhook secret; null = no webhooks, polling does their job. */
  webhookSecret: string | null;
  log?: (message: string, error?: unknown) => void;
}

/** A repository's bare cache and git against the forge with a current token. */
export interface RepoCtx {
  repo: Repo;
  dir: string;
  url: string;
  git: <T>(op: (dir: string, url: string, token: string) => Promise<T>) => Promise<T>;
}

/** The state kept on disk: always the comments (or notes) of the queue and the PRs it closed. */
export interface PersistedBase {
  /** `<org>\n<host>/<owner>/<name>#<n>` → id of the queue's comment (GitHub) or note (GitLab) on that PR. */
  comments: Record<string, number>;
  /** PRs the queue closed after landing them squashed or rebased. */
  closed: Record<string, true>;
}

export const defaultLog = (message: string, error?: unknown): void =>
  console.error(message, error instanceof Error ? error.message : (error ?? ''));

export abstract class RemoteRuntime<
  P extends PersistedBase,
  O extends RemoteDriverOptions = RemoteDriverOptions,
> {
  /** Target SHAs the queue put there itself, per repository. */
  private readonly ownHeads = new Map<string, Set<string>>();
  /** Last seen head of each target branch: `<repoKey> <branch>` → SHA. */
  readonly targetHeads = new Map<string, string>();
  /** The forge's refusal of a run's landing (its words), or its test commit's conflict, for the PRs' comments: run id → message. */
  readonly refusals = new Map<string, string>();
  /** A landing tried again after a blip, for the PRs' comments while they wait: run id → sentence. */
  readonly landingNotes = new Map<string, string>();
  /**
   * The commit each run's last landing attempt put (or tried to put) on the target: run id → SHA.
   * A retry after a blip finds there whether that attempt landed — in parallel mode it may be a
   * rebuild, which the target containing the run's test commit would not show.
   */
  private readonly tried = new Map<string, string>();
  /** Runs this server is building or waiting on (their test branches stay). */
  readonly busy = new Set<string>();
  /** The last fetch into each bare cache (settled, never failing): the next one waits for it. */
  private readonly fetching = new Map<string, Promise<void>>();
  readonly persisted: P;
  private readonly statePath: string;
  private saving: Promise<void> = Promise.resolve();
  private readonly inFlight = new Set<Promise<unknown>>();
  host: DriverHost | null = null;
  closed = false;
  readonly log: (message: string, error?: unknown) => void;

  constructor(
    readonly options: O,
    forgeDir: string,
    empty: P,
    /** Older state files name the comments differently (GitLab's `notes`). */
    upgrade: (read: Record<string, unknown>) => Partial<P> = (read) => read as Partial<P>,
  ) {
    this.log = options.log ?? defaultLog;
    this.statePath = join(options.dataDir, forgeDir, 'state.json');
    this.persisted = empty;
    if (existsSync(this.statePath)) {
      try {
        Object.assign(
          this.persisted,
          upgrade(JSON.parse(readFileSync(this.statePath, 'utf8')) as Record<string, unknown>),
        );
      } catch (error) {
        this.log(`${this.statePath}: unreadable, starting without it`, error);
      }
    }
  }

  /** Whether a repository is on the forge this driver serves. */
  abstract serves(repo: Repo): boolean;
  /** Whether the forge's API asked us to wait (rate limits): no reads until it is over. */
  abstract get paused(): boolean;
  /** The repository's bare cache and git against the forge. */
  abstract ctx(repo: Repo): Promise<RepoCtx>;
  /** Fetches the target branch and the heads of `prs` into the cache; returns the target head. */
  abstract fetch(c: RepoCtx, branch: string, prs: readonly number[]): Promise<string | null>;

  /**
   * Runs `fetch` (a `git fetch` into the bare cache `dir`, and reading what it fetched) once the
   * fetches into `dir` before it are over. Two fetches updating the same ref at once make one fail
   * ("cannot lock ref 'refs/heads/main': is at X but expected Y"), and the builder, the landing and
   * the push webhook all fetch the target: on a slow machine they overlap, and a landing whose
   * fetch failed failed its PRs (a PR GitHub had just merged through the merge API among them).
   */
  protected oneFetchAtATime<T>(dir: string, fetch: () => Promise<T>): Promise<T> {
    const mine = (this.fetching.get(dir) ?? Promise.resolve()).then(fetch);
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    this.fetching.set(dir, settled);
    void settled.then(() => {
      if (this.fetching.get(dir) === settled) this.fetching.delete(dir);
    });
    return mine;
  }

  get webhooks(): boolean {
    return this.options.webhookSecret !== null;
  }

  /** The queues this server drives. */
  queues(): DriverQueue[] {
    return this.host?.queues() ?? [];
  }

  /**
   * Whether a queue's entry of a PR is stale: the PR is based on another branch, whose queue (same
   * organisation and repository) holds it. A PR is in one queue at a time, so a stale entry writes
   * nothing to the forge (no status, no comment edit): the other queue's entry speaks for the PR.
   */
  stale(q: DriverQueue, prNumber: number): boolean {
    const e = findEntry(q.model, prNumber);
    if (!e || e.pr.baseBranch === q.model.branch) return false;
    const key = repoKey(q.repo);
    return this.queues().some(
      (o) =>
        o !== q &&
        o.id !== q.id &&
        o.org === q.org &&
        o.model.branch === e.pr.baseBranch &&
        repoKey(o.repo) === key &&
        findEntry(o.model, prNumber) !== undefined,
    );
  }

  dispatch(q: DriverQueue, event: EngineEvent): Promise<unknown> {
    return this.host ? this.host.dispatch(q, event) : Promise.resolve();
  }

  /** The driven queues of repositories on this forge, by repository key. */
  byRepo(): Map<string, DriverQueue[]> {
    const out = new Map<string, DriverQueue[]>();
    for (const q of this.queues()) {
      if (!this.serves(q.repo)) continue;
      const k = repoKey(q.repo);
      out.set(k, [...(out.get(k) ?? []), q]);
    }
    return out;
  }

  save(): void {
    const text = JSON.stringify(this.persisted);
    this.saving = this.saving
      .then(async () => {
        await mkdir(dirname(this.statePath), { recursive: true });
        await writeFile(`${this.statePath}.tmp`, text);
        await rename(`${this.statePath}.tmp`, this.statePath);
      })
      .catch((error: unknown) => this.log(`saving ${this.statePath} failed`, error));
  }

  track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p)).catch(() => undefined);
    return p;
  }

  own(repo: Repo): Set<string> {
    const key = repoKey(repo);
    let set = this.ownHeads.get(key);
    if (!set) this.ownHeads.set(key, (set = new Set()));
    return set;
  }

  /** Remembers the commit a landing of `runId` is about to put on the target (bounded). */
  landing(runId: string, sha: string): void {
    if (this.tried.size > 1000) this.tried.delete(this.tried.keys().next().value!);
    this.tried.set(runId, sha);
  }

  /** The commit the last landing attempt of `runId` put or tried to put on the target, if any. */
  triedToLand(runId: string): string | undefined {
    return this.tried.get(runId);
  }

  /**
   * A landing blip of `runId` to show on its PRs (Reporter.landingNote): while it is tried again in
   * `landingNotes`; once given up as the run's refusal (shown with the failure). True when the PRs'
   * comments should be written again now.
   */
  landingNote(runId: string, note: string, final: boolean): boolean {
    if (final) {
      this.landingNotes.delete(runId);
      this.refused(runId, note);
      return false; // the failure's state change writes it
    }
    if (this.landingNotes.size > 1000) this.landingNotes.delete(this.landingNotes.keys().next().value!);
    this.landingNotes.set(runId, note);
    return true;
  }

  /** Remembers a refusal of the forge for a run (bounded). */
  refused(runId: string, message: string): void {
    if (this.refusals.size > 1000) this.refusals.delete(this.refusals.keys().next().value!);
    this.refusals.set(runId, message);
  }

  /** Waits for the work in flight (after close()). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    await this.saving;
  }
}
