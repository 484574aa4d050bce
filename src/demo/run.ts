/** `railyard demo`'s run: a throwaway repository, a real server on the git forge, PRs landing one by one. */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '../client/index.js';
import { isTerminalState } from '../contract/constants.js';
import type { QueueListItem } from '../contract/index.js';
import { explainReason } from '../contract/reasons.js';
import { buildServer } from '../server/index.js';
import { createBackend } from '../server/runtime.js';
import { openStore } from '../store/index.js';
import { createDemoRepository, DEMO_PRS, targetLog } from './project.js';

export interface DemoOptions {
  /** Keep the temporary directory (repository, database, check logs) and print where it is. */
  keep: boolean;
  /** Give up after this long (ms). */
  timeoutMs: number;
  out: NodeJS.WriteStream;
  /** Redraw a live table (a terminal) instead of printing one line per change. */
  live: boolean;
  /** Keep the server up after the outcome, with the web dashboard, until SIGINT/SIGTERM. */
  open?: boolean;
  /** The command that runs the demo again with --open, as it can be typed where this one was started. */
  openCommand?: string;
  /** How the demo's checks are isolated (`serve --checks-sandbox`); default none. */
  checksSandbox?: 'none' | 'bwrap';
  paint: {
    bold(s: string): string;
    dim(s: string): string;
    green(s: string): string;
    red(s: string): string;
    yellow(s: string): string;
    cyan(s: string): string;
  };
}

export interface DemoResult {
  merged: number[];
  failed: { prNumber: number; reason: string }[];
  cancelled: number[];
  log: string[];
  seconds: number;
  dir: string | null;
}

const REPO = { host: 'github.com', owner: 'demo', name: 'shop' };
const Q = { repo: REPO, targetBranch: 'main' };

/**
 * The README's main job: a throwaway repository with 8 pull requests, a real server on the
 * embedded database with the git forge, a queue with batching, every PR submitted through the
 * HTTP client, the queue shown live until everything settles, then the outcome and the log.
 */
