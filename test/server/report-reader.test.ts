import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readReports, type IngestTask } from '../../src/flaky/ingest.js';
import { reportReaderPool } from '../../src/server/flaky/report-reader.js';

// The worker entry as `railyard serve` runs it: the built one (`npm test` builds first).
const WORKER = resolve(import.meta.dirname, '../../build/flaky/ingest-worker.js');
const dir = fileURLToPath(new URL('../fixtures/junit/', import.meta.url));
const reports = readdirSync(dir)
  .filter((f) => f.endsWith('.xml'))
  .map((name) => ({ name, content: readFileSync(dir + name, 'utf8') }));
const task = (r: IngestTask['reports']): IngestTask => ({ org: 'local', repo: { host: 'github.com', owner: 'acme', name: 'shop' }, variant: 'linux', reports: r });

describe('reading reports on worker threads', () => {
  const pool = reportReaderPool(WORKER, { threads: 2 });
  afterAll(() => pool.close());

  it('gives what reading in-thread gives, for every fixture and for many uploads at once', async () => {
    const answers = await Promise.all(reports.map((r) => pool.read(task([r]))));
    answers.forEach((answer, i) => expect(answer).toEqual(readReports(task([reports[i]]))));
    const all = await pool.read(task(reports));
    expect(all.ok && all.results.length).toBeGreaterThan(40);
  });

  it('a malformed report answers with its file and line, not an exception', async () => {
    const answer = await pool.read(task([reports[0], { name: 'reports/broken.xml', content: '<testsuite>\n<testcase name="a">\n</testsuite>' }]));
    expect(answer).toEqual({ ok: false, error: expect.stringMatching(/^reports\/broken\.xml: line 3: /) });
  });
});

describe('a worker that cannot start', () => {
  let scratch = '';
  afterAll(() => rm(scratch, { recursive: true, force: true }));

  it('is reported once, and every upload, the waiting ones too, is read in-thread instead of hanging', async () => {
    scratch = await mkdtemp(join(tmpdir(), 'railyard-worker-'));
    const bad = join(scratch, 'bad-worker.mjs');
    await writeFile(bad, 'throw new Error("cannot load");\n');
    const broken: Error[] = [];
    const pool = reportReaderPool(bad, { threads: 1, onBroken: (e) => broken.push(e) });
    const answers = await Promise.all([pool.read(task([reports[0]])), pool.read(task([reports[1]]))]);
    expect(answers).toEqual([readReports(task([reports[0]])), readReports(task([reports[1]]))]);
    expect(await pool.read(task([reports[2]]))).toEqual(readReports(task([reports[2]])));
    expect(broken.map((e) => e.message)).toEqual(['cannot load']);
    await pool.close();
  });
});
