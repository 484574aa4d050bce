import { statSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tempDir } from '../support/tmp.js';

let server: TestServer;
let env: Record<string, string>;
const REPO = ['--repo', 'github.com/acme/web'];

beforeAll(async () => {
  server = await startTestServer({ tokens: { 'cli-token': 'acme', 'other-token': 'globex' } });
  env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: 'cli-token' });
});
afterAll(async () => {
  await server?.close();
});

async function json(args: string[], extraEnv: Record<string, string> = {}) {
  const result = await railyard([...args, '--json'], { ...env, ...extraEnv });
  expect(result.stderr, `${args.join(' ')} → ${result.stderr}`).not.toMatch(/Error/);
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout);
}

describe('mq queue commands', () => {
  it('creates, reads, updates and refuses to delete a non-empty queue', async () => {
    expect(await json(['mq', 'queue', 'create', ...REPO, '--concurrency', '2'])).toEqual({});
    const queue = await json(['mq', 'queue', 'get', ...REPO]);
    expect(queue).toMatchObject({ branch: 'main', concurrency: 2, state: 'running', mode: 'single', enqueuedPullRequests: [] });

    const updated = await json([
      'mq', 'queue', 'update', ...REPO, '--batch', '--batching-min-size', '3', '--merge-method', 'rebase',
      '--required-statuses', 'test,lint', '--testing-timeout-minutes', '0', '--no-comments-enabled',
    ]);
    expect(updated).toMatchObject({ batch: true, batchingMinSize: 3, mergeMethod: 'rebase', requiredStatuses: ['test', 'lint'], testingTimeoutMinutes: 0, commentsEnabled: false });
    expect(updated).not.toHaveProperty('enqueuedPullRequests');
    expect((await json(['mq', 'queue', 'update', ...REPO, '--delete-required-statuses'])).requiredStatuses).toBeNull();

    const dup = await railyard(['mq', 'queue', 'create', ...REPO], env);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/^Error: createQueue: refused, it conflicts with the current state: /);
    expect(dup.stderr).not.toMatch(/HTTP|409/);
    expect(dup.stderr).toMatch(/already exists/);
  });

  it('deletes an empty queue; a non-empty one is refused (400) and kept', async () => {
    const other = ['--repo', 'github.com/acme/deletable'];
    await json(['mq', 'queue', 'create', ...other]);
    // Paused: PR #3 stays in the queue (a sandbox run would merge it in 5 s, before the cancel on a loaded machine).
    await json(['mq', 'queue', 'pause', ...other]);
    await json(['mq', 'submit', '3', ...other]);
    // Without a terminal to ask on, deleting needs --yes (and deletes nothing without it).
    const unasked = await railyard(['mq', 'queue', 'delete', ...other], env);
    expect(unasked.code).toBe(2);
    expect(unasked.stderr).toContain('--yes: required to delete the main queue of github.com/acme/deletable without a terminal to ask on');
    const refused = await railyard(['mq', 'queue', 'delete', ...other, '--yes'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^Error: deleteQueue: refused: .*not empty/);
    expect((await json(['mq', 'queue', 'get', ...other])).enqueuedPullRequests).toHaveLength(1);
    await json(['mq', 'cancel', '3', ...other]);
    // Draining a paused queue says that testing resumes.
    const drained = await railyard(['mq', 'queue', 'drain', ...other], env);
    expect(drained.code).toBe(0);
    expect(drained.stderr).toMatch(/was paused: draining resumes testing/);
    expect(await json(['mq', 'queue', 'delete', ...other, '--yes'])).toEqual({});
    const gone = await railyard(['mq', 'queue', 'get', ...other], env);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/404/);
  });

  it('pause, drain and resume change the queue state', async () => {
    expect((await json(['mq', 'queue', 'pause', ...REPO])).state).toBe('paused');
    expect((await json(['mq', 'queue', 'drain', ...REPO])).state).toBe('draining');
    expect((await json(['mq', 'queue', 'resume', ...REPO])).state).toBe('running');
  });

  it('refuses an update without any setting (usage error, exit 2)', async () => {
    const result = await railyard(['mq', 'queue', 'update', ...REPO], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/nothing to update/);
  });

  it('renders the queue as a table for people', async () => {
    const result = await railyard(['mq', 'queue', 'get', ...REPO], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^concurrency +2$/m);
  });
});

