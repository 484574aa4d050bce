/** The GitHub Action: submits, cancels or restarts a PR, waits for it, uploads test results, and writes the job summary. */
import * as core from '@actions/core';
import { context } from '@actions/github';
import type { SubmittedPullRequest } from '../contract/index.js';
import { ApiError, createClientFor, isTransientError, type Client } from '../client/core.js';
import { createV2ClientFor, versionedUrl } from '../client/v2.js';
import { flakyRoutes } from '../contract/routes-flaky.js';
import { mqRoutes } from '../contract/routes-mq.js';
import {
  findReports,
  githubContextOf,
  readCodeowners,
  readReports,
  uploadReports,
  type EventPayload,
  type UploadSummary,
} from '../upload/reports.js';
import {
  InputError,
  readSettings,
  type ActionSettings,
  type PullRequestSettings,
  type UploadTestsSettings,
  type WaitSettings,
} from './inputs.js';
import { summaryTable, uploadSummaryTable } from './summary.js';
import { formatDuration, placeText } from '../watch/board.js';
import { submitNotices } from '../watch/notices.js';
import { TERMINAL, waitForTerminal } from '../watch/wait.js';

/** Reads what the runner gives an Action: INPUT_* variables, GITHUB_* variables, the event file. */
function runEnvironment() {
  return {
    input: (name: string) => core.getInput(name),
    repository: process.env.GITHUB_REPOSITORY,
    serverUrl: process.env.GITHUB_SERVER_URL,
    eventName: context.eventName,
    payload: context.payload as Record<string, unknown>,
  };
}

function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0];
}

/** The queue a pull request operation acts on. */
function queueKey(s: PullRequestSettings) {
  return { repo: s.repo, targetBranch: s.targetBranch };
}

/** A new operation that run() does not handle fails to compile here. */
function unhandled(operation: never): never {
  throw new Error(`operation ${String(operation)} is not handled`);
}

class Step {
  private readonly client: Client;
  private lastResponse: unknown = {};
  private pr: SubmittedPullRequest | null = null;
  private upload: UploadSummary | null = null;

  constructor(
    private readonly settings: ActionSettings,
    private readonly signal: AbortSignal,
  ) {
    // Only the operations the Action calls: the bundle carries no webhook or service schemas.
    // On v2, the same operations over Trunk's v2 API (client/v2.ts): what the step does and prints is the same.
    const table = { ...mqRoutes, ...flakyRoutes };
    const options = { baseUrl: settings.apiUrl, token: settings.token, signal, userAgent: 'railyard-action' };
    this.client =
      settings.apiVersion === 'v2'
        ? createV2ClientFor(table, { ...options, baseUrl: versionedUrl(settings.apiUrl, 'v2') })
        : createClientFor(table, options);
  }

  private async read(s: PullRequestSettings): Promise<SubmittedPullRequest> {
    const pr = await this.client.call('getSubmittedPullRequest', {
      ...queueKey(s),
      pr: { number: s.prNumber },
    });
    this.lastResponse = pr;
    this.pr = pr;
    return pr;
  }

  async run(): Promise<void> {
    const s = this.settings;
    switch (s.operation) {
      case 'submit':
        this.lastResponse = await this.client.call('submitPullRequest', {
          ...queueKey(s),
          pr: { number: s.prNumber },
          ...(s.priority ? { priority: /^\d+$/.test(s.priority) ? Number(s.priority) : s.priority } : {}),
          ...(s.noBatch ? { noBatch: true } : {}),
        });
        core.info(`Submitted #${s.prNumber} to the ${s.targetBranch} queue of ${repoName(s)}`);
        // Say why it will wait (a paused or draining queue, impacted targets missing), as mq submit does.
        for (const { level, text } of submitNotices(await this.read(s), undefined, {
          uploadTargets: () =>
            'this action with operation: impacted-targets, or railyard mq impacted-targets',
        }))
          (level === 'warning' ? core.warning : core.notice)(text);
        break;
      case 'cancel': {
        // Nothing to cancel once the PR left the queue: say so, and let fail-on judge its state.
        const before = await this.read(s);
        if (before.state && TERMINAL.has(before.state)) {
          core.notice(
            `#${s.prNumber} is already ${before.state}${before.stateReason ? ` (${before.stateReason})` : ''}: nothing to cancel`,
          );
          break;
        }
        this.lastResponse = await this.client.call('cancelPullRequest', {
          ...queueKey(s),
          pr: { number: s.prNumber },
        });
        core.info(`Cancelled #${s.prNumber}`);
        await this.read(s);
        break;
      }
      case 'restart':
        this.lastResponse = await this.client.call('restartTestsOnPullRequest', {
          ...queueKey(s),
          pr: { number: s.prNumber },
        });
        core.info(`Restarted the tests of #${s.prNumber}`);
        await this.read(s);
        break;
      case 'impacted-targets': {
        const targets = s.impactedTargets;
        this.lastResponse = await this.client.call('setImpactedTargets', {
          ...queueKey(s),
          pr: { number: s.prNumber, sha: s.headSha },
          impactedTargets: targets,
        });
        core.info(
          `Impacted targets of #${s.prNumber} at ${s.headSha.slice(0, 12)}: ${targets === 'ALL' ? 'ALL' : `${targets.length} target(s)`}`,
        );
        break;
      }
      case 'status':
        await this.read(s);
        core.info(
          `#${s.prNumber} is ${this.pr?.state}${this.pr?.stateReason ? ` (${this.pr.stateReason})` : ''}`,
        );
        break;
      case 'wait':
        await this.wait(s);
        break;
      case 'upload-tests':
        await this.uploadTests(s);
        break;
      default:
        unhandled(s);
    }
    this.finish();
  }

