/**
 * What to tell someone who just submitted a pull request that will wait: the queue is paused,
 * draining or switching modes (a notice), or a parallel queue waits for the PR's impacted targets
 * (a warning: the person has to act). Shared by `railyard mq submit` and the Action's submit
 * (no oclif, no Node-only modules).
 */
import type { Readiness, SubmittedPullRequest, WaitReason } from '../contract/index.js';

export interface SubmitNotice {
  level: 'notice' | 'warning';
  text: string;
}

/** How the person reading the notice resumes a queue and uploads impacted targets, in their tool. */
export interface NoticeHints {
  resume?: string;
  uploadTargets: (pr: SubmittedPullRequest) => string;
}

/**
 * From readiness.waitingFor; for a server without it, from the readiness fields and the queue's
 * state (`queueState`, undefined when unknown).
 */
export function submitNotices(pr: SubmittedPullRequest, queueState: string | undefined, hints: NoticeHints): SubmitNotice[] {
  const r = pr.readiness;
  const waits: WaitReason[] = r?.waitingFor ? [...r.waitingFor] : [];
  if (!r?.waitingFor) {
    if (r?.requiresImpactedTargets && !r.hasImpactedTargets) waits.push('impacted_targets');
    if (queueState === 'paused') waits.push('queue_paused');
    if (pr.state === 'not_ready' && (queueState === 'draining' || queueState === 'switching_modes'))
      waits.push(queueState === 'draining' ? 'queue_draining' : 'queue_switching_modes');
  }
  const n = `#${pr.prNumber}`;
  const resume = hints.resume ? ` (${hints.resume})` : '';
  const notices: SubmitNotice[] = [];
  for (const reason of waits) {
    if (reason === 'queue_paused')
      notices.push({ level: 'notice', text: `the queue is paused: it starts and merges nothing, so ${n} waits until it is resumed${resume}` });
    else if (reason === 'queue_draining')
      notices.push({
        level: 'notice',
        text: `the queue is draining: it finishes the PRs it has and lets ${n} in only once it runs again${resume}`,
      });
    else if (reason === 'queue_switching_modes')
      notices.push({ level: 'notice', text: `the queue is switching modes: ${n} enters once the PRs already in it are done` });
    else if (reason === 'impacted_targets')
      notices.push({
        level: 'warning',
        text: `the queue runs in parallel mode: ${n} waits until its impacted targets are uploaded (${hints.uploadTargets(pr)})`,
      });
  }
  return notices;
}

/** What a PR waits for, in words (readiness.waitingFor). */
export function waitSentence(reason: WaitReason): string {
  switch (reason) {
    case 'base_branch':
      return "its base branch to be the queue's target branch";
    case 'mergeability':
      return 'the forge to call it mergeable';
    case 'branch_protection':
      return "the target branch's protection (reviews, required checks)";
    case 'impacted_targets':
      return 'its impacted targets (parallel queue)';
    case 'queue_paused':
      return 'the queue, which is paused';
    case 'queue_draining':
      return 'the queue, which is draining';
    case 'queue_switching_modes':
      return 'the queue, which is switching modes';
  }
}

/**
 * What holds a PR, one phrase per reason: `waiting for the queue, which is paused`, or for a PR
 * that conflicts with its base, the server's sentence saying with what and what to do
 * (readiness.conflict.message: `conflicts with main in a.txt (…): rebase on main`).
 */
export function holdPhrases(r: Readiness | undefined): string[] {
  const waits = r?.waitingFor ?? [];
  const out: string[] = [];
  const waiting = waits.filter((w) => !(w === 'mergeability' && r?.conflict));
  if (r?.conflict && waits.includes('mergeability')) out.push(r.conflict.message);
  if (waiting.length) out.push(`waiting for ${waiting.map(waitSentence).join(' and ')}`);
  return out;
}