// From here on, three groups run side by side: the PR commands (in order, on the queue made
// above), the error and configuration cases, and the flaky commands. Each mostly waits: on its
// CLI processes, a sandbox run, a retry's back-off.
describe('mq pull request commands', { concurrent: true }, () => {
  describe.sequential('', () => {
    it('submit, status, list, restart, cancel with --json', async () => {
      const submitted = await json(['mq', 'submit', '11', ...REPO, '--priority', 'high']);
      expect(submitted).toMatchObject({ prNumber: 11, priorityName: 'high', priorityValue: 10, isCurrentlySubmittedToQueue: true });
      await json(['mq', 'submit', '12', ...REPO, '--no-batch', '--priority', '42']);

      const status = await json(['mq', 'status', '11', ...REPO]);
      expect(status.prTitle).toBe('Sandbox PR #11');
      expect(status.readiness).toMatchObject({ doesBaseBranchMatch: true, gitHubMergeability: 'mergeable' });
      // The server's riskEstimate (issue 22): in the JSON, and as the dashboard's percentage in the human view.
      expect(status.riskEstimate).toBeGreaterThan(0);
      expect(status.riskEstimate).toBeLessThan(1);
      const human = await railyard(['mq', 'status', '11', ...REPO], env);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toMatch(new RegExp(`^riskEstimate +${(status.riskEstimate * 100).toFixed(0)} % chance its test run fails \\(estimated from the queue's history\\)$`, 'm'));

      const list = await json(['mq', 'list', ...REPO]);
      expect(list.pullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([11, 12]);
      expect(list.pullRequests[1]).toMatchObject({ noBatch: true, priorityValue: 42 });

      expect((await json(['mq', 'restart', '11', ...REPO])).prNumber).toBe(11);
      const cancelled = await json(['mq', 'cancel', '12', ...REPO]);
      expect(cancelled).toMatchObject({ state: 'cancelled', stateReason: 'USER_REQUESTED' });

      const onlyCancelled = await json(['mq', 'list', ...REPO, '--state', 'cancelled']);
      expect(onlyCancelled.pullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([12]);
    });

    it('lists as CSV and Markdown for scripts', async () => {
      const csv = await railyard(['mq', 'list', ...REPO, '--format', 'csv'], env);
      expect(csv.code).toBe(0);
      const lines = csv.stdout.trim().split('\r\n');
      // Plain values for scripts: the number, the priority's name and value apart.
      expect(lines[0]).toBe('PR,State,Reason,Priority,Priority value,Title,Author,SHA,Since');
      expect(lines.slice(1).map((l) => l.split(',')[0])).toContain('11');
      const md = await railyard(['mq', 'list', ...REPO, '--format', 'markdown'], env);
      expect(md.stdout.split('\n')[1]).toMatch(/^\| --- \|/);
    });

    it('status --wait ends with exit 1 when the PR is cancelled meanwhile', async () => {
      await json(['mq', 'submit', '21', ...REPO]);
      let pending!: () => void;
      const printed = new Promise<void>((r) => (pending = r));
      const waiting = railyard(['mq', 'status', '21', ...REPO, '--wait', '--interval', '0.2s', '--timeout', '30s'], env, undefined, undefined, (_out, err) => {
        if (/#21: pending/.test(err)) pending();
      });
      await Promise.race([printed, waiting]); // it waits, and said so (or it ended: the checks below say how)
      await json(['mq', 'cancel', '21', ...REPO]);
      const result = await waiting;
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/#21 cancelled \(USER_REQUESTED\)/);
    });

    it('status --wait gives up at the timeout with exit 1', async () => {
      await json(['mq', 'submit', '22', ...REPO]);
      const result = await railyard(['mq', 'status', '22', ...REPO, '--wait', '--interval', '0.2s', '--timeout', '1s'], env);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/still pending \(API_REQUESTED\) at the timeout/);
    });

    it('impacted targets: list, file, all and none', async () => {
      const pr = await json(['mq', 'status', '11', ...REPO]);
      expect(await json(['mq', 'impacted-targets', '11', ...REPO, '--sha', pr.prSha, '--target', '//a', '--target', '//b'])).toEqual({});
      const file = join(env.HOME, 'targets.txt');
      await writeFile(file, '//x\n//y\n\n');
      expect(await json(['mq', 'impacted-targets', '11', ...REPO, '--sha', pr.prSha, '--file', file])).toEqual({});
      expect(await json(['mq', 'impacted-targets', '11', ...REPO, '--sha', pr.prSha, '--all'])).toEqual({});
      expect(await json(['mq', 'impacted-targets', '11', ...REPO, '--sha', pr.prSha, '--none'])).toEqual({});
      const both = await railyard(['mq', 'impacted-targets', '11', ...REPO, '--sha', pr.prSha, '--all', '--none'], env);
      expect(both.code).toBe(2);
    });

    it('impacted targets: --sha defaults to the PR head; comments, blanks and repeats dropped; an empty list refused', async () => {
      const pr = await json(['mq', 'status', '11', ...REPO]);
      const file = join(env.HOME, 'commented.txt');
      await writeFile(file, '# generated by bazel-diff\n//app:web\n\n//lib:core\n//app:web\n  # trailing note\n');
      const set = await railyard(['mq', 'impacted-targets', '11', ...REPO, '--file', file], env);
      expect(set.stderr).toBe('');
      expect(set.stdout).toBe(`Impacted targets of #11 at ${pr.prSha.slice(0, 12)}: 2 target(s)\n`);
      await writeFile(file, '# nothing changed\n\n');
      const empty = await railyard(['mq', 'impacted-targets', '11', ...REPO, '--file', file], env);
      expect(empty.code).toBe(2);
      expect(empty.stderr).toContain('no targets given; to say the PR impacts nothing, use --none');
      const unknown = await railyard(['mq', 'impacted-targets', '9998', ...REPO, '--all'], env);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/#9998 was never submitted/);
    });

    it('testing-details of an unknown run is a clear 404', async () => {
      const result = await railyard(['mq', 'testing-details', '00000000-0000-4000-8000-000000000000', ...REPO], env);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/404/);
    });

    it('metrics prints Prometheus text, filtered by repository', async () => {
      const result = await railyard(['mq', 'metrics', '--repo', 'github.com/acme/web'], env);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^mq_depth_current\{repo="acme\/web",branch="main",queue_type="main"\} \d+$/m);
      const asJson = await json(['mq', 'metrics']);
      expect(asJson.metrics).toMatch(/# TYPE mq_depth_current gauge/);
    });

    it('a PR that was never submitted: 404, exit 1, message names it', async () => {
      const result = await railyard(['mq', 'status', '9999', ...REPO], env);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/#9999 was never submitted/);
    });
  });
});

describe.concurrent('errors, auth and configuration', () => {
  it('a wrong token exits 4 with a hint', async () => {
    const result = await railyard(['mq', 'queue', 'get', ...REPO, '--token', 'nope'], env);
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/rejected the API token \(401\).*RAILYARD_TOKEN/);
  });

  it("another organisation's token does not see the queue (404)", async () => {
    const result = await railyard(['mq', 'queue', 'get', ...REPO], { ...env, RAILYARD_TOKEN: 'other-token' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/404/);
  });

  it('usage errors exit 2: bad PR number, bad priority, missing argument', async () => {
    for (const args of [['mq', 'submit', 'abc', ...REPO], ['mq', 'submit', '5', ...REPO, '--priority', 'asap'], ['mq', 'submit', ...REPO]]) {
      const result = await railyard(args, env);
      expect(result.code, args.join(' ')).toBe(2);
    }
  });

  it('no token anywhere is a usage error naming the ways to give one', async () => {
    const result = await railyard(['mq', 'queue', 'get', ...REPO], isolatedEnv({ RAILYARD_API_URL: server.url }));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--token.*RAILYARD_TOKEN/);
  });

  it('an unreachable server is a clear error after retries', async () => {
    const result = await railyard(['mq', 'status', '1', ...REPO, '--api-url', 'http://127.0.0.1:9/v1'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/cannot reach http:\/\/127\.0\.0\.1:9\/v1/);
  });

  it('config set/get: the file is 0600 and its values are used', async () => {
    const home = isolatedEnv();
    expect((await railyard(['config', 'set', 'api-url', server.url], home)).code).toBe(0);
    expect((await railyard(['config', 'set', 'token', 'cli-token'], home)).code).toBe(0);
    expect((await railyard(['config', 'set', 'repo', 'github.com/acme/web'], home)).code).toBe(0);
    const file = join(home.XDG_CONFIG_HOME, 'railyard', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ 'api-url': server.url, token: 'cli-token' });
    const got = await railyard(['config', 'get', '--json'], home);
    expect(JSON.parse(got.stdout)).toMatchObject({ 'api-url': server.url, token: 'cli-…(9 chars)' });
    // No flags, no env: everything comes from the config file.
    const queue = await railyard(['mq', 'queue', 'get', '--json'], home);
    expect(queue.code).toBe(0);
    expect(JSON.parse(queue.stdout).branch).toBe('main');
    const bad = await railyard(['config', 'set', 'api-url', 'not a url'], home);
    expect(bad.code).toBe(2);
    // An unset key is an answer, not a usage error: exit 1, as `git config` does.
    const unset = await railyard(['config', 'get', 'org'], home);
    expect(unset.code).toBe(1);
    expect(unset.stderr).toMatch(/^Error: org is not set in .*config\.json\n$/);
    // config set talks to no server: its help lists no --api-url or --token.
    const help = await railyard(['config', 'set', '--help'], home);
    expect(help.stdout).not.toMatch(/--api-url|--token/);
    // mq cancel of a PR that already merged: a notice, exit 0 (as the Action's cancel).
    const merged = ['--repo', 'github.com/acme/cancel-merged'];
    await railyard(['mq', 'queue', 'create', ...merged], home);
    await railyard(['mq', 'submit', '5', ...merged], home);
    expect((await railyard(['mq', 'status', '5', ...merged, '--wait', '--interval', '200ms', '--timeout', '60s'], home)).code).toBe(0);
    const cancel = await railyard(['mq', 'cancel', '5', ...merged], home);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stderr).toMatch(/^#5 is already merged \(MERGE_GRAPH_\w+\): nothing to cancel\n$/);
  });

  it('gh-grade basics: a help command, topic descriptions, a hint for a mistyped command, shell completion', async () => {
    const help = await railyard(['help', 'mq'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/mq queue\s+Create, read, update and delete merge queues/);
    const typo = await railyard(['mq', 'sumbit', '12'], env);
    expect(typo.code).toBe(127);
    expect(typo.stderr).toBe('Error: "mq sumbit 12" is not a railyard command. Did you mean "railyard mq submit 12"?\n');
    const completion = await railyard(['autocomplete', 'script', 'bash'], env);
    expect(completion.code, completion.stderr).toBe(0);
    expect(completion.stdout).toContain('RAILYARD_AC_BASH_SETUP_PATH');
  });

  it('config set token - reads stdin (the token is never an argument); config unset removes a key', async () => {
    const home = isolatedEnv({ RAILYARD_API_URL: server.url });
    const set = await railyard(['config', 'set', 'token', '-'], home, 'cli-token\n');
    expect(set.code, set.stderr).toBe(0);
    const file = join(home.XDG_CONFIG_HOME, 'railyard', 'config.json');
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ token: 'cli-token' });
    expect((await railyard(['mq', 'queue', 'get', ...REPO, '--json'], home)).code).toBe(0);
    const empty = await railyard(['config', 'set', 'token', '-'], home, '');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('token: nothing on stdin');

    const unset = await railyard(['config', 'unset', 'token'], home);
    expect(unset.code).toBe(0);
    expect(unset.stdout).toMatch(/^token removed from /);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({});
    const none = await railyard(['mq', 'queue', 'get', ...REPO], home);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no API token');
    expect((await railyard(['config', 'unset', 'token'], home)).stdout).toMatch(/^token was not set in /);
  });

  it('--repo defaults to the origin remote of the current git checkout', async () => {
    const { execFileSync } = await import('node:child_process');
    // A checkout of its own: the other tests' commands run in env.HOME at the same time.
    const dir = await tempDir();
    execFileSync('git', ['init', '-q', dir]);
    execFileSync('git', ['-C', dir, 'remote', 'add', 'origin', 'git@github.com:acme/web.git']);
    const result = await railyard(['mq', 'queue', 'get', '--json'], env, undefined, dir);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).branch).toBe('main');
  });
});

