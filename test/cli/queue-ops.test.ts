import { describe, expect, it } from 'vitest';
import { railyard } from '../support/cli.js';
import { sandboxForCli } from '../support/sandbox-cli.js';

// `mq list` order and the notices of `mq submit`, through the real binary against a real
// `railyard serve --sandbox` (runs take a minute, so what is testing stays testing).
// Every test has queues of its own: they all run side by side (each mostly waits on its CLI processes).
const TOKEN = 'ry_queue_ops_test_token_0123456789abcdef0123';
const sandbox = sandboxForCli('railyard-queue-ops-', TOKEN);

async function ry(args: string[]) {
  const result = await railyard(args, sandbox.env);
  expect(result.code, `${args.join(' ')} → ${result.stderr}`).toBe(0);
  return result;
}
const json = async (args: string[]) => JSON.parse((await ry([...args, '--json'])).stdout);
const numbers = (list: { pullRequests: { prNumber: number }[] }) => list.pullRequests.map((p) => p.prNumber);

describe.concurrent('railyard mq list', () => {
  const REPO = ['--repo', 'acme/order'];

  it('lists in queue order as the engine sees it: testing first, then urgent / higher priority, then submission, then PRs that left', async () => {
    await ry(['mq', 'queue', 'create', ...REPO, '--concurrency', '1']);
    await ry(['mq', 'submit', '1', ...REPO]); // starts testing at once (a free slot)
    await ry(['mq', 'submit', '2', ...REPO, '--priority', 'low']);
    await ry(['mq', 'submit', '3', ...REPO]);
    await ry(['mq', 'submit', '4', ...REPO, '--priority', 'high']);
    await ry(['mq', 'submit', '5', ...REPO, '--priority', 'urgent']); // skips the line: #1's run restarts behind it
    await ry(['mq', 'cancel', '3', ...REPO]);

    const list = await json(['mq', 'list', ...REPO]);
    expect(
      list.pullRequests.map((p: { prNumber: number; state: string }) => `#${p.prNumber} ${p.state}`),
    ).toEqual(['#5 testing', '#4 pending', '#1 pending', '#2 pending', '#3 cancelled']);
    // The same order as the board of `getQueue` for the PRs in the line.
    const queue = await json(['mq', 'queue', 'get', ...REPO]);
    expect(queue.enqueuedPullRequests.map((p: { prNumber: number }) => p.prNumber)).toEqual([5, 4, 1, 2]);
    // Paging (--limit takes a page of that size) keeps the order, and the table shows it too.
    expect(numbers(await json(['mq', 'list', ...REPO, '--limit', '2']))).toEqual([5, 4]);
    expect(numbers(await json(['mq', 'list', ...REPO, '--state', 'pending']))).toEqual([4, 1, 2]);
    const table = (await ry(['mq', 'list', ...REPO])).stdout;
    const rows = table.split('\n').flatMap((line) => /^#(\d+)\s/.exec(line)?.[1] ?? []);
    expect(rows).toEqual(['5', '4', '1', '2', '3']);
  });

  it('shows a PR once (its current submission), --all-submissions every one; CSV cells are plain values', async () => {
    const REPO = ['--repo', 'acme/again'];
    await ry(['mq', 'queue', 'create', ...REPO, '--concurrency', '1']);
    await ry(['mq', 'submit', '8', ...REPO]);
    await ry(['mq', 'submit', '9', ...REPO]);
    await ry(['mq', 'cancel', '9', ...REPO]);
    await ry(['mq', 'submit', '9', ...REPO, '--priority', 'high']);
    const once = await json(['mq', 'list', ...REPO]);
    expect(
      once.pullRequests.map((p: { prNumber: number; state: string }) => `#${p.prNumber} ${p.state}`),
    ).toEqual(['#8 testing', '#9 pending']);
    const all = await json(['mq', 'list', ...REPO, '--all-submissions']);
    expect(
      all.pullRequests.map((p: { prNumber: number; state: string }) => `#${p.prNumber} ${p.state}`),
    ).toEqual(['#8 testing', '#9 pending', '#9 cancelled']);
    expect(numbers(await json(['mq', 'list', ...REPO, '--limit', '2']))).toEqual([8, 9]);

    const csv = (await ry(['mq', 'list', ...REPO, '--format', 'csv'])).stdout.trimEnd().split('\r\n');
    expect(csv[0]).toBe('PR,State,Reason,Priority,Priority value,Title,Author,SHA,Since');
    const cells = csv[2]!.split(',');
    expect(cells.slice(0, 5)).toEqual(['9', 'pending', 'API_REQUESTED', 'high', '10']);
    expect(cells[7]).toMatch(/^[0-9a-f]{40}$/);
    expect(cells[8]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The table, for people: `#9`, `high (10)`, a relative time, no borders.
    const table = (await ry(['mq', 'list', ...REPO])).stdout.split('\n');
    expect(table[0]).toMatch(/^PR\s+State\s+Reason\s+Priority\s+Title\s+Author\s+SHA\s+Since$/);
    expect(table[2]).toMatch(/^#9\s+pending\s+API_REQUESTED\s+high \(10\)\s.*\s\d+ seconds? ago$/);
  });
});

describe.concurrent('railyard mq submit says why a PR will wait', () => {
  it('a paused queue: a notice on stderr (stdout stays JSON), and the PR says it waits for the queue until it is resumed', async () => {
    const REPO = ['--repo', 'acme/paused'];
    await ry(['mq', 'queue', 'create', ...REPO]);
    const quiet = await ry(['mq', 'submit', '1', ...REPO]);
    expect(quiet.stderr).toBe(''); // a running queue: nothing to say
    await ry(['mq', 'queue', 'pause', ...REPO]);
    const result = await ry(['mq', 'submit', '2', ...REPO, '--json']);
    expect(result.stderr).toMatch(
      /^Notice: the queue is paused: it starts and merges nothing, so #2 waits until it is resumed \(railyard mq queue resume\)\n$/,
    );
    const pr = JSON.parse(result.stdout);
    expect(pr).toMatchObject({ prNumber: 2, state: 'pending', readiness: { waitingFor: ['queue_paused'] } });
    // #1 is being tested, but a paused queue merges nothing either.
    expect((await json(['mq', 'status', '1', ...REPO])).readiness.waitingFor).toEqual(['queue_paused']);
    expect((await ry(['mq', 'status', '2', ...REPO])).stdout).toMatch(
      /^waitingFor +the queue, which is paused$/m,
    );
    await ry(['mq', 'queue', 'resume', ...REPO]);
    expect((await json(['mq', 'status', '2', ...REPO])).readiness.waitingFor).toEqual([]);
  });

  it('a draining queue: the PR stays outside it, and says it waits for the queue to run again', async () => {
    const REPO = ['--repo', 'acme/draining'];
    await ry(['mq', 'queue', 'create', ...REPO]);
    await ry(['mq', 'submit', '1', ...REPO]);
    await ry(['mq', 'queue', 'drain', ...REPO]);
    const result = await ry(['mq', 'submit', '2', ...REPO, '--json']);
    expect(result.stderr).toContain(
      'Notice: the queue is draining: it finishes the PRs it has and lets #2 in only once it runs again',
    );
    expect(JSON.parse(result.stdout)).toMatchObject({
      state: 'not_ready',
      readiness: { waitingFor: ['queue_draining'] },
    });
    // #1, already in, is not held by the drain.
    expect((await json(['mq', 'status', '1', ...REPO])).readiness.waitingFor).toEqual([]);
    await ry(['mq', 'queue', 'resume', ...REPO]);
    const admitted = await json(['mq', 'status', '2', ...REPO]);
    expect(admitted.state).toBe('pending');
    expect(admitted.readiness.waitingFor).toEqual([]);
  });

  it('a parallel queue without impacted targets: a warning naming the command to upload them', async () => {
    const REPO = ['--repo', 'acme/parallel'];
    await ry(['mq', 'queue', 'create', ...REPO, '--mode', 'parallel']);
    const result = await ry(['mq', 'submit', '1', ...REPO, '--json']);
    const pr = JSON.parse(result.stdout);
    expect(pr).toMatchObject({
      state: 'not_ready',
      readiness: {
        requiresImpactedTargets: true,
        hasImpactedTargets: false,
        waitingFor: ['impacted_targets'],
      },
    });
    expect(result.stderr).toBe(
      'Warning: the queue runs in parallel mode: #1 waits until its impacted targets are uploaded ' +
        `(railyard mq impacted-targets 1 --sha ${pr.prSha} --target T…, or --all / --none)\n`,
    );
    await ry(['mq', 'impacted-targets', '1', ...REPO, '--sha', pr.prSha, '--target', '//app']);
    const ready = await json(['mq', 'status', '1', ...REPO]);
    expect(ready.state).toBe('testing');
    expect(ready.readiness.waitingFor).toEqual([]);
  });
});

describe.concurrent('railyard mq watch in a parallel queue', () => {
  it('shows the lane of each PR: PRs with overlapping impacted targets share one, others test and merge on their own', async () => {
    const REPO = ['--repo', 'acme/lanes'];
    await ry(['mq', 'queue', 'create', ...REPO, '--mode', 'parallel', '--concurrency', '1']);
    for (const [n, target] of [
      [1, '//app'],
      [2, '//docs'],
      [3, '//app'],
    ] as const) {
      const pr = JSON.parse((await ry(['mq', 'submit', String(n), ...REPO, '--json'])).stdout);
      await ry(['mq', 'impacted-targets', String(n), ...REPO, '--sha', pr.prSha, '--target', target]);
    }
    const list = await json(['mq', 'list', ...REPO]);
    expect(
      list.pullRequests.map(
        (p: { prNumber: number; state: string; lane: number }) => `#${p.prNumber} ${p.state} lane ${p.lane}`,
      ),
    ).toEqual([
      '#1 testing lane 1',
      '#2 testing lane 2',
      '#3 pending lane 1', // concurrency 1 per lane: waits for #1, not for #2
    ]);
    const watch = await railyard(
      ['mq', 'watch', ...REPO, '--interval', '200ms', '--timeout', '1s'],
      sandbox.env,
    );
    expect(watch.code, watch.stderr).toBe(0);
    const lines = watch.stdout.trim().split('\n');
    expect(lines).toHaveLength(3); // nothing changed within the second: one line per PR
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d 1\. lane 1 {2}#1 testing run [0-9a-f]{8} /);
    expect(lines[1]).toMatch(/ 2\. lane 2 {2}#2 testing run /);
    expect(lines[2]).toMatch(/ 3\. lane 1 {2}#3 pending \(API_REQUESTED\) /);
  });
});
