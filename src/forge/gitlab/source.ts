/**
 * The GitLab driver's source: merge requests read over REST by IID (`GET
 * /projects/:path/merge_requests/:iid`), their facts (facts.ts), and the clone URL of a project
 * under the configured base URL. GitLab computes `detailed_merge_status` lazily: an MR read as
 * `unchecked`/`checking` is asked again after 100, 200 and 400 ms. With "Pipelines must succeed",
 * the queue's own `railyard/merge-queue` status (pending on the MR's head while it is queued) keeps
 * the MR's pipeline running: a pipeline block whose only unfinished or failed status is the queue's
 * own is not a block. A project is known by its id across moves (GitLab redirects the old path):
 * `projectId` asks once per path.
 */
import { REPO_OWNER_MAX, type Repo } from '../../contract/index.js';
import type { PrLandingState, Source } from '../types.js';
import { statusOf, type GitLabClient } from './client.js';
import { factsOf, withBlockedBy, type GitLabMr, type GitLabPrFacts } from './facts.js';
import { cacheDirFor, cloneUrlOf } from './git.js';
import { NAMESPACE_MAX, projectPath } from './repo.js';

const repoKey = (repo: Repo) => `${repo.host}/${repo.owner}/${repo.name}`.toLowerCase();

/** The commit status the queue posts on MR heads. */
export const QUEUE_STATUS_NAME = 'railyard/merge-queue';

export interface GitLabSourceOptions {
  /** Base URL of the GitLab instance (clone URLs are `<url>/<owner>/<name>.git`). */
  url: string;
  /** The `repo.host` served; MRs of other hosts do not exist here. */
  host: string;
  dataDir: string;
  /** First wait before asking again about an MR GitLab is still checking (default 100 ms). */
  mergeableRetryMs?: number;
  /**
   * API reads of a PR (getSubmittedPullRequest, …) answer from what GitLab said less than this long
   * ago (default 0: always ask). Hooks keep it current: the driver sets 10 s with hooks, the poll
   * interval without.
   */
  freshMs?: number;
}

const CHECKING = new Set(['unchecked', 'checking', 'preparing', 'approvals_syncing']);

export class GitLabSource implements Source {
  readonly host: string;
  private readonly recent = new Map<string, { at: number; mr: GitLabMr }>();
  private readonly ids = new Map<string, number>();
  /** Names the files of a conflicting MR (the driver sets it: shared/conflicts.ts); GitLab says only that it conflicts. */
  nameConflict: ((repo: Repo, iid: number, facts: GitLabPrFacts) => Promise<GitLabPrFacts>) | null = null;
  /** Each project's default branch (stacked MRs are looked for only off it). */
  private readonly defaultBranches = new Map<string, string>();
  /** Told of every MR GitLab described: the events role asks again while GitLab is still checking it. */
  onMr: ((repo: Repo, mr: GitLabMr) => void) | null = null;

  constructor(
    readonly client: GitLabClient,
    private readonly options: GitLabSourceOptions,
  ) {
    this.host = options.host.toLowerCase();
  }

  serves(repo: Repo): boolean {
    return repo.host.toLowerCase() === this.host;
  }

  /** A GitLab owner is a namespace path (`group/subgroup`), up to 255 characters. */
  ownerMaxLength(host: string): number {
    return host.trim().toLowerCase() === this.host ? NAMESPACE_MAX : REPO_OWNER_MAX;
  }

  cacheDir(repo: Repo): string {
    return cacheDirFor(this.options.dataDir, repo);
  }

  cloneUrl(repo: Repo): string {
    return cloneUrlOf(this.options.url, repo);
  }

  /**
   * The id of the project `repo` names (its path, or a path it was moved from: GitLab redirects
   * it); null when no such project can be seen. Asked once per path.
   */
  async projectId(repo: Repo): Promise<number | null> {
    const key = repoKey(repo);
    const known = this.ids.get(key);
    if (known !== undefined) return known;
    try {
      const project = (await this.client.api.Projects.show(projectPath(repo))) as unknown as { id: number };
      if (this.ids.size > 10_000) this.ids.delete(this.ids.keys().next().value!);
      this.ids.set(key, project.id);
      return project.id;
    } catch (error) {
      if (statusOf(error) === 404) return null;
      throw error;
    }
  }

  /** A project is the same one under any of its paths: its id says so. */
  async repoIdentity(repo: Repo): Promise<string | null> {
    if (!this.serves(repo)) return null;
    const id = await this.projectId(repo);
    return id === null ? null : `gitlab project ${id}`;
  }

  /** The MR as GitLab reports it now, or null when it (or the project) does not exist. */
  async fetchMr(repo: Repo, iid: number): Promise<GitLabMr | null> {
    try {
      const mr = (await this.client.api.MergeRequests.show(projectPath(repo), iid)) as unknown as GitLabMr;
      this.remember(repo, mr);
      return mr;
    } catch (error) {
      if (statusOf(error) === 404) return null;
      throw error;
    }
  }

