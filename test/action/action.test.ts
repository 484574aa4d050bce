/**
 * The GitHub Action (the committed dist/index.js, run as the runner does) against a real server:
 * each operation's outputs, job summary and one-line errors on a paused queue of a shared server
 * (submit, status, cancel, wait and its timeout, impacted-targets, merge_group events, bad inputs,
 * upload-tests of JUnit reports), the server going away during a wait, and the heartbeat.
 * Waiting on running queues, and the same steps over /v2: action-running-queues.test.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { tempDirSync } from '../support/tmp.js';
import { runAction } from './run-action.js';

let server: TestServer;
let base: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer({ tokens: { 'action-token': 'acme' } });
  base = { token: 'action-token', 'api-url': server.url };
  const res = await fetch(`${server.url}/createQueue`, {
    method: 'POST',
    headers: { 'x-api-token': 'action-token', 'content-type': 'application/json' },
    body: JSON.stringify({ repo: { host: 'github.com', owner: 'acme', name: 'web' }, targetBranch: 'main' }),
  });
  expect(res.status).toBe(200);
  // Paused: submitted PRs stay pending, so these tests see the states they set up themselves.
  const paused = await fetch(`${server.url}/updateQueue`, {
    method: 'POST',
    headers: { 'x-api-token': 'action-token', 'content-type': 'application/json' },
    body: JSON.stringify({
      repo: { host: 'github.com', owner: 'acme', name: 'web' },
      targetBranch: 'main',
      state: 'paused',
    }),
  });
  expect(paused.status).toBe(200);
});
afterAll(async () => {
  await server?.close();
});

// Two lanes side by side (each lane's tests in order): most of this file's time is the Action
// waiting (its retries of an unreachable server, poll intervals, a timeout), not working. The
// heartbeat test bounds when its first line comes ("waited 1s"): it runs after the ~18 s of
// retries, when lane 1 has ended, not beside its Action processes (at load 16 it printed
// "waited 2s" beside them).
describe('the GitHub Action (dist/index.js)', () => {
  describe.concurrent('lane 1: the paused queue of the shared server, one step at a time', () => {
    it.sequential('submits the pull request of the event, sets outputs and writes a summary', async () => {
      const run = await runAction({ ...base, operation: 'submit', priority: 'high' });
      expect(run.code, run.stdout).toBe(0);
      expect(run.outputs).toMatchObject({
        'pr-number': '7',
        state: 'pending',
        merged: 'false',
        priority: 'high',
      });
      expect(JSON.parse(run.outputs.response)).toMatchObject({ prNumber: 7, priorityValue: 10 });
      expect(run.summary).toMatch(/<table>/);
      expect(run.summary).toMatch(/#7 Sandbox PR #7/);
      expect(run.stdout).toMatch(/::add-mask::action-token/);
      // The queue of these tests is paused: the step says why the PR will wait, as mq submit does.
      expect(run.stdout).toContain(
        '::notice::the queue is paused: it starts and merges nothing, so #7 waits until it is resumed',
      );
    });

    it.sequential(
      'status and cancel; fail-on makes a cancelled PR fail the step with the reason',
      async () => {
        const status = await runAction({ ...base, operation: 'status' });
        expect(status.code).toBe(0);
        expect(status.outputs.state).toBe('pending');
        const cancel = await runAction({ ...base, operation: 'cancel' });
        expect(cancel.code).toBe(1);
        expect(cancel.outputs.state).toBe('cancelled');
        expect(cancel.stdout).toMatch(/::error::#7 is cancelled \(USER_REQUESTED\)/);
        const lenient = await runAction({ ...base, operation: 'status', 'fail-on': 'failed' });
        expect(lenient.code).toBe(0);
      },
    );

    it.sequential(
      'wait: a PR that ends cancelled fails the step, with each state change printed once',
      async () => {
        await runAction({ ...base, operation: 'submit', 'pr-number': '8' });
        let pending!: () => void;
        const printed = new Promise<void>((r) => (pending = r));
        const waiting = runAction(
          {
            ...base,
            operation: 'wait',
            'pr-number': '8',
            'poll-interval-seconds': '0.2',
            'timeout-minutes': '1',
          },
          { onOutput: (out) => /#8: pending/.test(out) && pending() },
        );
        await Promise.race([printed, waiting]); // it waits, and said so (or it ended: the checks below say how)
        await runAction({ ...base, operation: 'cancel', 'pr-number': '8', 'fail-on': '' });
        const run = await waiting;
        expect(run.code).toBe(1);
        expect(run.stdout.match(/#8: pending/g)).toHaveLength(1);
        expect(run.stdout).toMatch(/#8: cancelled \(USER_REQUESTED\)/);
        expect(run.outputs).toMatchObject({ state: 'cancelled', merged: 'false' });
      },
    );

    it.sequential('wait: times out with a clear message (decimal minutes)', async () => {
      await runAction({ ...base, operation: 'submit', 'pr-number': '9' });
      const run = await runAction({
        ...base,
        operation: 'wait',
        'pr-number': '9',
        'timeout-minutes': '0.02',
        'poll-interval-seconds': '0.2',
      });
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/::error::#9 is still pending after 0\.02 minute\(s\)/);
      expect(run.outputs.state).toBe('pending');
    });

    it.sequential('a wrong token fails with a one-line reason', async () => {
      const run = await runAction({ ...base, token: 'wrong', operation: 'status' });
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/::error::The API rejected the token \(401\)/);
      expect(run.stdout.replace('::add-mask::wrong', '')).not.toMatch(/wrong/);
    });

    it.sequential('impacted-targets: ALL, and a newline list', async () => {
      const all = await runAction({
        ...base,
        operation: 'impacted-targets',
        'impacted-targets': 'ALL',
        'pr-number': '7',
      });
      expect(all.code, all.stdout).toBe(0);
      expect(all.stdout).toMatch(/: ALL/);
      const list = await runAction({
        ...base,
        operation: 'impacted-targets',
        'impacted-targets': '//a\n//b\n',
        'pr-number': '7',
      });
      expect(list.stdout).toMatch(/2 target\(s\)/);
    });

    it.sequential('bad inputs fail before any request, naming the input', async () => {
      const noPr = await runAction({ ...base, operation: 'status' }, { event: {}, eventName: 'push' });
      expect(noPr.code).toBe(1);
      expect(noPr.stdout).toMatch(/::error::pr-number: required for a push event/);
      const badOp = await runAction({ ...base, operation: 'merge' });
      expect(badOp.stdout).toMatch(/::error::operation: must be one of/);
    });

    it.sequential('fail-on accepts only known states: a typo fails the step before any request', async () => {
      const typo = await runAction({
        ...base,
        operation: 'submit',
        'pr-number': '30',
        'fail-on': 'faild,cancelled',
      });
      expect(typo.code).toBe(1);
      expect(typo.stdout).toContain(
        '::error::fail-on: unknown state "faild" (states: not_ready, pending, testing',
      );
      expect(typo.stdout).not.toMatch(/Submitted/);
      const status = await fetch(`${server.url}/getSubmittedPullRequest`, {
        method: 'POST',
        headers: { 'x-api-token': 'action-token' },
        body: JSON.stringify({
          repo: { host: 'github.com', owner: 'acme', name: 'web' },
          targetBranch: 'main',
          pr: { number: 30 },
        }),
      });
      expect(status.status).toBe(404);
    });

    it.sequential('cancel on a PR that already left the queue is a notice, not a failure', async () => {
      await runAction({ ...base, operation: 'submit', 'pr-number': '31' });
      expect(
        (await runAction({ ...base, operation: 'cancel', 'pr-number': '31', 'fail-on': 'failed' })).code,
      ).toBe(0);
      const again = await runAction({ ...base, operation: 'cancel', 'pr-number': '31', 'fail-on': 'failed' });
      expect(again.code, again.stdout).toBe(0);
      expect(again.stdout).toContain(
        '::notice::#31 is already cancelled (USER_REQUESTED): nothing to cancel',
      );
      expect(again.outputs.state).toBe('cancelled');
    });

    it.sequential('takes the PR number and base branch from a merge_group event', async () => {
      const event = {
        merge_group: {
          head_ref: 'refs/heads/gh-readonly-queue/main/pr-7-abcdef0',
          base_ref: 'refs/heads/main',
          head_sha: 'b'.repeat(40),
        },
      };
      const run = await runAction({ ...base, operation: 'status' }, { event, eventName: 'merge_group' });
      expect(run.outputs['pr-number']).toBe('7');
    });

    it.sequential(
      'upload-tests: sends the JUnit reports of the workspace, outputs the counts and writes them to the job summary',
      async () => {
        const workspace = tempDirSync('railyard-ws-');
        mkdirSync(join(workspace, 'reports', 'unit'), { recursive: true });
        mkdirSync(join(workspace, '.github'));
        writeFileSync(join(workspace, '.github', 'CODEOWNERS'), 'src/ @acme/app\n');
        const tc = (name: string, body = '') =>
          `<testcase classname="app" name="${name}" file="src/app.js">${body}</testcase>`;
        writeFileSync(
          join(workspace, 'reports', 'unit', 'a.xml'),
          `<testsuite name="a">${tc('passes')}${tc('fails', '<failure message="x"/>')}</testsuite>`,
        );
        writeFileSync(
          join(workspace, 'reports', 'b.xml'),
          `<testsuite name="b">${tc('retried', '<failure message="x"/>')}${tc('retried')}${tc('skips', '<skipped/>')}</testsuite>`,
        );
        const env = {
          GITHUB_WORKSPACE: workspace,
          GITHUB_HEAD_REF: 'feature-7',
          GITHUB_JOB: 'test',
          GITHUB_RUN_ATTEMPT: '1',
        };
        const run = await runAction(
          { ...base, operation: 'upload-tests', org: 'acme', junit: 'reports/**/*.xml, missing/*.xml' },
          { env, cwd: workspace },
        );
        expect(run.code, run.stdout).toBe(0);
        expect(JSON.parse(run.outputs.response)).toMatchObject({
          files: 2,
          tests: 4,
          passed: 1,
          failed: 1,
          flaky: 1,
          skipped: 1,
          new_tests: 4,
          requests: 1,
        });
        expect(run.outputs['pr-number']).toBe('7');
        expect(run.stdout).toMatch(
          /Uploaded 2 file\(s\): 4 test\(s\), 1 passed, 1 failed, 1 flaky, 1 skipped, 4 new/,
        );
        expect(run.summary).toMatch(/Test results: 4 test\(s\) uploaded for github.com\/acme\/web/);
        expect(run.summary).toMatch(
          /<td>2<\/td><td>4<\/td><td>1<\/td><td>1<\/td><td>1<\/td><td>1<\/td><td>4<\/td>/,
        );

        // The server stored the results (a retried test failed once too) with the workspace's CODEOWNERS.
        const failing = await fetch(`${server.url}/flaky-tests/list-failing-tests`, {
          method: 'POST',
          headers: { 'x-api-token': 'action-token', 'content-type': 'application/json' },
          body: JSON.stringify({
            repo: { host: 'github.com', owner: 'acme', name: 'web' },
            org_url_slug: 'acme',
            start_time: new Date(Date.now() - 3_600_000).toISOString(),
            end_time: new Date(Date.now() + 60_000).toISOString(),
            page_query: { page_size: 10 },
          }),
        });
        const body = (await failing.json()) as { tests: Array<{ name: string; codeowners: string[] }> };
        expect(body.tests.map((t) => [t.name, t.codeowners]).sort()).toEqual([
          ['fails', ['@acme/app']],
          ['retried', ['@acme/app']],
        ]);
      },
    );

    it.sequential(
      'upload-tests: no matching report, or no org, fails the step naming the input',
      async () => {
        const workspace = tempDirSync('railyard-ws-');
        const none = await runAction(
          { ...base, operation: 'upload-tests', org: 'acme', junit: 'reports/*.xml' },
          { env: { GITHUB_WORKSPACE: workspace } },
        );
        expect(none.code).toBe(1);
        expect(none.stdout).toMatch(/::error::junit: no file matches "reports\/\*\.xml"/);
        expect(none.summary).toMatch(/Test results: not uploaded/);
        const noOrg = await runAction({ ...base, operation: 'upload-tests', junit: 'reports/*.xml' });
        expect(noOrg.stdout).toMatch(/::error::org: required for operation upload-tests/);
      },
    );

    it.sequential(
      'a wrong api-version fails before any request; upload-tests on v2 names its operation and says to use v1',
      async () => {
        const bad = await runAction({ ...base, operation: 'status', 'api-version': '3' });
        expect(bad.code).toBe(1);
        expect(bad.stdout).toMatch(/::error::api-version: must be v1 or v2, got "3"/);
        const workspace = tempDirSync('railyard-ws-v2-');
        writeFileSync(
          join(workspace, 'a.xml'),
          '<testsuite name="a"><testcase classname="app" name="ok"/></testsuite>',
        );
        const upload = await runAction(
          { ...base, 'api-version': 'v2', operation: 'upload-tests', org: 'acme', junit: 'a.xml' },
          { env: { GITHUB_WORKSPACE: workspace }, cwd: workspace },
        );
        expect(upload.code).toBe(1);
        expect(upload.stdout).toMatch(
          /uploadTestResults: not an operation of the v2 API; use API version v1 for it/,
        );
      },
    );
  });

  describe.concurrent(
    'lane 2: the server going away (the Action sits out its retries), then the heartbeat',
    () => {
      it.sequential('wait: the server going away is retried, then a clear error', async () => {
        const other = await startTestServer({ tokens: { t2: 'acme' } });
        const key = { repo: { host: 'github.com', owner: 'acme', name: 'web' }, targetBranch: 'main' };
        const headers = { 'x-api-token': 't2', 'content-type': 'application/json' };
        await fetch(`${other.url}/createQueue`, { method: 'POST', headers, body: JSON.stringify(key) });
        await fetch(`${other.url}/submitPullRequest`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ ...key, pr: { number: 3 } }),
        });
        let pending!: () => void;
        const read = new Promise<void>((r) => (pending = r));
        const waiting = runAction(
          {
            token: 't2',
            'api-url': other.url,
            operation: 'wait',
            'pr-number': '3',
            'poll-interval-seconds': '0.1',
            'timeout-minutes': '1',
          },
          { onOutput: (out) => /#3: [a-z_]+/.test(out) && pending() },
        );
        await Promise.race([read, waiting]); // it has read the PR once (or it ended: the checks below say how)
        await other.close();
        const run = await waiting;
        expect(run.code).toBe(1);
        expect(run.stdout).toMatch(/::warning::Reading #3 failed \(.*cannot reach/);
        expect(run.stdout).toMatch(/::error::.*cannot reach/);
      });

      it.sequential('wait: a heartbeat says where the PR is at least every heartbeat-seconds', async () => {
        await runAction({ ...base, operation: 'submit', 'pr-number': '32' });
        const run = await runAction({
          ...base,
          operation: 'wait',
          'pr-number': '32',
          'poll-interval-seconds': '0.3',
          'heartbeat-seconds': '1',
          'timeout-minutes': '0.05',
        });
        expect(run.code).toBe(1);
        const beats = run.stdout.split('\n').filter((l) => l.startsWith('#32 is still pending'));
        expect(beats.length).toBeGreaterThanOrEqual(2);
        expect(beats[0]).toMatch(/^#32 is still pending, position \d+ of \d+, \d+s in queue, waited 1s$/);
        const bad = await runAction({
          ...base,
          operation: 'wait',
          'pr-number': '32',
          'heartbeat-seconds': '120',
        });
        expect(bad.stdout).toContain('::error::heartbeat-seconds: at most 60');
      });
    },
  );
});
