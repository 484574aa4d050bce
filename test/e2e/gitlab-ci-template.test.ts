// The GitLab CI template (ci/gitlab/railyard.gitlab-ci.yml) run as GitLab would run its jobs: its
// variables, before_script and script lines in a shell with GitLab's predefined variables of a
// merge-request pipeline, the real CLI on PATH (npm is a stand-in that records what it would
// install), against a real server. Submit queues the MR, wait exits 0 once it merged (1 once it
// failed), upload-tests stores the JUnit results under the MR's repository.
import { spawn } from 'node:child_process';
import { chmod, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { BIN, isolatedEnv } from '../support/cli.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { spawnServe } from '../support/serve.js';
import { tempDir } from '../support/tmp.js';

const TEMPLATE = resolve(import.meta.dirname, '../../ci/gitlab/railyard.gitlab-ci.yml');
const TOKEN = 'ry_gitlab_ci_template_0123456789abcdefghijklmnop';
const REPO = { host: 'gitlab.example.com', owner: 'acme/platform', name: 'web' };

const cleanup = cleanupsAfterEach();

interface Job {
  extends?: string;
  before_script?: string[];
  script?: string[];
  rules?: unknown[];
  when?: string;
}

/** The lines GitLab runs for `name`: its base's before_script, then its script. */
function linesOf(doc: Record<string, Job>, name: string): string[] {
  const job = doc[name]!;
  const base = job.extends ? doc[job.extends]! : {};
  return [...(job.before_script ?? base.before_script ?? []), ...(job.script ?? [])];
}

/** Runs lines as a GitLab runner's shell does (stop at the first failing line); resolves with the exit code and output. */
function runJob(
  lines: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ code: number; out: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn('bash', ['-eo', 'pipefail', '-c', lines.join('\n')], { env, cwd });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolvePromise({ code: code ?? -1, out }));
  });
}

