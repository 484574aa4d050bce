/**
 * What the roles of the GitLab driver share (one object per server): the options, the bare cache
 * of each project and git with the token, the target heads seen and those the queue put there
 * itself, the state kept on disk (`<dataDir>/gitlab/state.json`: note ids, MRs closed after a
 * squash landing; no secrets), the host that drives the queues, and the work in flight.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Repo } from '../../contract/index.js';
import type { EngineEvent } from '../../engine/index.js';
import { headOf } from '../git/index.js';
import type { DriverHost, DriverQueue } from '../types.js';
import { ensureCache, fetchRefs } from './git.js';
import type { GitLabSource } from './source.js';

export interface GitLabDriverOptions {
  dataDir: string;
  /** Poll interval: target heads and test branches always (git), MRs and CI too when there is no webhook secret. */
  pollMs: number;
  /** With no requiredStatuses, a test commit with no status reported after this long fails (TEST_RUN_NO_CHECKS_REPORTED). */
  ciStartMs: number;
  /** The webhook secret; null = no webhooks, polling does their job. */
  webhookSecret: string | null;
  token: string;
  log?: (message: string, error?: unknown) => void;
}

/** A project's bare cache and git against GitLab. */
export interface RepoCtx {
  repo: Repo;
  dir: string;
  url: string;
  git: <T>(op: (dir: string, url: string, token: string) => Promise<T>) => Promise<T>;
}

interface Persisted {
  /** `<org>\n<host>/<owner>/<name>#<iid>` → id of the queue's note on that MR. */
  notes: Record<string, number>;
  /** MRs the queue closed after landing them squashed or rebased. */
  closed: Record<string, true>;
}

export const repoKey = (repo: Repo) => `${repo.host}/${repo.owner}/${repo.name}`.toLowerCase();

/** Test branches: `railyard-merge/pr-<n>[-<n>…]/<runId>`. */
export const TEST_BRANCH_RE = /^railyard-merge\/pr-\d+(?:-\d+)*\/([^/]+)$/;

export class GitLabRuntime {
  private readonly ownHeads = new Map<string, Set<string>>();
  /** Last seen head of each target branch: `<repoKey> <branch>` → SHA. */
  readonly targetHeads = new Map<string, string>();
  /** Runs this server is building or waiting on (their test branches stay). */
  readonly busy = new Set<string>();
  readonly persisted: Persisted = { notes: {}, closed: {} };
  private readonly statePath: string;
  private saving: Promise<void> = Promise.resolve();
  private readonly inFlight = new Set<Promise<unknown>>();
  host: DriverHost | null = null;
  closed = false;
  readonly log: (message: string, error?: unknown) => void;

  constructor(
    readonly source: GitLabSource,
    readonly options: GitLabDriverOptions,
  ) {
    this.log =
      options.log ??
      ((message, error) => console.error(message, error instanceof Error ? error.message : (error ?? '')));
    this.statePath = join(options.dataDir, 'gitlab', 'state.json');
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

  get client() {
    return this.source.client;
  }

  queues(): DriverQueue[] {
    return this.host?.queues() ?? [];
  }

  dispatch(q: DriverQueue, event: EngineEvent): Promise<unknown> {
    return this.host ? this.host.dispatch(q, event) : Promise.resolve();
  }

  /** The driven queues of projects on this GitLab, by repository key. */
  byRepo(): Map<string, DriverQueue[]> {
    const out = new Map<string, DriverQueue[]>();
    for (const q of this.queues()) {
      if (!this.source.serves(q.repo)) continue;
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
    const dir = this.source.cacheDir(repo);
    await ensureCache(dir);
    const url = this.source.cloneUrl(repo);
    return { repo, dir, url, git: (op) => op(dir, url, this.options.token) };
  }

  /** Fetches the target branch and the heads of `mrs` (`refs/merge-requests/N/head`) into the cache; returns the target head. */
  async fetch(c: RepoCtx, branch: string, mrs: readonly number[]): Promise<string | null> {
    await c.git((dir, url, token) =>
      fetchRefs(dir, url, token, [
        `+refs/heads/${branch}:refs/heads/${branch}`,
        ...mrs.map((n) => `+refs/merge-requests/${n}/head:refs/merge-requests/${n}/head`),
      ]),
    );
    return headOf(c.dir, branch);
  }

  async settle(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    await this.saving;
  }
}
