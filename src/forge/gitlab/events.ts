/**
 * The GitLab driver's events, polling half (the loop itself is the remote forges' shared
 * ../shared/polling.ts): how an MR is read again — source.ts asks again while GitLab is checking
 * it and never counts the queue's own status as the block. Hooks (webhooks.ts) bring the rest as
 * it happens.
 */
import { findEntry, isTerminal } from '../../engine/index.js';
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

  /** Reads an MR again and feeds a change to the engine. */
  async refreshMr(q: DriverQueue, iid: number, given?: GitLabMr): Promise<void> {
    const entry = findEntry(q.model, iid);
    if (!entry || isTerminal(entry.state)) return;
    const fresh = await this.gl.source.facts(q.repo, iid, given);
    await this.feed(q, iid, fresh ? readFacts(fresh) : null);
  }
}
