/**
 * Two organisations on one `railyard serve` (the real binary) and one git root, pinned with
 * --org-repos, for the tests of a pull request's check attacking the server or the other
 * organisation (test/e2e/check-limits.test.ts, check-identities.test.ts): beta's PR runs the
 * attack as its check, then a benign PR of alpha must land, and the server is still the same
 * process answering /v1/status.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { createRepo, type FixtureRepo } from '../forge/fixture.js';
import { skipUnlessRoot, skipWithoutBwrap } from './bwrap.js';
import { spawnServe, type ServeProcess } from './serve.js';
import { tempDir } from './tmp.js';

/** What a test made, undone after it (each test file runs `runCleanups` in its afterEach). */
export const cleanups: (() => unknown)[] = [];
export async function runCleanups(): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) await c();
}

export const notRoot = skipUnlessRoot();
export const noBwrap = notRoot || (await skipWithoutBwrap());

export const ACME = { host: 'github.com', owner: 'acme', name: 'web' };
export const EVIL = { host: 'github.com', owner: 'evil', name: 'tool' };
export const ALPHA = `ry_${randomBytes(24).toString('hex')}`;
export const BETA = `ry_${randomBytes(24).toString('hex')}`;
// A uid pool of this file's own: the claims are machine-wide, other servers use the default one.
export const UID_BASE = 3_000_000 + (process.pid % 1000) * 4096;

export interface World {
  server: ServeProcess;
  acme: FixtureRepo;
  evil: FixtureRepo;
  gitRoot: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON answers, read field by field
type Json = any;

export async function api(
  s: ServeProcess,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; json: Json; text: string }> {
  const res = await fetch(`${s.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'x-api-token': token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, json, text };
}

export async function post(s: ServeProcess, path: string, token: string, body: unknown): Promise<Json> {
  const a = await api(s, path, token, body);
  if (a.status !== 200) throw new Error(`${path} answered ${a.status}: ${a.text}`);
  return a.json;
}

/** Two organisations on one server: alpha owns acme/web (benign), beta owns evil/tool (its check is `attack`). */
export async function world(
  attack: string,
  args: string[] = [],
  options: { gitRoot?: string; wrap?: string[]; acmeCheck?: string } = {},
): Promise<World> {
  const acme = await createRepo({
    location: ACME,
    checks: { test: options.acmeCheck ?? 'git log --oneline -1 && test -f one.txt' },
    ...(options.gitRoot ? { root: options.gitRoot } : {}),
  });
  cleanups.push(() => acme.cleanup());
  const evil = await createRepo({ location: EVIL, root: acme.root, checks: { test: attack } });
  cleanups.push(() => evil.cleanup());
  const data = await tempDir('railyard-limits-data-');
  const server = await spawnServe(
    [
      '--git-root',
      acme.root,
      '--data-dir',
      data,
      '--org',
      'alpha',
      '--token',
      ALPHA,
      '--org-token',
      `beta=${BETA}`,
      '--org-repos',
      'alpha=github.com/acme/*',
      '--org-repos',
      'beta=github.com/evil/*',
      '--checks-uid-base',
      String(UID_BASE),
      '--checks-timeout-minutes',
      '5',
      ...args,
    ],
    { PATH: process.env.PATH, HOME: data, RAILYARD_NO_UPDATE_NOTIFIER: '1' },
    options.wrap ? { wrapper: options.wrap } : {},
  );
  cleanups.push(() => server.kill());
  return { server, acme, evil, gitRoot: acme.root };
}

/** Submits PR `n` of `repo` and waits until it merged or failed; the last transition's detail too. */
export async function land(
  s: ServeProcess,
  repo: typeof ACME,
  n: number,
  token: string,
  timeoutMs = 90_000,
): Promise<{ state: string; detail: string; testRunId?: string }> {
  const q = { repo, targetBranch: 'main' };
  await api(s, '/createQueue', token, q);
  await post(s, '/submitPullRequest', token, { ...q, pr: { number: n } });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await post(s, '/getSubmittedPullRequest', token, { ...q, pr: { number: n } });
    if (['merged', 'failed', 'cancelled'].includes(got.state)) {
      const history = await post(s, '/getPullRequestHistory', token, { ...q, pr: { number: n } });
      return {
        state: got.state,
        detail: String(history.transitions.at(-1)?.detail ?? ''),
        testRunId: got.testRunId,
      };
    }
    if (Date.now() > deadline)
      throw new Error(
        `#${n} of ${repo.owner}/${repo.name} is still ${got.state}\n${s.output().stdout}\n${s.output().stderr}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function checkLog(s: ServeProcess, testRunId: string, token: string): Promise<string> {
  const q = new URLSearchParams({
    repoHost: 'github.com',
    repo: 'evil/tool',
    targetBranch: 'main',
    testRunId,
    check: 'test',
  });
  const res = await fetch(`${s.url}/getCheckRunLog?${q}`, { headers: { 'x-api-token': token } });
  return res.text();
}

/** The attack did no harm: alpha's benign PR lands, and the server is the process it was, answering. */
export async function unharmed(w: World): Promise<void> {
  const pid = w.server.child.pid;
  w.acme.openPr(1, { 'one.txt': '1\n' }, { title: 'Benign' });
  const benign = await land(w.server, ACME, 1, ALPHA);
  expect(benign, benign.detail).toMatchObject({ state: 'merged' });
  expect(w.server.child.exitCode).toBeNull();
  expect(w.server.child.pid).toBe(pid);
  const status = await fetch(`${w.server.url}/status`);
  expect(status.status).toBe(200);
}

export const SMALL = [
  '--checks-memory-mib',
  '256',
  '--checks-processes',
  '64',
  '--checks-tmp-mib',
  '32',
  '--checks-disk-mib',
  '64',
];
