/**
 * The git forge's events: the repositories are polled (a snapshot of refs each round) and what
 * changed outside the queue becomes engine events — a pushed, closed or re-based PR is read again
 * (`prUpdated`), a target moved by someone else restarts the runs (`targetMoved`), and PRs waiting
 * to be tested are re-checked for conflicts with the new target.
 */
import { findEntry, isTerminal, type EngineEvent } from '../../engine/index.js';
import type { DriverHost, DriverQueue, Events } from '../types.js';
import type { GitForge } from './source.js';
import type { OwnHeads } from './lander.js';
import { diffSnapshots, snapshot, type RepoSnapshot } from './repo.js';

export class GitEvents implements Events {
  private readonly snapshots = new Map<string, RepoSnapshot>();
  private watchTimer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly forge: GitForge,
    private readonly own: OwnHeads,
    /** How often repositories are polled for pushes, closed PRs and target moves. */
    private readonly pollMs: number,
    private readonly log: (message: string, error?: unknown) => void,
  ) {}

  start(host: DriverHost): void {
    const poll = async () => {
      const byRepo = new Map<string, DriverQueue[]>();
      for (const q of host.queues()) {
        if (!this.forge.hasRepo(q.repo)) continue;
        const dir = this.forge.repoDir(q.repo);
        byRepo.set(dir, [...(byRepo.get(dir) ?? []), q]);
      }
      for (const [dir, list] of byRepo) {
        if (this.closed) return;
        try {
          await this.pollRepo(dir, list, host);
        } catch (error) {
          this.log(`watching ${dir} failed`, error);
        }
      }
    };
    const loop = () => {
      if (this.closed) return;
      this.polling = poll().finally(() => {
        this.polling = null;
        if (!this.closed) this.watchTimer = setTimeout(loop, this.pollMs);
      });
    };
    loop();
  }

  private async pollRepo(dir: string, queues: DriverQueue[], host: DriverHost): Promise<void> {
    const next = await snapshot(dir);
    const prev = this.snapshots.get(dir);
    this.snapshots.set(dir, next);
    if (!prev) return; // the first look is the baseline
    const dispatch = (q: DriverQueue, event: EngineEvent) => host.dispatch(q, event);
    for (const change of diffSnapshots(prev, next)) {
      if (change.type === 'prPushed' || change.type === 'prClosed' || change.type === 'prBaseChanged') {
        for (const q of queues) {
          const entry = findEntry(q.model, change.prNumber);
          if (!entry || isTerminal(entry.state)) continue;
          const fresh = (await this.forge.getPullRequest(q.repo, change.prNumber, q.model.branch)) ?? { ...entry.pr, open: false };
          await dispatch(q, { type: 'prUpdated', prNumber: change.prNumber, pr: fresh });
        }
      } else if (change.type === 'branchMoved') {
        for (const q of queues) {
          if (q.model.branch !== change.branch) continue;
          if (change.to !== null && !this.own.of(dir).has(change.to)) await dispatch(q, { type: 'targetMoved' });
          // The target changed: PRs waiting to be tested may now conflict with it (or not any more).
          for (const e of q.model.entries) {
            if (e.state !== 'not_ready' && e.state !== 'pending') continue;
            const fresh = await this.forge.getPullRequest(q.repo, e.prNumber, q.model.branch);
            const changed = fresh && (fresh.mergeability !== e.pr.mergeability || JSON.stringify(fresh.conflict) !== JSON.stringify(e.pr.conflict));
            if (changed) await dispatch(q, { type: 'prUpdated', prNumber: e.prNumber, pr: fresh });
          }
        }
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.watchTimer) clearTimeout(this.watchTimer);
    await this.polling;
  }
}