  /**
   * The opened MRs among `iids`, by IID, in one read per hundred (`GET
   * /projects/:path/merge_requests?state=opened&iids[]=…&with_merge_status_recheck=true`: GitLab
   * rechecks the mergeability of those it has not checked against the target's new head): the
   * poll's round costs one request per project, not one per MR. An MR missing from the answer is closed, merged or gone (read it alone).
   */
  async openMrs(repo: Repo, iids: number[]): Promise<Map<number, GitLabMr>> {
    const open = new Map<number, GitLabMr>();
    for (let i = 0; i < iids.length; i += 100) {
      const chunk = iids.slice(i, i + 100);
      const list = (await this.client.api.MergeRequests.all({
        projectId: projectPath(repo),
        state: 'opened',
        iids: chunk,
        withMergeStatusRecheck: true,
        perPage: 100,
        maxPages: 1,
      })) as unknown as GitLabMr[];
      for (const mr of list) {
        if (!chunk.includes(mr.iid)) continue;
        this.remember(repo, mr);
        open.set(mr.iid, mr);
      }
    }
    return open;
  }

  private remember(repo: Repo, mr: GitLabMr): void {
    const key = `${repoKey(repo)}#${mr.iid}`;
    if (this.recent.size > 10_000) this.recent.delete(this.recent.keys().next().value!);
    this.recent.set(key, { at: Date.now(), mr });
    this.onMr?.(repo, mr);
  }

  /** The MR as last read, if that was less than `freshMs` ago and GitLab was not still checking it. */
  private freshMr(repo: Repo, iid: number): GitLabMr | null {
    const hit = this.recent.get(`${repoKey(repo)}#${iid}`);
    if (!hit || Date.now() - hit.at >= (this.options.freshMs ?? 0)) return null;
    return CHECKING.has(hit.mr.detailed_merge_status ?? '') ? null : hit.mr;
  }

  /** Forget what was read of an MR (a hook said it changed). */
  forget(repo: Repo, iid: number): void {
    this.recent.delete(`${repoKey(repo)}#${iid}`);
  }

  /** Whether a pipeline block of GitLab comes only from the queue's own status on the MR's head. */
  private async onlyOwnStatusBlocks(repo: Repo, mr: GitLabMr): Promise<boolean> {
    if (!mr.sha) return false;
    const statuses = (await this.client.api.Commits.allStatuses(
      projectPath(repo),
      mr.sha,
    )) as unknown as Array<{
      name: string;
      status: string;
      allow_failure?: boolean;
    }>;
    const others = statuses.filter((s) => s.name !== QUEUE_STATUS_NAME);
    return (
      statuses.some((s) => s.name === QUEUE_STATUS_NAME) &&
      others.every((s) => s.status === 'success' || s.status === 'skipped' || s.allow_failure === true)
    );
  }

  /**
   * The facts of an MR: asked again while GitLab checks it (unless `settle` is false: the MR is in a
   * test run already, where its mergeability onto the target does not matter); the queue's own
   * status is never the block.
   */
  async facts(repo: Repo, iid: number, given?: GitLabMr, settle = true): Promise<GitLabPrFacts | null> {
    let mr = given ?? (await this.fetchMr(repo, iid));
    let wait = this.options.mergeableRetryMs ?? 100;
    for (
      let tries = 0;
      settle && tries < 3 && mr && mr.state === 'opened' && CHECKING.has(mr.detailed_merge_status ?? '');
      tries++
    ) {
      await new Promise((r) => setTimeout(r, wait));
      wait *= 2;
      mr = (await this.fetchMr(repo, iid)) ?? mr;
    }
    if (!mr) return null;
    let facts = factsOf(mr);
    if (facts.block?.kind === 'pipeline' && !mr.has_conflicts && (await this.onlyOwnStatusBlocks(repo, mr)))
      facts = withBlockedBy({ ...facts, block: null, mergeability: 'mergeable' });
    if (this.nameConflict) facts = await this.nameConflict(repo, iid, facts);
    const stackedOn = facts.open ? await this.stackedOn(repo, mr) : undefined;
    return stackedOn === undefined ? facts : { ...facts, stackedOn };
  }

  /**
   * Stacked MRs: the open MR of this project whose source branch is `mr`'s target branch. Not
   * asked for an MR that targets the project's default branch (nearly every MR: no request).
   */
  private async stackedOn(repo: Repo, mr: GitLabMr): Promise<number | undefined> {
    const key = repoKey(repo);
    let defaultBranch = this.defaultBranches.get(key);
    if (defaultBranch === undefined) {
      const project = (await this.client.api.Projects.show(projectPath(repo))) as unknown as {
        default_branch?: string | null;
      };
      defaultBranch = project.default_branch ?? '';
      if (this.defaultBranches.size > 10_000)
        this.defaultBranches.delete(this.defaultBranches.keys().next().value!);
      this.defaultBranches.set(key, defaultBranch);
    }
    if (mr.target_branch === defaultBranch) return undefined;
    const list = (await this.client.api.MergeRequests.all({
      projectId: projectPath(repo),
      state: 'opened',
      sourceBranch: mr.target_branch,
      perPage: 5,
      maxPages: 1,
    })) as unknown as Array<{ iid: number; state: string; source_branch: string }>;
    return list.find((m) => m.iid !== mr.iid && m.source_branch === mr.target_branch)?.iid;
  }

  async getPullRequest(repo: Repo, prNumber: number, _queueBranch: string): Promise<GitLabPrFacts | null> {
    if (!this.serves(repo)) return null;
    return this.facts(repo, prNumber, this.freshMr(repo, prNumber) ?? undefined);
  }

  async landingState(repo: Repo, prNumber: number, facts: GitLabPrFacts): Promise<PrLandingState> {
    if (facts.open) return { state: 'open' };
    return {
      state: facts.closedAs ?? 'closed',
      detail: `!${prNumber} is ${facts.closedAs ?? 'closed'} on GitLab`,
    };
  }
}