describe.concurrent('flaky commands', () => {
  it('list-unhealthy, list-quarantined and list-failing render empty results', async () => {
    const unhealthy = await json(['flaky', 'list-unhealthy', ...REPO, '--org', 'acme', '--status', 'broken']);
    expect(unhealthy).toEqual({ tests: [] });
    const quarantined = await json(['flaky', 'list-quarantined', ...REPO, '--org', 'acme']);
    expect(quarantined).toEqual({ quarantined_tests: [] });
    // 20 days: three calls of at most 7 days each, merged.
    const failing = await json(['flaky', 'list-failing', ...REPO, '--org', 'acme', '--since', '20d']);
    expect(failing).toEqual({ tests: [] });
    const csv = await railyard(['flaky', 'list-failing', ...REPO, '--org', 'acme', '--format', 'csv'], env);
    expect(csv.stdout.split('\r\n')[0]).toMatch(/^Test,Status,Reason,File,Fail 7d/);
  });

  it('show of an unknown test is 404; another organisation slug is 404; missing --org is a usage error', async () => {
    const show = await railyard(['flaky', 'show', '00000000-0000-4000-8000-000000000000', ...REPO, '--org', 'acme'], env);
    expect(show.code).toBe(1);
    expect(show.stderr).toMatch(/404/);
    const other = await railyard(['flaky', 'list-unhealthy', ...REPO, '--org', 'globex'], env);
    expect(other.code).toBe(1);
    const noOrg = await railyard(['flaky', 'list-unhealthy', ...REPO], env);
    expect(noOrg.code).toBe(2);
    expect(noOrg.stderr).toMatch(/--org/);
  });

  it('link-ticket reaches the server: an unknown test is a 404 naming it, and nothing claims it was linked', async () => {
    // Linking a ticket to a test that exists, and seeing it in `flaky show`: flaky-upload.test.ts.
    const result = await railyard(['flaky', 'link-ticket', '00000000-0000-4000-8000-000000000000', 'KAN-1', ...REPO], env);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim()).toBe(
      'Error: linkTicketToTestCase: not found (404): test_case_id: no test 00000000-0000-4000-8000-000000000000 in github.com/acme/web',
    );
  });
});

describe('help', () => {
  it('every command has a summary and an example', async () => {
    const manifest = JSON.parse(await readFile(new URL('../../oclif.manifest.json', import.meta.url), 'utf8')) as {
      commands: Record<string, { summary?: string; description?: string; examples?: string[] }>;
    };
    const ids = Object.keys(manifest.commands);
    expect(ids.length).toBeGreaterThanOrEqual(23);
    for (const id of ids) {
      const cmd = manifest.commands[id];
      expect(cmd.summary ?? cmd.description, id).toBeTruthy();
      expect(cmd.examples?.length ?? 0, id).toBeGreaterThan(0);
    }
  });
});
