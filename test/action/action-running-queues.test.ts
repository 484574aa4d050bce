/**
 * The GitHub Action (the committed dist/index.js, run as the runner does) against servers with
 * running sandbox queues of their own: `wait` until a PR merges (the step passes) or its tests
 * fail (the step fails with the reason), and submit, impacted-targets, status, cancel and wait
 * over /v2 giving the outputs they give over /v1.
 * The other operations and inputs, on a paused queue: action.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { startTestServer } from '../support/server.js';
import { runAction } from './run-action.js';

describe('the GitHub Action (dist/index.js)', () => {
  describe.concurrent('running queues of their own', () => {
    it.sequential(
      'wait: until merged (exit 0), and a PR whose tests fail fails the step with the reason',
      async () => {
        // A running sandbox queue: runs take 1 s; any run containing #5 fails.
        const live = await startTestServer({
          tokens: { t3: 'acme' },
          sandbox: { testSeconds: 1, failPrs: new Set([5]) },
        });
        try {
          const inputs = {
            token: 't3',
            'api-url': live.url,
            'poll-interval-seconds': '0.2',
            'timeout-minutes': '1',
          };
          const key = { repo: { host: 'github.com', owner: 'acme', name: 'web' }, targetBranch: 'main' };
          await fetch(`${live.url}/createQueue`, {
            method: 'POST',
            headers: { 'x-api-token': 't3' },
            body: JSON.stringify(key),
          });
          expect((await runAction({ ...inputs, operation: 'submit', 'pr-number': '4' })).code).toBe(0);
          expect((await runAction({ ...inputs, operation: 'submit', 'pr-number': '5' })).code).toBe(0);
          const [four, five] = await Promise.all([
            runAction({ ...inputs, operation: 'wait', 'pr-number': '4' }),
            runAction({ ...inputs, operation: 'wait', 'pr-number': '5' }),
          ]);
          expect(four.code, four.stdout).toBe(0);
          expect(four.outputs).toMatchObject({ state: 'merged', merged: 'true', 'pr-number': '4' });
          expect(four.stdout).toMatch(/#4: merged/);
          expect(four.summary).toMatch(/merged/);
          expect(five.code, five.stdout).toBe(1);
          expect(five.outputs).toMatchObject({ state: 'failed', merged: 'false' });
          expect(five.stdout).toMatch(/::error::#5 is failed \(TEST_RUN_REQUIRED_STATUS_FAILED\)/);
        } finally {
          await live.close();
        }
      },
    );

    it.sequential(
      'submit, impacted-targets, status, cancel and wait over /v2 give the outputs they give over /v1',
      async () => {
        // A running sandbox queue: runs take 1 s; any run containing #5 fails.
        const live = await startTestServer({
          tokens: { t4: 'acme' },
          sandbox: { testSeconds: 1, failPrs: new Set([5]) },
        });
        try {
          const v1 = {
            token: 't4',
            'api-url': live.url,
            'poll-interval-seconds': '0.2',
            'timeout-minutes': '1',
          };
          const v2 = { ...v1, 'api-version': 'v2' };
          const key = { repo: { host: 'github.com', owner: 'acme', name: 'web' }, targetBranch: 'main' };
          const headers = { 'x-api-token': 't4', 'content-type': 'application/json' };
          await fetch(`${live.url}/createQueue`, { method: 'POST', headers, body: JSON.stringify(key) });
          await fetch(`${live.url}/updateQueue`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ ...key, state: 'paused' }),
          });

          const submit = await runAction({ ...v2, operation: 'submit', 'pr-number': '6', priority: 'high' });
          expect(submit.code, submit.stdout).toBe(0);
          expect(submit.outputs).toMatchObject({
            'pr-number': '6',
            state: 'pending',
            merged: 'false',
            priority: 'high',
          });
          expect(submit.stdout).toContain('Submitted #6 to the main queue of github.com/acme/web');
          expect(submit.stdout).toContain('::notice::the queue is paused');
          const sha = JSON.parse(submit.outputs.response).prSha as string;
          const targets = await runAction({
            ...v2,
            operation: 'impacted-targets',
            'impacted-targets': '//a\n//b',
            'pr-number': '6',
            'head-sha': sha,
          });
          expect(targets.code, targets.stdout).toBe(0);
          expect(targets.stdout).toMatch(/2 target\(s\)/);
          // The same PR read over both versions: the same outputs, response included.
          const [one, two] = await Promise.all([
            runAction({ ...v1, operation: 'status', 'pr-number': '6' }),
            runAction({ ...v2, operation: 'status', 'pr-number': '6' }),
          ]);
          expect(two.code).toBe(0);
          expect(two.outputs).toEqual(one.outputs);
          const cancel = await runAction({ ...v2, operation: 'cancel', 'pr-number': '6' });
          expect(cancel.code).toBe(1);
          expect(cancel.outputs.state).toBe('cancelled');
          expect(cancel.stdout).toMatch(/::error::#6 is cancelled \(USER_REQUESTED\)/);
          const again = await runAction({ ...v2, operation: 'cancel', 'pr-number': '6', 'fail-on': '' });
          expect(again.stdout).toMatch(
            /::notice::#6 is already cancelled \(USER_REQUESTED\): nothing to cancel/,
          );

          await fetch(`${live.url}/updateQueue`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ ...key, state: 'running' }),
          });
          expect((await runAction({ ...v2, operation: 'submit', 'pr-number': '4' })).code).toBe(0);
          expect((await runAction({ ...v2, operation: 'submit', 'pr-number': '5' })).code).toBe(0);
          const [four, five] = await Promise.all([
            runAction({ ...v2, operation: 'wait', 'pr-number': '4' }),
            runAction({ ...v2, operation: 'wait', 'pr-number': '5' }),
          ]);
          expect(four.code, four.stdout).toBe(0);
          expect(four.outputs).toMatchObject({ state: 'merged', merged: 'true', 'pr-number': '4' });
          expect(five.code, five.stdout).toBe(1);
          expect(five.outputs).toMatchObject({ state: 'failed', merged: 'false' });
          expect(five.stdout).toMatch(/::error::#5 is failed \(TEST_RUN_REQUIRED_STATUS_FAILED\)/);
        } finally {
          await live.close();
        }
      },
    );
  });
});