describe('GitLab CI template', () => {
  it('declares the three jobs on a base that installs the CLI', async () => {
    const doc = parse(await readFile(TEMPLATE, 'utf8')) as Record<string, Job>;
    for (const job of ['.railyard:submit', '.railyard:wait', '.railyard:upload-tests']) {
      expect(doc[job]?.extends, job).toBe('.railyard');
      expect(doc[job]?.script?.length, job).toBeGreaterThan(0);
    }
    expect(doc['.railyard:upload-tests']!.when).toBe('always');
    expect(doc['.railyard']!.before_script![0]).toContain('npm install --global');
  });

  it(
    'submits the merge request, waits for it to merge and uploads its JUnit report',
    { timeout: 120_000 },
    async () => {
      const dir = await tempDir();
      cleanup(() => rm(dir, { recursive: true, force: true }));
      const server = await spawnServe(
        ['--data-dir', join(dir, 'data'), '--sandbox', '--sandbox-test-seconds', '1'],
        {
          ...isolatedEnv(),
          RAILYARD_SERVER_TOKEN: TOKEN,
        },
      );
      cleanup(() => server.kill());
      // The queue exists (created once by whoever runs the server).
      const created = await fetch(`${server.url}/createQueue`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-token': TOKEN },
        body: JSON.stringify({ repo: REPO, targetBranch: 'main' }),
      });
      expect(created.status).toBe(200);

      // `railyard` on PATH is this checkout's CLI; `npm` records its arguments instead of installing.
      const bin = join(dir, 'bin');
      await runJob([`mkdir -p ${bin}`], { PATH: process.env.PATH ?? '' }, dir);
      await writeFile(join(bin, 'railyard'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
      await writeFile(join(bin, 'npm'), `#!/bin/sh\necho "$@" >> "${join(dir, 'npm-args')}"\n`);
      await chmod(join(bin, 'railyard'), 0o755);
      await chmod(join(bin, 'npm'), 0o755);
      await writeFile(
        join(dir, 'junit.xml'),
        '<testsuite name="s"><testcase classname="web.Login" name="works"/><testcase classname="web.Login" name="flakes"><failure message="boom"/></testcase></testsuite>',
      );

      const doc = parse(await readFile(TEMPLATE, 'utf8')) as Record<string, Job> & {
        variables: Record<string, string>;
      };
      const base = isolatedEnv();
      const env: Record<string, string> = {
        ...base,
        PATH: `${bin}:${base.PATH}`,
        // What GitLab defines in a merge request pipeline (docs: predefined CI/CD variables).
        CI: 'true',
        GITLAB_CI: 'true',
        CI_SERVER_HOST: 'gitlab.example.com',
        CI_PROJECT_PATH: 'acme/platform/web',
        CI_PIPELINE_SOURCE: 'merge_request_event',
        CI_MERGE_REQUEST_IID: '7',
        CI_MERGE_REQUEST_TARGET_BRANCH_NAME: 'main',
        CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: 'feature/login',
        CI_COMMIT_REF_NAME: 'feature/login',
        CI_COMMIT_SHA: 'c'.repeat(40),
        CI_JOB_NAME: 'unit',
        // The project's CI/CD variables.
        RAILYARD_API_URL: server.url,
        RAILYARD_TOKEN: TOKEN,
        RAILYARD_ORG: 'local',
      };
      // The template's variables, expanded as GitLab expands them; the project's own variables win.
      const vars = Object.entries(doc.variables).map(([k, v]) => `export ${k}="\${${k}:-${v}}"`);

      const submit = await runJob([...vars, ...linesOf(doc, '.railyard:submit')], env, dir);
      expect(submit.code, submit.out).toBe(0);
      expect(await readFile(join(dir, 'npm-args'), 'utf8')).toContain(
        'install --global --no-audit --no-fund railyard-mq@',
      );

      // A project variable shortens the wait's polls (the template's 15 s would be most of this
      // test); the cancelled MR's wait below keeps the template's own interval.
      const wait = await runJob(
        [...vars, ...linesOf(doc, '.railyard:wait')],
        { ...env, RAILYARD_WAIT_INTERVAL: '200ms' },
        dir,
      );
      expect(wait.code, wait.out).toBe(0);
      expect(wait.out).toMatch(/merged/);

      const upload = await runJob([...vars, ...linesOf(doc, '.railyard:upload-tests')], env, dir);
      expect(upload.code, upload.out).toBe(0);

      // The MR is merged in the queue of gitlab.example.com/acme/platform/web, and the report is stored there.
      const pr = (await (
        await fetch(`${server.url}/getSubmittedPullRequest`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-token': TOKEN },
          body: JSON.stringify({ repo: REPO, pr: { number: 7 }, targetBranch: 'main' }),
        })
      ).json()) as { state: string };
      expect(pr.state).toBe('merged');
      const failing = (await (
        await fetch(`${server.url}/flaky-tests/list-failing-tests`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-token': TOKEN },
          body: JSON.stringify({
            repo: REPO,
            org_url_slug: 'local',
            start_time: new Date(Date.now() - 3_600_000).toISOString(),
            end_time: new Date(Date.now() + 60_000).toISOString(),
            page_query: { page_size: 10, page_token: '' },
          }),
        })
      ).json()) as { tests: Array<{ name: string }> };
      expect(failing.tests.map((t) => t.name)).toEqual(['flakes']);

      // A cancelled MR: wait exits non-zero, so the job fails. The queue is paused first, so that
      // #8 cannot test and merge (1 s sandbox runs) before the cancel below arrives on a loaded machine.
      const paused = await fetch(`${server.url}/updateQueue`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-token': TOKEN },
        body: JSON.stringify({ repo: REPO, targetBranch: 'main', state: 'paused' }),
      });
      expect(paused.status).toBe(200);
      const failed = await runJob(
        [...vars, ...linesOf(doc, '.railyard:submit')],
        { ...env, CI_MERGE_REQUEST_IID: '8', RAILYARD_PRIORITY: 'high' },
        dir,
      );
      expect(failed.code, failed.out).toBe(0);
      await fetch(`${server.url}/cancelPullRequest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-token': TOKEN },
        body: JSON.stringify({ repo: REPO, pr: { number: 8 }, targetBranch: 'main' }),
      });
      const waitFailed = await runJob(
        [...vars, ...linesOf(doc, '.railyard:wait')],
        { ...env, CI_MERGE_REQUEST_IID: '8' },
        dir,
      );
      expect(waitFailed.code, waitFailed.out).toBe(1);
      expect(waitFailed.out).toMatch(/#8 cancelled \(USER_REQUESTED\)/);
    },
  );
});
