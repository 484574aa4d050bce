// Uploads linked to a test run by the test commit's SHA (issue 22, the GitHub/GitLab path of the
// flake-aware queue): FlakyService.commitResults reads what CI uploaded for one commit — each
// upload's job and the tests that failed for good in it (not those that passed on a retry within
// the upload) — on SQLite and PostgreSQL alike.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FlakyService } from '../../src/server/flaky/service.js';
import { openStore } from '../../src/store/index.js';
import { postgresForFile } from '../support/hooks.js';
import { skipWithoutPostgres } from '../support/postgres.js';

const noPostgres = skipWithoutPostgres();
const cluster = postgresForFile(noPostgres);
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const repo = { host: 'github.com', owner: 'acme', name: 'app' };
const SHA = 'ABCDEF0123456789abcdef0123456789abcdef01';
const junit = (cases: string) => `<testsuite name="suite">${cases}</testsuite>`;

for (const d of [
  { name: 'sqlite', skip: false, open: async () => openStore({ dataDir: await mkdtemp(join(tmpdir(), 'railyard-commit-')).then((dir) => (dirs.push(dir), dir)) }) },
  { name: 'postgres', skip: noPostgres, open: async () => openStore({ databaseUrl: await cluster().createDatabase() }) },
]) {
  describe.skipIf(d.skip)(`commit results on ${d.name}`, () => {
    it('lists the jobs and the failed tests of every upload for a commit, by SHA in any case', async () => {
      const store = await d.open();
      try {
        const flaky = new FlakyService(store);
        const woken: string[] = [];
        const stop = flaky.onUpload((org, sha) => woken.push(`${org}:${sha}`));
        expect(await flaky.commitResults('acme', repo, SHA)).toBeNull();
        const upload = (job: string | undefined, cases: string, sha = SHA) =>
          flaky.upload('acme', { repo, org_url_slug: 'acme', branch: 'railyard-merge/pr-1/x', sha, ...(job ? { job } : {}), reports: [{ name: 'junit.xml', content: junit(cases) }] });
        await upload('unit', '<testcase classname="a" file="tests/a.ts" name="a"><failure/></testcase><testcase classname="b" name="b"/>');
        // A test that failed then passed within the upload (a retry in CI) is not failing.
        await upload(undefined, '<testcase classname="c" name="c"><failure/></testcase><testcase classname="c" name="c"/><testcase classname="d" name="d"><error/></testcase>');
        await upload('other', '<testcase classname="e" name="e"><failure/></testcase>', 'f'.repeat(40));
        stop();
        const results = await flaky.commitResults('acme', repo, SHA.toLowerCase());
        expect(results?.jobs).toEqual(['unit', null]);
        expect(results?.failing.map((t) => [t.name, t.job, t.file, t.quarantined])).toEqual([
          ['suite › a', 'unit', 'tests/a.ts', false],
          ['suite › d', null, null, false],
        ]);
        expect(await flaky.commitResults('globex', repo, SHA)).toBeNull();
        expect(woken).toEqual([`acme:${SHA.toLowerCase()}`, `acme:${SHA.toLowerCase()}`, `acme:${'f'.repeat(40)}`]);
      } finally {
        await store.close();
      }
    });
  });
}
