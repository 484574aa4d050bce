/**
 * `railyard mq doctor` against the GitHub emulator, end to end: the real built server process
 * (`serve --github`) over real HTTP and git, and the real `railyard` binary. It names a required
 * check that never reports on the queue's test commits, and what the server's token (a PAT with
 * read access only, a GitHub App without Commit statuses) may not do.
 */
import { describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import {
  API_TOKEN,
  createQueue,
  emulator,
  GH_TOKEN,
  NAME,
  OWNER,
  scoped,
  settled,
  startRailyard,
  submit,
  tempDir,
  waitFor,
  type RailyardProcess,
} from './github-harness.js';
import type { GitHubEmulator } from '../support/github/index.js';

async function doctor(gh: GitHubEmulator, server: RailyardProcess) {
  const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: API_TOKEN });
  const r = await railyard(['mq', 'doctor', '--repo', `${gh.host}/${OWNER}/${NAME}`, '--json'], env);
  const answer = JSON.parse(r.stdout) as {
    notices: Array<{ kind: string; text: string; check?: string; permission?: string }>;
  };
  return { code: r.code, stderr: r.stderr, notices: answer.notices };
}

describe.concurrent('railyard mq doctor (GitHub)', () => {
  it(
    "names the required check GitHub's CI never reports on the queue's test branches, and nothing else for a token that may do everything",
    scoped(async () => {
      const gh = await emulator();
      gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
      // The CI runs "ci" on every branch, never "e2e": a run waits for e2e until it times out (1
      // minute here, which this server makes last 10 s: serve --testing-minute-seconds).
      gh.setCi(OWNER, NAME, () => [{ name: 'ci', conclusion: 'success', delayMs: 50 }]);
      const server = await startRailyard(gh, {
        webhooks: true,
        dataDir: tempDir('railyard-gh-'),
        // Webhooks and the timeout's timer drive it: polled every second, not five times a second.
        pollSeconds: 1,
        extraArgs: ['--testing-minute-seconds', '10'],
      });
      const pr = await gh.createPullRequest(OWNER, NAME, {
        head: 'feat',
        title: 'Feature',
        files: { 'f.txt': 'f\n' },
      });
      await createQueue(server, gh, {
        createPrsForTestingBranches: false,
        requiredStatuses: ['ci', 'e2e'],
        testingTimeoutMinutes: 1,
      });

      const before = await doctor(gh, server);
      expect(before.code, before.stderr).toBe(0);
      expect(before.notices).toEqual([]);

      await submit(server, gh, pr.number);
      expect(await waitFor(server, gh, pr.number, settled, 150_000)).toMatchObject({
        state: 'failed',
        stateReason: 'TEST_RUN_TIMEOUT',
      });
      const after = await doctor(gh, server);
      expect(after.code, after.stderr).toBe(1);
      expect(after.notices.map((n) => [n.kind, n.check])).toEqual([['required_check_never_reported', 'e2e']]);
      expect(after.notices[0].text).toMatch(
        /^Required check "e2e" never reported on the queue's test commits \(1 test run since /,
      );
      // The timeout is told in the queue's own minutes, however long the server makes them.
      expect(after.notices[0].text).toContain(
        'so every run waits for it up to testingTimeoutMinutes (1 min) and fails',
      );
    }),
    180_000,
  );

  it(
    'names push and statuses for a PAT whose account may only read the repository',
    scoped(async () => {
      const gh = await emulator();
      gh.addToken(GH_TOKEN, { login: 'railyard-bot', permission: 'read' });
      gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
      const server = await startRailyard(gh, { webhooks: false, dataDir: tempDir('railyard-gh-') });
      await createQueue(server, gh);
      const r = await doctor(gh, server);
      expect(r.code, r.stderr).toBe(1);
      expect(r.notices.map((n) => [n.kind, n.permission])).toEqual([
        ['forge_permission', 'push'],
        ['forge_permission', 'statuses'],
      ]);
      expect(r.notices[0].text).toBe(
        `The GitHub token cannot push to ${OWNER}/${NAME} (its account has read access only): the queue can neither push test branches nor land; give the account write access to the repository.`,
      );
    }),
  );

  it(
    'names Commit statuses for a GitHub App installed without it',
    scoped(async () => {
      const gh = await emulator();
      gh.createRepo(OWNER, NAME, { files: { 'README.md': 'app\n' } });
      const app = gh.createApp();
      gh.installApp(app.appId, OWNER, NAME, {
        checks: 'read',
        contents: 'write',
        issues: 'write',
        metadata: 'read',
        pull_requests: 'write',
      });
      const server = await startRailyard(gh, {
        webhooks: false,
        dataDir: tempDir('railyard-gh-'),
        auth: { kind: 'app', ...app },
      });
      await createQueue(server, gh);
      const r = await doctor(gh, server);
      expect(r.code, r.stderr).toBe(1);
      expect(r.notices.map((n) => [n.kind, n.permission])).toEqual([['forge_permission', 'statuses']]);
      expect(r.notices[0].text).toBe(
        `The GitHub App cannot set commit statuses in ${OWNER}/${NAME} (Commit statuses: none): pull requests never show the queue's railyard/merge-queue status; grant it Commit statuses: write.`,
      );
    }),
  );
});