  /** Finds the reports, sends them in requests under the body limit, and keeps the added-up counts. */
  private async uploadTests(s: UploadTestsSettings): Promise<void> {
    const workspace = process.env.GITHUB_WORKSPACE || process.cwd();
    const files = await findReports(s.junit, { cwd: workspace, label: 'junit' });
    const reports = await readReports(files);
    const ci = githubContextOf(process.env, context.payload as EventPayload);
    const branch = ci.branch;
    const sha = s.headSha ?? ci.sha;
    if (!branch)
      throw new InputError(
        'upload-tests: cannot tell the branch (GITHUB_HEAD_REF and GITHUB_REF_NAME are not set)',
      );
    if (!sha)
      throw new InputError(
        'head-sha: required (GITHUB_SHA is not set and the event has no pull request head)',
      );
    const codeowners = await readCodeowners(undefined, workspace);
    const meta = {
      repo: s.repo,
      org_url_slug: s.org,
      branch,
      sha,
      ...(s.prNumber ? { pr_number: s.prNumber } : {}),
      ...(ci.job ? { job: ci.job } : {}),
      ...(ci.attempt ? { attempt: ci.attempt } : {}),
      ...(codeowners !== null ? { codeowners } : {}),
    };
    core.info(
      `Uploading ${reports.length} JUnit report(s) for ${repoName(s)} ${branch} @ ${sha.slice(0, 12)}`,
    );
    const summary = await uploadReports(this.client, meta, reports, {
      signal: this.signal,
      onProgress: (done, total) => {
        if (total > 1 && done < total) core.info(`Request ${done + 1} of ${total}`);
      },
    });
    this.upload = summary;
    this.lastResponse = summary;
    core.info(
      `Uploaded ${summary.files} file(s): ${summary.tests} test(s), ${summary.passed} passed, ${summary.failed} failed, ` +
        `${summary.flaky} flaky, ${summary.skipped} skipped, ${summary.new_tests} new`,
    );
    if (summary.excluded_from_detection) {
      core.warning(
        'The server kept this upload out of flaky-test detection: it looks like an infrastructure failure (most tests failed)',
      );
    }
  }

  /** `, position 2 of 5, 3m 10s in queue` (empty when the queue cannot be read). */
  private async place(s: PullRequestSettings, pr: SubmittedPullRequest): Promise<string> {
    try {
      const queue = await this.client.call('getQueue', queueKey(s));
      return placeText(queue, pr, Date.now());
    } catch {
      return '';
    }
  }

  private async wait(s: WaitSettings): Promise<void> {
    core.info(
      `Waiting up to ${s.timeoutMs / 60_000} minute(s) for #${s.prNumber} to leave the ${s.targetBranch} queue`,
    );
    const outcome = await waitForTerminal({
      read: () => this.read(s),
      isTransient: isTransientError,
      timeoutMs: s.timeoutMs,
      intervalMs: s.pollIntervalMs,
      signal: this.signal,
      onState: (pr) =>
        core.info(`#${pr.prNumber}: ${pr.state}${pr.stateReason ? ` (${pr.stateReason})` : ''}`),
      // At least once a minute: where the PR is, so a long wait never looks stuck.
      heartbeatMs: s.heartbeatMs,
      onHeartbeat: async (pr, waited) =>
        core.info(
          `#${pr.prNumber} is still ${pr.state}${await this.place(s, pr)}, waited ${formatDuration(waited)}`,
        ),
      onRetry: (error, attempt, delay) =>
        core.warning(
          `Reading #${s.prNumber} failed (${oneLine(error)}); try ${attempt + 1} in about ${Math.round(delay / 1000)}s`,
        ),
    });
    if (outcome.kind === 'timeout') {
      this.finish();
      throw new StepFailure(
        `#${s.prNumber} is still ${outcome.pr?.state ?? 'unknown'} after ${s.timeoutMs / 60_000} minute(s) (timeout-minutes)`,
      );
    }
    if (outcome.kind === 'blocked') {
      // Waiting longer changes nothing: only the PR's author can (a push); the PR stays submitted.
      this.finish();
      throw new StepFailure(
        `#${s.prNumber} is blocked until its author pushes: ${outcome.reason} (it stays submitted and enters the queue once fixed)`,
      );
    }
    if (outcome.kind === 'aborted') {
      this.finish();
      throw new StepFailure(
        `Stopped while waiting for #${s.prNumber} (the job was cancelled); last state ${outcome.pr?.state ?? 'unknown'}`,
      );
    }
  }

