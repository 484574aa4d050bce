/**
 * The flake-aware queue's e2e world on a forge whose own CI runs the checks (GitHub, GitLab): two
 * tests in `tests/`, known to the flaky-test data from CI on main with `net works` quarantined,
 * and CI's `railyard flaky upload --sha` of a test commit's JUnit report. The forge-specific
 * parts (emulator, project, CI decider, queue) stay in each forge's test file.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Repo } from '../../src/contract/index.js';
import { readReports } from '../../src/flaky/ingest.js';
import { ok } from '../server/helpers.js';
import { isolatedEnv, railyard } from './cli.js';
import type { TestServer } from './server.js';

/** The files of the two tests, for the repository's first commit. */
export const TEST_FILES = { 'tests/net.test.ts': 'net\n', 'tests/db.test.ts': 'db\n' };

/** A JUnit report of `net works` and `db works`, failing those named. */
export const twoTestsReport = (failing: string[] = []) =>
  `<testsuite name="suite">${['net', 'db']
    .map((t) => `<testcase classname="tests/${t}.test.ts" file="tests/${t}.test.ts" name="${t} works">${failing.includes(t) ? '<failure message="boom"/>' : ''}</testcase>`)
    .join('')}</testsuite>`;

/**
 * Both tests known from CI on main, quarantining on, `net works` quarantined; the CLI's
 * environment for the server. Returns the id of `net works`.
 */
export async function quarantinedNet(server: TestServer, repo: Repo): Promise<{ netId: string; env: Record<string, string> }> {
  const key = { repo, org_url_slug: server.org };
  await ok(server, 'uploadTestResults', { ...key, branch: 'main', sha: 'a'.repeat(40), reports: [{ name: 'junit.xml', content: twoTestsReport() }] });
  await ok(server, 'updateRepositorySettings', { ...key, settings: { quarantining_enabled: true } });
  const read = readReports({ org: server.org, repo, variant: '', reports: [{ name: 'junit.xml', content: twoTestsReport() }] });
  if (!read.ok) throw new Error(read.error);
  const netId = read.results.find((r) => r.name === 'net works')!.id;
  await ok(server, 'setTestQuarantine', { ...key, test_id: netId, setting: 'ALWAYS_QUARANTINE' });
  return { netId, env: isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: server.token }) };
}

/** What CI's upload step runs for a test commit: `railyard flaky upload --sha SHA --job test`, `failing` tests failed. */
export async function uploadFromCi(
  server: TestServer,
  env: Record<string, string>,
  repo: Repo,
  run: { branch: string; sha: string; failing: string[] },
): Promise<{ code: number; stderr: string }> {
  const file = join(env.HOME!, 'junit.xml');
  writeFileSync(file, twoTestsReport(run.failing));
  return railyard(
    ['flaky', 'upload', '--repo', `${repo.host}/${repo.owner}/${repo.name}`, '--org', server.org, '--branch', run.branch, '--sha', run.sha, '--job', 'test', file],
    env,
  );
}
