/**
 * The GitLab driver's events, polling half (the loop itself is the remote forges' shared
 * ../shared/polling.ts): how an MR is read again — source.ts asks again while GitLab is checking
 * it and never counts the queue's own status as the block. Hooks (webhooks.ts) bring the rest as
 * it happens.
 */
import type { Repo } from '../../contract/index.js';
import { findEntry, IN_RUN, isTerminal } from '../../engine/index.js';
import type { DriverQueue } from '../types.js';
import { readFacts, RemotePolling } from '../shared/polling.js';
import type { GitLabCi } from './ci.js';
import type { GitLabMr } from './facts.js';
import { pushRefs, remoteHeads } from './git.js';
import type { GitLabRuntime } from './runtime.js';

export class GitLabPolling extends RemotePolling {
  constructor(
    private readonly gl: GitLabRuntime,
    ci: GitLabCi,
  ) {
    super(gl, ci, { pushRefs, remoteHeads });
  }

  refresh(q: DriverQueue, iid: number, given?: unknown): Promise<void> {
    return this.refreshMr(q, iid, given as GitLabMr | undefined);
  }

  /** MRs as the poll's list answered them (GitLab rechecks their mergeability in the background). */
  private readonly listed = new WeakSet<GitLabMr>();

  /** The poll's round reads the opened MRs of a project in one request (source.ts openMrs). */
  protected override async listOpen(repo: Repo, iids: number[]): Promise<Map<number, unknown>> {
    const open = await this.gl.source.openMrs(repo, iids);
    for (const mr of open.values()) this.listed.add(mr);
    return open;
  }

  /**
   * Reads an MR again and feeds a change to the engine. While GitLab rechecks an MR, the
   * mergeability known stands (polling.ts feed); it is asked again at once only when it matters
   * and is not known: not for an MR in a test run, nor for one the poll's list shows with the head
   * and target it had (the list asked GitLab to recheck it: the next round has the answer).
   */
  async refreshMr(q: DriverQueue, iid: number, given?: GitLabMr): Promise<void> {
    const entry = findEntry(q.model, iid);
    if (!entry || isTerminal(entry.state)) return;
    const unchanged =
      given !== undefined &&
      this.listed.has(given) &&
      given.sha === entry.pr.headSha &&
      given.target_branch === entry.pr.baseBranch &&
      (entry.pr.mergeability === 'mergeable' || entry.pr.mergeability === 'not_mergeable');
    const fresh = await this.gl.source.facts(q.repo, iid, given, !IN_RUN.has(entry.state) && !unchanged);
    await this.feed(q, iid, fresh ? readFacts(fresh) : null);
  }
}