  /** Sets the outputs and fails the step when the state is listed in fail-on. */
  private finish(): void {
    const s = this.settings;
    const pr = this.pr;
    core.setOutput('pr-number', String(s.prNumber ?? ''));
    core.setOutput('response', JSON.stringify(this.lastResponse ?? {}));
    if (pr) {
      core.setOutput('state', pr.state ?? '');
      core.setOutput('merged', String(pr.state === 'merged'));
      core.setOutput('priority', pr.priorityName);
      if (pr.testRunId) core.setOutput('test-run-id', pr.testRunId);
    } else {
      core.setOutput('merged', 'false');
    }
  }

  failure(): string | null {
    const s = this.settings;
    const pr = this.pr;
    // upload-tests reads no pull request, so it never fails on a state
    if (!pr?.state || s.operation === 'upload-tests' || !s.failOn.includes(pr.state)) return null;
    return `#${pr.prNumber} is ${pr.state}${pr.stateReason ? ` (${pr.stateReason})` : ''}`;
  }

  async summary(note?: string): Promise<void> {
    const s = this.settings;
    if (s.operation === 'upload-tests') {
      const table = uploadSummaryTable({ repo: repoName(s), upload: this.upload, note });
      const summary = core.summary.addHeading(table.heading, 3);
      if (table.rows.length > 1)
        summary.addTable([table.rows[0].map((data) => ({ data, header: true })), ...table.rows.slice(1)]);
      if (table.note) summary.addRaw(`\n\n${table.note}\n`);
      await summary.write();
      return;
    }
    let testBranch: { name: string; url: string } | null = null;
    if (this.pr?.testRunId && !this.signal.aborted) {
      try {
        const details = await this.client.call('getMergeQueueTestingDetails', {
          ...queueKey(s),
          testRunId: this.pr.testRunId,
        });
        const server = process.env.GITHUB_SERVER_URL ?? `https://${s.repo.host}`;
        testBranch = {
          name: details.testBranch,
          url: `${server}/${s.repo.owner}/${s.repo.name}/tree/${details.testBranch}`,
        };
      } catch {
        // the summary goes out without the link
      }
    }
    const table = summaryTable({
      operation: s.operation,
      repo: repoName(s),
      targetBranch: s.targetBranch,
      pr: this.pr,
      prNumber: s.prNumber,
      testBranch,
      note,
      now: Date.now(),
    });
    const summary = core.summary
      .addHeading(table.heading, 3)
      .addTable([table.rows[0].map((data) => ({ data, header: true })), table.rows[1]]);
    if (table.link) summary.addLink(table.link.text, table.link.url);
    if (table.note) summary.addRaw(`\n\n${table.note}\n`);
    await summary.write();
  }
}

class StepFailure extends Error {}

function repoName(s: ActionSettings): string {
  return `${s.repo.host}/${s.repo.owner}/${s.repo.name}`;
}

function describe(error: unknown): string {
  if (error instanceof ApiError && error.status === 401) {
    return `The API rejected the token (401): check the token input (for Dependabot or fork PRs, secrets are not passed)`;
  }
  return oneLine(error);
}

/** The Action: never throws, never exits the process; a failure becomes core.setFailed. */
export async function run(): Promise<void> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let step: Step | null = null;
  try {
    const settings = readSettings(runEnvironment());
    core.setSecret(settings.token);
    step = new Step(settings, controller.signal);
    await step.run();
    const failed = step.failure();
    await step
      .summary(failed ?? undefined)
      .catch((e: unknown) => core.warning(`job summary not written: ${oneLine(e)}`));
    if (failed) core.setFailed(failed);
  } catch (error) {
    const message = describe(error);
    if (step) await step.summary(message).catch(() => undefined);
    core.setFailed(message);
  } finally {
    process.removeListener('SIGINT', stop);
    process.removeListener('SIGTERM', stop);
  }
}
