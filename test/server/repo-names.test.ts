/**
 * Repository names are checked by one rule (decisions.md "Repository names") on every operation
 * that takes a repository, v1 and flaky, and by the CLI's `--repo`: `..`, `/`, `\`, a host with a
 * trailing dot, control characters and ESC are refused with a 400 naming the field. createQueue
 * once took all of them (globex made `github.com./acme/web` beside acme's pinned `github.com`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes, type OperationName } from '../../src/contract/index.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, ok, Q, REPO, seedValidRequests, validRequests } from './helpers.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ sandbox: { testSeconds: 3600 } });
  await seedValidRequests(server);
});
afterAll(async () => {
  await server?.close();
});

/** Bad names, each with the field the 400 names. */
const BAD: Array<[string, Partial<typeof REPO>, string]> = [
  ['name ..', { name: '..' }, 'repo.name'],
  ['name .', { name: '.' }, 'repo.name'],
  ['name with /', { name: 'we/b' }, 'repo.name'],
  ['name with \\', { name: 'we\\b' }, 'repo.name'],
  ['name with a control character', { name: 'we\u0007b' }, 'repo.name'],
  ['owner ..', { owner: '..' }, 'repo.owner'],
  ['owner with /', { owner: 'acme/../x' }, 'repo.owner'],
  ['owner with \\', { owner: 'ac\\me' }, 'repo.owner'],
  ['owner with ESC', { owner: 'acme\u001b[31m' }, 'repo.owner'],
  ['host with a trailing dot', { host: 'github.com.' }, 'repo.host'],
  ['host with an empty label', { host: 'github..com' }, 'repo.host'],
  ['host with /', { host: 'github.com/x' }, 'repo.host'],
  ['host with a control character', { host: 'git\u0001hub.com' }, 'repo.host'],
  ['host with a port past 65535', { host: 'github.com:70000' }, 'repo.host'],
];

/** Every operation whose request holds a `repo: {host, owner, name}`. */
const REPO_OPS = (Object.keys(validRequests) as OperationName[]).filter((op) => {
  const body = validRequests[op];
  return typeof body.repo === 'object' && routes[op].method === 'POST';
});

describe('repository names', () => {
  it('refuses each bad name with a 400 naming the field, on every operation that takes a repo', async () => {
    expect(REPO_OPS.length).toBeGreaterThan(15);
    for (const [what, change, field] of BAD)
      for (const op of REPO_OPS) {
        const answer = await call(server, op, { ...validRequests[op], repo: { ...REPO, ...change } });
        expect([op, what, answer.status], answer.text).toEqual([op, what, 400]);
        expect(answer.text.startsWith(`${field}: must be`), `${op} ${what}: ${answer.text}`).toBe(true);
        // Control characters are shown escaped, never raw.
        expect([...answer.text].some((c) => c.charCodeAt(0) < 0x20)).toBe(false);
      }
    // No phantom queue was made.
    const list = await ok(server, 'listQueues', {});
    expect(JSON.stringify(list)).not.toContain('github.com.');
  });

  it('checks repo=owner/name of the GET operations and the repositories of a webhook', async () => {
    for (const repo of ['../web', 'acme/..', 'ac\\me/web', 'acme/we\u001bb']) {
      const answer = await call(server, 'getMergeQueueMetrics', { repo, repoHost: 'github.com' });
      expect(answer.status, repo).toBe(400);
      expect(answer.text).toMatch(/^repo \(its (owner|name)\): must be/);
    }
    const host = await call(server, 'getCheckRunLog', {
      ...validRequests.getCheckRunLog,
      repoHost: 'github.com.',
    });
    expect([host.status, host.text.slice(0, 18)]).toEqual([400, 'repoHost: must be ']);
    const hook = await call(server, 'createWebhook', {
      ...validRequests.createWebhook,
      repos: [REPO, { ...REPO, name: '..' }],
    });
    expect([hook.status, hook.text.slice(0, 22)]).toEqual([400, 'repos.1.name: must be ']);
  });

  it('takes good names, hosts in any case and with a port, and GitLab-style names', async () => {
    for (const repo of [
      { host: 'GitHub.com', owner: 'Acme-Corp', name: 'web.app_2' },
      { host: 'git.example.com:8443', owner: 'acme', name: '.github' },
      { host: 'github.com', owner: 'octo_acme', name: 'a-b.c' },
    ])
      await ok(server, 'createQueue', { repo, targetBranch: 'main' });
    expect((await call(server, 'getQueue', Q)).status).toBe(200);
  });
});

describe('the CLI --repo flag', () => {
  it(
    'refuses each bad name with a usage error naming the flag, before asking any server',
    { timeout: 60_000 },
    async () => {
      const env = isolatedEnv({ RAILYARD_TOKEN: 't', RAILYARD_API_URL: server.url });
      for (const [repo, part] of [
        ['github.com/acme/..', 'name'],
        ['github.com./acme/web', 'host'],
        ['github.com/ac\\me/web', 'owner'],
        ['github.com/acme\u001b]0;PWNED\u0007/web', 'owner'],
        ['github.com/acme/we\u0001b', 'name'],
      ]) {
        const r = await railyard(['mq', 'status', '1', '--repo', repo], env);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toContain(`--repo.${part}: must be`);
        expect(r.stderr).not.toContain('\u001b');
      }
    },
  );
});
