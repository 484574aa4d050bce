/** The GitHub forge's source role: PR facts, mergeability re-reads and landing state from GitHub. */
import { repoKey, type Repo } from '../../contract/index.js';
import type { Source } from '../types.js';
import { statusOf, type GitHubClient } from './client.js';
import { factsOf, withBlock, type GitHubPrFacts, type GitHubPull } from './facts.js';
import { BranchProtection } from './protection.js';
import { PullFreshness } from './deliveries.js';
import { cacheDirFor } from './git.js';

export interface GitHubForgeOptions {
  /** The `repo.host` served (e.g. `github.com`); PRs of other hosts do not exist here. */
  host: string;
  /** The bare caches live under `<dataDir>/github/`. */
  dataDir: string;
  /**
   * GitHub computes `mergeable` lazily: a read that answers `null` is asked again after this long,
   * then twice as long, at most 3 more times (default 100 ms: 100 + 200 + 400 ms).
   */
  mergeableRetryMs?: number;
  /**
   * PR reads of the API (getSubmittedPullRequest, submit) answer from what the forge read or was
   * told by a webhook less than this long ago (default 0: always ask GitHub).
   */
  freshMs?: number;
}

export interface RepoInfo {
  cloneUrl: string;
  defaultBranch: string;
}

/** An open, non-draft PR whose mergeability GitHub is still computing (`mergeable: null`). */
export function mergeableUnknown(pull: GitHubPull): boolean {
  return (
    pull.state === 'open' &&
    !pull.merged &&
    !pull.draft &&
    (pull.mergeable === null || pull.mergeable === undefined)
  );
}

/**
 * The GitHub forge: pull requests read over the REST API (`GET /repos/{o}/{r}/pulls/{n}`, with
 * ETags), git over smart HTTP from the repository's `clone_url` into a bare cache per repository.
 */
export class GitHubForge implements Source {
  readonly kind = 'github';
  private readonly repos = new Map<string, Promise<RepoInfo>>();
  private readonly recent = new Map<string, { at: number; pull: GitHubPull }>();
  readonly host: string;
  readonly protection: BranchProtection;
  /** The newest `updated_at` seen per PR (`<owner>/<name>#<n>`), from reads and trusted payloads. */
  readonly freshness = new PullFreshness();
  /**
   * Told of every PR GitHub described (a read or a webhook payload): the executor asks again soon
   * when GitHub was still computing its mergeability.
   */
  onPull: ((repo: Repo, pull: GitHubPull) => void) | null = null;

  constructor(
    readonly client: GitHubClient,
    private readonly options: GitHubForgeOptions,
  ) {
    this.host = options.host.toLowerCase();
    this.protection = new BranchProtection(client);
  }

  /** Names the files of a conflicting PR (the driver sets it: shared/conflicts.ts); GitHub says only that it conflicts. */
  nameConflict: ((repo: Repo, prNumber: number, facts: GitHubPrFacts) => Promise<GitHubPrFacts>) | null =
    null;

  /** The facts of a PR GitHub described, with what its branch protection waits for (reads only for a blocked PR). */
  async factsWithProtection(repo: Repo, pull: GitHubPull): Promise<GitHubPrFacts> {
    const facts = withBlock(factsOf(pull), await this.protection.waitsFor(repo, pull));
    const named = this.nameConflict ? await this.nameConflict(repo, pull.number, facts) : facts;
    const stackedOn = named.open ? await this.stackedOn(repo, pull) : undefined;
    return stackedOn === undefined ? named : { ...named, stackedOn };
  }

  /**
   * Stacked PRs: the open PR of this repository whose head branch is `pull`'s base branch. Not
   * asked for a PR based on the default branch (nearly every PR: no request); a conditional
   * request otherwise (`GET /pulls?head=`), cheap when nothing changed.
   */
  private async stackedOn(repo: Repo, pull: GitHubPull): Promise<number | undefined> {
    const info = await this.repoInfo(repo).catch(() => null);
    if (info && pull.base.ref === info.defaultBranch) return undefined;
    const list = await this.client.getCached<
      Array<
        Pick<GitHubPull, 'number' | 'state'> & { head: { ref: string; repo?: { full_name?: string } | null } }
      >
    >(repo.owner, repo.name, 'GET /repos/{owner}/{repo}/pulls', {
      state: 'open',
      head: `${repo.owner}:${pull.base.ref}`,
      per_page: 5,
    });
    const below = list.find(
      (p) => p.number !== pull.number && p.state === 'open' && p.head.ref === pull.base.ref,
    );
    return below?.number;
  }

  serves(repo: Repo): boolean {
    return repo.host.toLowerCase() === this.host;
  }

  /** The bare cache of a repository. */
  cacheDir(repo: Repo): string {
    return cacheDirFor(this.options.dataDir, this.host, repo.owner, repo.name);
  }

  /** `clone_url` and default branch (`GET /repos/{o}/{r}`, once per repository and process). */
  repoInfo(repo: Repo): Promise<RepoInfo> {
    const key = `${repo.owner}/${repo.name}`.toLowerCase();
    let info = this.repos.get(key);
    if (!info) {
      info = this.client
        .request<{
          clone_url: string;
          default_branch: string;
        }>(repo.owner, repo.name, 'GET /repos/{owner}/{repo}')
        .then((r) => ({
          cloneUrl: r.data.clone_url,
          defaultBranch: r.data.default_branch,
        }));
      info.catch(() => this.repos.delete(key));
      this.repos.set(key, info);
    }
    return info;
  }

