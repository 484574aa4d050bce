import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { isolatedEnv } from '../support/cli.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { spawnServe, type ServeProcess } from '../support/serve.js';
import { tempDir } from '../support/tmp.js';
import { call, ok, REPO } from '../server/helpers.js';

const TOKEN = 'ry_crash_test_token_0123456789abcdefghijklmnopqrstuv';
const Q = { repo: REPO, targetBranch: 'main' };
const WRITERS = 4;

const cleanup = cleanupsAfterEach();

async function serve(dataDir: string): Promise<ServeProcess> {
  // The token comes from the environment (no warning); the sandbox lands PRs after 1 s of "CI".
  const s = await spawnServe(['--data-dir', dataDir, '--sandbox', '--sandbox-test-seconds', '1'], {
    ...isolatedEnv(),
    RAILYARD_SERVER_TOKEN: TOKEN,
  });
  cleanup(() => s.kill());
  return s;
}

const junit = (name: string) =>
  `<testsuite name="crash"><testcase classname="crash" name="${name}"><failure message="boom"/></testcase><testcase classname="crash" name="${name}"/></testsuite>`;

/** Names of every failing test of the repository (all pages). */
async function failingTests(server: {
  url: string;
  token: string;
  org: string;
  dataDir: string;
  close(): Promise<void>;
}): Promise<Set<string>> {
  const names = new Set<string>();
  let token = '';
  for (;;) {
    const page = await ok(server as never, 'listFailingTests', {
      repo: REPO,
      org_url_slug: 'local',
      start_time: new Date(Date.now() - 3_600_000).toISOString(),
      end_time: new Date(Date.now() + 60_000).toISOString(),
      page_query: { page_size: 100, page_token: token },
    });
    for (const t of page.tests as { name: string }[]) names.add(t.name);
    if (!page.page.next_page_token) return names;
    token = page.page.next_page_token;
  }
}

describe('kill -9', () => {
  it(
    'every write the server acknowledged before SIGKILL is there after a restart on the same data dir',
    { timeout: 120_000 },
    async () => {
      const dataDir = await tempDir();
      cleanup(() => rm(dataDir, { recursive: true, force: true }));
      const first = await serve(dataDir);
      const server = { url: first.url, token: TOKEN, org: 'local', dataDir, close: async () => {} };
      await ok(server, 'createQueue', { ...Q, concurrency: 4 });

      // Writers submit PRs and upload flaky results (a failure and a pass of a new test) until the
      // connection dies; each 200 is an acknowledged write.
      const submitted: number[] = [];
      const uploaded: string[] = [];
      let nextPr = 1;
      let stop = false;
      const writer = async (w: number) => {
        for (let i = 0; !stop; i++) {
          try {
            if (i % 2 === 0) {
              const pr = nextPr++;
              const a = await call(server, 'submitPullRequest', { ...Q, pr: { number: pr } });
              if (a.status === 200) submitted.push(pr);
            } else {
              const name = `w${w}-t${i}`;
              const a = await call(server, 'uploadTestResults', {
                repo: REPO,
                org_url_slug: 'local',
                branch: 'main',
                sha: `${w}${i}`.padEnd(40, '0').slice(0, 40),
                reports: [{ name: 'junit.xml', content: junit(name) }],
              });
              if (a.status === 200) uploaded.push(name);
            }
          } catch {
            return; // connection refused or reset: the server is gone
          }
        }
      };
      const writing = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
      // Killed at a random moment once writes flow (several of each acknowledged: a loaded machine may take seconds).
      const flowing = Date.now() + 60_000;
      while ((submitted.length <= 5 || uploaded.length <= 2) && Date.now() < flowing) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 1500)));
      first.child.kill('SIGKILL');
      await first.exit;
      stop = true;
      await writing;
      expect(submitted.length).toBeGreaterThan(5);
      expect(uploaded.length).toBeGreaterThan(2);

      const second = await serve(dataDir);
      const again = { ...server, url: second.url };
      for (const pr of submitted) {
        const a = await call(again, 'getSubmittedPullRequest', { ...Q, pr: { number: pr } });
        expect({ pr, status: a.status }).toEqual({ pr, status: 200 });
      }
      const failing = await failingTests(again);
      expect(uploaded.filter((name) => !failing.has(name))).toEqual([]);
      // The restarted server goes on working on the same queue.
      expect((await call(again, 'submitPullRequest', { ...Q, pr: { number: nextPr + 1 } })).status).toBe(200);
      console.log(
        `kill -9: ${submitted.length} submits and ${uploaded.length} uploads acknowledged, all there after the restart`,
      );
    },
  );
});
