/**
 * What a pull request (GitHub) or merge request (GitLab) shows of the queue, in words, shared by
 * the remote forges' reporters: the description of the queue's commit status and the body of the
 * ONE comment (note) edited as the PR's state changes — its position, its test run, what holds it
 * back (a conflict and what to do, the forge's branch rules in the forge's words), the forge's refusal of a landing, and why
 * it failed (failed checks, required checks that never reported, those still running).
 */
import {
  isTerminal,
  prConflictSentence,
  stackOf,
  stackSentence,
  type Entry,
  type QueueModel,
} from '../../engine/index.js';

/** The first line of the queue's comment: how the queue (and its webhook handler) knows its own comment. */
export const COMMENT_MARKER = '<!-- railyard:merge-queue -->';

/** How a forge words things. */
export interface ForgeWords {
  /** `GitHub`, `GitLab`. */
  forge: string;
  /** How the forge writes a PR's number: `#12`, `!12`. */
  ref(n: number): string;
  /** The queue's own status name (never counts as a block). */
  statusName: string;
  /** What the PR's checks are called: `checks`, `jobs`. */
  checks: string;
  /** Length of an abbreviated SHA in the status. */
  shortSha: number;
  /** What a not-ready PR that nothing on the forge holds waits for. */
  notReady: string;
}

/** Where an entry stands, for the forge's commit status (each forge maps it to its states). */
export type StatusPhase = 'merged' | 'failed' | 'cancelled' | 'not_ready' | 'testing' | 'queued';

/** The phase and description of the queue's commit status on a PR. */
export function statusWords(
  entry: Entry,
  model: QueueModel,
  words: ForgeWords,
): { phase: StatusPhase; description: string } {
  const reason = entry.reason ? ` (${entry.reason})` : '';
  switch (entry.state) {
    case 'merged': {
      const run = model.runs.find((r) => r.id === entry.testRunId);
      return {
        phase: 'merged',
        description: `Merged into ${model.branch}${run?.sha ? ` as ${run.sha.slice(0, words.shortSha)}` : ''}`,
      };
    }
    case 'failed':
      return { phase: 'failed', description: `Failed${reason}` };
    case 'cancelled':
      return { phase: 'cancelled', description: `Removed from the queue${reason}` };
    case 'not_ready':
      return {
        phase: 'not_ready',
        description: prConflictSentence(entry.pr)
          ? `It ${prConflictSentence(entry.pr)}`
          : entry.pr.blockedBy
            ? `Waiting for the branch rules: ${entry.pr.blockedBy.replace(/^(GitHub|GitLab) waits for:? /, '')}`
            : 'Submitted, waiting until it is ready (draft, conflict or base branch)',
      };
    case 'testing':
    case 'tests_passed':
    case 'pending_failure':
      return { phase: 'testing', description: `Testing in the ${model.branch} merge queue` };
    default:
      return { phase: 'queued', description: `In the ${model.branch} merge queue` };
  }
}

/**
 * The body of the queue's comment on a PR; `refused` is the forge's refusal of its run's landing,
 * `landedAs` the commit the forge made when it merged it (GitHub's merge API), `landing` why its
 * landing is being tried again (a blip of the forge).
 */
export function commentFor(
  entry: Entry,
  model: QueueModel,
  words: ForgeWords,
  refused?: string,
  landedAs?: string,
  landing?: string,
): string {
  const run = entry.testRunId ? model.runs.find((r) => r.id === entry.testRunId) : undefined;
  const refs = (ns: readonly number[]) => ns.map((n) => words.ref(n)).join(', ');
  const lines = [
    COMMENT_MARKER,
    `**Railyard merge queue** (\`${model.branch}\`): **${entry.state.replace('_', ' ')}**`,
  ];
  if (entry.state === 'pending' || entry.state === 'testing') {
    const active = model.entries.filter((e) => !isTerminal(e.state) && e.state !== 'not_ready');
    const position =
      active.filter(
        (e) =>
          e.priority.value < entry.priority.value ||
          (e.priority.value === entry.priority.value && e.seq < entry.seq),
      ).length + 1;
    lines.push('', `Position ${position} of ${active.length}.`);
  }
  const stack = stackOf(model, entry);
  if (stack.length)
    lines.push(
      '',
      `Part of a ${stackSentence(stack, (n) => words.ref(n))}: tested and landed as one unit, bottom first.`,
    );
  if (run && !isTerminal(entry.state)) {
    const batch = run.prNumbers.filter((n) => n !== entry.prNumber);
    lines.push(
      '',
      `Test run \`${run.id}\`${run.branch ? ` on \`${run.branch}\`` : ''}${batch.length ? `, batched with ${refs(batch)}` : ''}${run.basePrNumbers.length ? `, on top of ${refs(run.basePrNumbers)}` : ''}.`,
    );
  }
  if (entry.state === 'not_ready')
    lines.push(
      '',
      prConflictSentence(entry.pr)
        ? `It ${prConflictSentence(entry.pr)}. It enters the queue by itself once it merges cleanly.`
        : entry.pr.blockedBy
          ? `The branch rules hold it: ${entry.pr.blockedBy}. It enters the queue by itself once ${words.forge} lets it through (approvals, threads, required checks; Railyard's own \`${words.statusName}\` status does not count).`
          : words.notReady,
    );
  if (landing && entry.state === 'tests_passed') lines.push('', `> ${landing}`);
  if (refused && (entry.state === 'failed' || model.config.state === 'paused'))
    lines.push('', `> ${refused}`);
  if (entry.state === 'merged' && run?.sha)
    lines.push('', `Landed on \`${model.branch}\` as ${landedAs ?? run.sha} (test run \`${run.id}\`).`);
  if (
    (entry.state === 'failed' || entry.state === 'cancelled' || entry.state === 'pending_failure') &&
    entry.reason
  ) {
    lines.push(
      '',
      `Reason: \`${entry.reason}\`${run?.failureReason && run.failureReason !== entry.reason ? ` (test run: \`${run.failureReason}\`)` : ''}.`,
    );
    if (run) {
      const named = (outcome: string) =>
        Object.entries(run.checks)
          .filter(([, o]) => o === outcome)
          .map(([n]) => `\`${n}\``);
      const failed = named('failure');
      const running = named('pending');
      const never = (run.requiredStatuses ?? []).filter((n) => !(n in run.checks)).map((n) => `\`${n}\``);
      if (failed.length) lines.push(`Failed ${words.checks}: ${failed.join(', ')}.`);
      if (never.length)
        lines.push(
          `Required ${words.checks} that never reported: ${never.join(', ')} (renamed or not run on \`railyard-merge/*\` branches?).`,
        );
      if (running.length) lines.push(`Still running: ${running.join(', ')}.`);
    }
  }
  return lines.join('\n');
}

/**
 * A progress edit of a PR's comment (GitHub) or note (GitLab) (its position, its test run) waits until the PR's state has
 * held this long, so that a state soon replaced (a position that changes again with the next
 * landing, a test run that passes in seconds) is never sent: the newer edit replaces it in line.
 * An edit showing a decided PR, or asking its author to act, never waits; nor does the first
 * comment.
 */
export const PROGRESS_SETTLE_MS = 3000;
/** ... but no progress edit waits longer than this after the first change it shows. */
export const PROGRESS_MAX_WAIT_MS = 10_000;