  /** Keeps what GitHub said about a PR (a read, or a webhook payload) for reads within `freshMs`. */
  remember(repo: Repo, pull: GitHubPull): void {
    const key = `${repo.owner}/${repo.name}#${pull.number}`.toLowerCase();
    if (this.recent.size > 10_000) this.recent.delete(this.recent.keys().next().value!);
    this.recent.set(key, { at: Date.now(), pull });
    this.onPull?.(repo, pull);
  }

  /**
   * The heads of the queues' targets as the queue knows them (`<repoKey> <branch>` → sha;
   * the runtime's): what a PR's mergeability was read against.
   */
  targetHeads: ReadonlyMap<string, string> = new Map();
  /** `<owner>/<name>#<n>` → the PR's `updated_at` and its base's head when GitHub last said whether it merges. */
  private readonly against = new Map<string, { updatedAt: string; target: string }>();

  /**
   * What GitHub's last answer on whether a PR merges was read against (undefined: it had none,
   * or the PR is held by branch rules, whose checks and reviews change without `updated_at`).
   */
  mergeabilityAt(repo: Repo, prNumber: number): { updatedAt: string; target: string } | undefined {
    return this.against.get(`${repo.owner}/${repo.name}#${prNumber}`.toLowerCase());
  }

  /**
   * The bare cache merged the PR, unchanged since `updatedAt`, onto `target` (the target's new
   * head) without conflict: GitHub's last answer stands against that head too.
   */
  stillMergesAt(repo: Repo, prNumber: number, updatedAt: string, target: string): void {
    const key = `${repo.owner}/${repo.name}#${prNumber}`.toLowerCase();
    if (this.against.get(key)?.updatedAt === updatedAt) this.against.set(key, { updatedAt, target });
  }

  private noteAgainst(key: string, pull: GitHubPull | null, target: string | undefined): void {
    if (
      pull &&
      target !== undefined &&
      typeof pull.updated_at === 'string' &&
      !mergeableUnknown(pull) &&
      pull.mergeable_state !== 'blocked' &&
      pull.mergeable_state !== 'unknown'
    ) {
      if (!this.against.has(key) && this.against.size > 10_000)
        this.against.delete(this.against.keys().next().value!);
      this.against.set(key, { updatedAt: pull.updated_at, target });
    } else this.against.delete(key);
  }

  /** The PR as GitHub reports it now (conditional GET), or null when it does not exist. */
  async fetchPull(repo: Repo, prNumber: number): Promise<GitHubPull | null> {
    // The target heads before the read: one that moves while GitHub answers is read again later.
    const targets = new Map(this.targetHeads);
    try {
      const pull = await this.fetchPullUncached(repo, prNumber);
      const key = `${repo.owner}/${repo.name}#${prNumber}`.toLowerCase();
      this.noteAgainst(key, pull, pull ? targets.get(`${repoKey(repo)} ${pull.base.ref}`) : undefined);
      if (pull?.updated_at)
        this.freshness.note(
          `${repo.owner}/${repo.name}#${prNumber}`.toLowerCase(),
          Date.parse(pull.updated_at),
        );
      if (pull) this.remember(repo, pull);
      else this.recent.delete(`${repo.owner}/${repo.name}#${prNumber}`.toLowerCase());
      return pull;
    } catch (error) {
      if (statusOf(error) === 404) return null;
      throw error;
    }
  }

  private async fetchPullUncached(repo: Repo, prNumber: number): Promise<GitHubPull | null> {
    try {
      return await this.client.getCached<GitHubPull>(
        repo.owner,
        repo.name,
        'GET /repos/{owner}/{repo}/pulls/{pull_number}',
        { pull_number: prNumber },
      );
    } catch (error) {
      if (statusOf(error) === 404) return null;
      throw error;
    }
  }

  /**
   * PR facts (facts.ts has the field mapping). GitHub answers `mergeable: null` until it has
   * computed it (a background job it starts on that read): an open, non-draft PR in that state is
   * asked again after 100, 200 and 400 ms. The answer must come before a PR ahead lands and moves
   * the target, or GitHub starts over against the new target.
   */
  async getPullRequest(repo: Repo, prNumber: number, _queueBranch: string): Promise<GitHubPrFacts | null> {
    if (!this.serves(repo)) return null;
    const hit = this.recent.get(`${repo.owner}/${repo.name}#${prNumber}`.toLowerCase());
    const freshMs = this.options.freshMs ?? 0;
    if (
      hit &&
      Date.now() - hit.at < freshMs &&
      hit.pull.mergeable !== null &&
      hit.pull.mergeable !== undefined
    )
      return this.factsWithProtection(repo, hit.pull);
    let pull = await this.fetchPull(repo, prNumber);
    let wait = this.options.mergeableRetryMs ?? 100;
    for (let tries = 0; tries < 3 && pull && mergeableUnknown(pull); tries++, wait *= 2) {
      await new Promise((r) => setTimeout(r, wait));
      pull = (await this.fetchPull(repo, prNumber)) ?? pull;
    }
    return pull ? this.factsWithProtection(repo, pull) : null;
  }
}
