/**
 * What the roles of the GitHub driver share (one object per server): the options, the bare cache
 * of each repository and git with a current token, the target heads seen and those the queue put
 * there itself, the state kept on disk (`<dataDir>/github/state.json`: comment ids, draft PRs,
 * PRs closed after landing; no secrets), the host that drives the queues, and the work in flight.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { repoKey, type Repo } from '../../contract/index.js';
import type { EngineEvent } from '../../engine/index.js';
import { headOf } from '../git/index.js';
import type { DriverHost, DriverQueue } from '../types.js';
import type { GitHubForge } from './forge.js';
import { ensureCache, fetchRefs } from './git.js';

export interface GitHubDriverOptions {
  /** `<dataDir>/github/` holds the bare caches and `state.json` (comment ids, draft PRs; no secrets). */
  dataDir: string;
  /** Poll interval: target heads and test branches always (git), PRs and CI too when there is no webhook secret. */
  pollMs: number;
  /** With no requiredStatuses, a test commit with no check reported after this long fails (TEST_RUN_NO_CHECKS_REPORTED). */
  ciStartMs: number;
  /** The webhook secret; null = no webhooks, polling does their job. */
  webhookSecret: string | null;
  log?: (message: string, error?: unknown) => void;
}

/** A repository's bare cache and git against GitHub. */
export interface RepoCtx {
  owner: string;
  name: string;
  dir: string;
  url: string;
  /** Runs a git command against GitHub with a current token (renewed once if GitHub refuses it). */
  git: <T>(op: (dir: string, url: string, token: string) => Promise<T>) => Promise<T>;
}

interface Persisted {
  /** `<org>\n<host>/<owner>/<name>#<n>` → id of the queue's comment on that PR. */
  comments: Record<string, number>;
  /** Test run id → number of its draft PR (open until the run ends). */
  draftPrs: Record<string, { repo: string; number: number }>;
  /** PRs the queue closed after landing them squashed or rebased. */
  closed: Record<string, true>;
}

export { repoKey };

/** Test branches: `railyard-merge/pr-<n>[-<n>…]/<runId>`. */
export const TEST_BRANCH_RE = /^railyard-merge\/pr-\d+(?:-\d+)*\/([^/]+)$/;

export class GitHubRuntime {
  /** Target SHAs the queue put there itself, per repository. */
  private readonly ownHeads = new Map<string, Set<string>>();
  /** Last seen head of each target branch: `<repoKey> <branch>` → SHA. */
  readonly targetHeads = new Map<string, string>();
  /** GitHub's refusal of a run's landing (its words), for the PRs' comments: run id → message. */
  readonly refusals = new Map<string, string>();
  /** Runs this server is building or waiting on (their test branches stay). */
  readonly busy = new Set<string>();
  readonly persisted: Persisted;
  private readonly statePath: string;
  private saving: Promise<void> = Promise.resolve();
  private readonly inFlight = new Set<Promise<unknown>>();
  host: DriverHost | null = null;
  closed = false;
  readonly log: (message: string, error?: unknown) => void;

  constructor(
    readonly forge: GitHubForge,
    readonly options: GitHubDriverOptions,
  ) {
    this.log =
      options.log ??
      ((message, error) => console.error(message, error instanceof Error ? error.message : (error ?? '')));
    this.statePath = join(options.dataDir, 'github', 'state.json');
    this.persisted = { comments: {}, draftPrs: {}, closed: {} };
    if (existsSync(this.statePath)) {
      try {
        Object.assign(this.persisted, JSON.parse(readFileSync(this.statePath, 'utf8')) as Partial<Persisted>);
      } catch (error) {
        this.log(`${this.statePath}: unreadable, starting without it`, error);
      }
    }
  }

  get webhooks(): boolean {
    return this.options.webhookSecret !== null;
  }

  /** The queues this server drives. */
  queues(): DriverQueue[] {
    return this.host?.queues() ?? [];
  }

  dispatch(q: DriverQueue, event: EngineEvent): Promise<unknown> {
    return this.host ? this.host.dispatch(q, event) : Promise.resolve();
  }

  /** The driven queues of repositories on this GitHub, by repository key. */
  byRepo(): Map<string, DriverQueue[]> {
    const out = new Map<string, DriverQueue[]>();
    for (const q of this.queues()) {
      if (!this.forge.serves(q.repo)) continue;
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

  async ctx(repo: Repo): Promise<RepoCtx> {
    const info = await this.forge.repoInfo(repo);
    const dir = this.forge.cacheDir(repo);
    await ensureCache(dir);
    const client = this.forge.client;
    const withToken = async <T>(op: (dir: string, url: string, token: string) => Promise<T>): Promise<T> => {
      try {
        return await op(dir, info.cloneUrl, await client.tokenFor(repo.owner, repo.name));
      } catch (error) {
        // An installation token that expired between reading it and using it: once more with a new one.
        if (!/could not read Username|Authentication failed|401/.test(String((error as Error).message)))
          throw error;
        return op(dir, info.cloneUrl, await client.tokenFor(repo.owner, repo.name, true));
      }
    };
    return { owner: repo.owner, name: repo.name, dir, url: info.cloneUrl, git: withToken };
  }

  /** Fetches the target branch and the heads of `prs` into the cache; returns the target head. */
  async fetch(c: RepoCtx, branch: string, prs: readonly number[]): Promise<string | null> {
    await c.git((dir, url, token) =>
      fetchRefs(dir, url, token, [
        `+refs/heads/${branch}:refs/heads/${branch}`,
        ...prs.map((n) => `+refs/pull/${n}/head:refs/pull/${n}/head`),
      ]),
    );
    return headOf(c.dir, branch);
  }

  /** Waits for the work in flight (after close()). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    await this.saving;
  }
}