export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const { out, paint } = options;
  const started = Date.now();
  const root = await mkdtemp(join(tmpdir(), 'railyard-demo-'));
  const say = (line = '') => out.write(line + '\n');
  const store = await openStore({ dataDir: join(root, 'data') });
  let app: Awaited<ReturnType<typeof buildServer>> | null = null;
  try {
    say(paint.bold('Railyard demo') + paint.dim(`  (workspace ${root})`));
    const bare = await createDemoRepository(join(root, 'git'), join(root, 'work'));
    say(
      `• created ${paint.cyan('github.com/demo/shop')} with a check (node check.js) and ${DEMO_PRS.length} pull requests`,
    );

    const token = `ry_demo_${randomBytes(12).toString('hex')}`;
    await store.accounts.addToken('local', token);
    const backend = await createBackend({
      dataDir: join(root, 'data'),
      forge: { kind: 'git', settings: { gitRoot: join(root, 'git'), checks: { sandbox: options.checksSandbox ?? 'none' } } },
      tickMs: 250,
      pollMs: 300,
    });
    app = await buildServer({ store, driver: backend.driver, workers: backend.workers });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    say(`• server listening on ${address}/v1 (embedded SQLite in ${join(root, 'data')})`);
    if (options.open) say(`• web dashboard on ${address}/ (API token ${token}) — open it now to watch the queue live`);

    const client = createClient({ baseUrl: `${address}/v1`, token });
    await client.call('createQueue', { ...Q, concurrency: 2 });
    await client.call('updateQueue', {
      ...Q,
      batch: true,
      batchingMinSize: 4,
      batchingMaxWaitTimeMinutes: 1,
      bisectionConcurrency: 2,
      mergeMethod: 'squash',
    });
    say('• queue for main: batches of 4, 2 test slots, bisection on 2 more slots, squash merges');
    for (const pr of DEMO_PRS) await client.call('submitPullRequest', { ...Q, pr: { number: pr.number } });
    say(`• submitted #${DEMO_PRS.map((p) => p.number).join(', #')} through the HTTP client`);
    // Nothing else is coming: draining lets partial batches start without waiting for more PRs.
    await client.call('updateQueue', { ...Q, state: 'draining' });
    say('• queue set to draining: no more PRs are coming, so partial batches start at once');
    say();

    const seen = new Map<number, string>();
    let drawn = 0;
    const render = (items: QueueListItem[]) => {
      if (options.live) {
        if (drawn) out.write(`\x1b[${drawn}A\x1b[J`);
        const lines = items.map((p) => {
          const state = colourState(p.state ?? '', paint);
          const why =
            p.stateReason && !['API_REQUESTED'].includes(p.stateReason) ? paint.dim(` ${p.stateReason}`) : '';
          return `  #${p.prNumber}  ${p.prTitle.padEnd(40).slice(0, 40)}  ${state}${why}`;
        });
        const elapsed = ((Date.now() - started) / 1000).toFixed(0);
        lines.push(paint.dim(`  ${elapsed}s elapsed`));
        out.write(lines.join('\n') + '\n');
        drawn = lines.length;
        return;
      }
      for (const p of items) {
        const key = `${p.state} ${p.stateReason ?? ''}`;
        if (seen.get(p.prNumber) === key) continue;
        seen.set(p.prNumber, key);
        const t = ((Date.now() - started) / 1000).toFixed(1).padStart(5);
        say(
          `${paint.dim(t + 's')}  #${p.prNumber} ${colourState(p.state ?? '', paint)}${p.stateReason ? paint.dim(` (${p.stateReason})`) : ''}`,
        );
      }
    };

    let items: QueueListItem[] = [];
    for (;;) {
      items = (await client.call('listPullRequests', { ...Q, take: 100 })).pullRequests;
      render(items);
      if (items.length === DEMO_PRS.length && items.every((p) => isTerminalState(p.state))) break;
      if (Date.now() - started > options.timeoutMs) throw new Error(`the queue did not settle within ${options.timeoutMs / 1000} s`);
      await new Promise((r) => setTimeout(r, 200));
    }

    const result: DemoResult = {
      merged: items.filter((p) => p.state === 'merged').map((p) => p.prNumber),
      failed: items
        .filter((p) => p.state === 'failed')
        .map((p) => ({ prNumber: p.prNumber, reason: p.stateReason ?? '' })),
      cancelled: items.filter((p) => p.state === 'cancelled').map((p) => p.prNumber),
      log: await targetLog(bare),
      seconds: (Date.now() - started) / 1000,
      dir: options.keep ? root : null,
    };
    say();
    say(paint.bold(`Settled in ${result.seconds.toFixed(1)} s.`));
    say(paint.green(`Merged: ${result.merged.map((n) => `#${n}`).join(', ') || 'none'}`));
    for (const f of result.failed) {
      const pr = DEMO_PRS.find((p) => p.number === f.prNumber);
      const combined =
        pr?.expect === 'fails only combined'
          ? ' (it passes alone: it breaks only together with a PR that landed before it)'
          : '';
      say(
        paint.red(
          `Failed: #${f.prNumber} ${pr?.title ?? ''} — ${explainReason(f.reason)}${combined} [${f.reason}]`,
        ),
      );
    }
    say();
    say(paint.bold('main now reads (git log --oneline):'));
    for (const line of result.log) say(`  ${line}`);
    if (options.keep)
      say(
        paint.dim(
          `\nKept ${root} (repository under git/, database under data/, check logs under data/runs/).`,
        ),
      );
    say();
    if (options.open) {
      say(paint.bold(`Dashboard: ${address}/`) + `  (API token ${token}: the page asks for it once)`);
      say(paint.dim('The server stays up until Ctrl-C.'));
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      say(paint.dim('Stopping the demo server.'));
    } else {
      say(
        paint.dim(
          `See it as a picture: ${options.openCommand ?? 'railyard demo --open'} (the web dashboard of the demo server, until Ctrl-C).`,
        ),
      );
    }
    return result;
  } finally {
    await app?.close();
    await store.close();
    if (!options.keep) await rm(root, { recursive: true, force: true });
  }
}

function colourState(state: string, paint: DemoOptions['paint']): string {
  const padded = state.padEnd(15);
  if (state === 'merged') return paint.green(padded);
  if (state === 'failed' || state === 'cancelled') return paint.red(padded);
  if (state === 'testing' || state === 'tests_passed') return paint.cyan(padded);
  if (state === 'pending_failure') return paint.yellow(padded);
  return padded;
}
