/**
 * The ticket settings of a repository (`ticket_system`, `ticket_project`) over the API: each bad
 * value, and a tracker the server cannot reach (no --ticket-api-url for GitLab or Jira, no token),
 * is refused with 400 naming the setting and what would do, and the settings stay as they were.
 * And the tracker's address obeys the rules of outgoing webhooks: a private address is refused
 * when the server starts, and a name resolving to loopback is refused when tickets are sent.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SQLITE_FILE } from '../../src/store/index.js';
import { startGitHubEmulator } from '../support/github/index.js';
import { issuesOf } from '../support/github/routes-issues.js';
import { serversPerTest } from '../support/hooks.js';
import { spawnServe } from '../support/serve.js';
import { tempDir } from '../support/tmp.js';
import { call, ok, REPO } from './helpers.js';

const server = serversPerTest();

async function until<T>(get: () => T[], timeoutMs = 15_000): Promise<T[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = get();
    if (value.length || Date.now() > end) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('ticket settings', () => {
  it('refuses a bad project, a tracker without an address or a server without a token, and keeps the settings', async () => {
    const withTracker = await server({
      webhooks: { allowPrivate: true, allowHttp: true, tickets: { token: 'ghp_x' } },
    });
    const key = { repo: REPO, org_url_slug: withTracker.org };
    const bad = async (settings: Record<string, unknown>, message: string, s = withTracker) => {
      const a = await call(s, 'updateRepositorySettings', { ...key, settings });
      expect(a.status, a.text).toBe(400);
      expect(a.text).toContain(message);
    };
    await bad(
      { ticket_system: 'github' },
      'settings.ticket_project: needed with ticket_system github (owner/name, e.g. acme/web)',
    );
    await bad(
      { ticket_system: 'github', ticket_project: 'just-a-name' },
      'settings.ticket_project: "just-a-name" is not a github project: give owner/name',
    );
    await bad(
      { ticket_system: 'jira', ticket_project: 'web' },
      'is not a jira project: give a project key, e.g. WEB',
    );
    await bad(
      { ticket_system: 'gitlab', ticket_project: 'acme/platform/web' },
      "settings.ticket_system: gitlab needs the tracker's address: start the server with --ticket-api-url URL",
    );
    await bad({ ticket_system: 'asana', ticket_project: 'x' }, 'ticket_system');
    const noToken = await server();
    await bad(
      { ticket_system: 'github', ticket_project: 'acme/web' },
      'the server has no ticket token: start it with --ticket-token-file FILE or RAILYARD_TICKET_TOKEN',
      noToken,
    );
    expect((await ok(withTracker, 'getRepositorySettings', key)) as Record<string, unknown>).toMatchObject({
      ticket_system: 'off',
      ticket_project: '',
    });

    const set = (await ok(withTracker, 'updateRepositorySettings', {
      ...key,
      settings: { ticket_system: 'GitHub', ticket_project: 'acme/tracker' },
    })) as Record<string, unknown>;
    expect(set).toMatchObject({ ticket_system: 'github', ticket_project: 'acme/tracker' });
    const off = (await ok(withTracker, 'updateRepositorySettings', {
      ...key,
      settings: { ticket_system: 'off' },
    })) as Record<string, unknown>;
    expect(off).toMatchObject({ ticket_system: 'off', ticket_project: '' });
    // Ticket lines are not the organisation's webhooks.
    expect(((await ok(withTracker, 'listWebhooks', {})) as { endpoints: unknown[] }).endpoints).toEqual([]);
  });
});

describe('the ticket tracker address', () => {
  it('railyard serve refuses a --ticket-api-url on a private address without --webhook-allow-private (exit 2)', async () => {
    const dataDir = await tempDir('railyard-tickets-');
    // In a network namespace of its own (nothing but a down loopback): were the address not
    // refused, no request could leave this machine for it.
    const started = spawnServe(
      [
        '--sandbox',
        '--data-dir',
        dataDir,
        '--token',
        't',
        '--ticket-api-url',
        'https://169.254.169.254/latest',
      ],
      process.env,
      { wrapper: process.getuid?.() === 0 ? ['unshare', '--net'] : ['unshare', '--map-root-user', '--net'] },
    );
    await expect(started).rejects.toThrow(
      /serve exited \(2\).*--ticket-api-url: 169\.254\.169\.254 is a loopback, private or link-local address/s,
    );
  });

  it(
    'a tracker name resolving to loopback gets no request when --webhook-allow-private is off',
    { timeout: 30_000 },
    async () => {
      const gh = await startGitHubEmulator();
      try {
        gh.addToken('ghp_tickets');
        gh.createRepo('acme', 'tracker');
        const apiUrl = gh.apiUrl.replace('127.0.0.1', 'localhost');
        const s = await server({
          webhooks: {
            allowPrivate: false,
            allowHttp: true,
            pollMs: 50,
            retrySchedule: [100, 100],
            tickets: { apiUrl, token: 'ghp_tickets' },
          },
        });
        const key = { repo: REPO, org_url_slug: s.org };
        await ok(s, 'updateRepositorySettings', {
          ...key,
          settings: {
            pass_on_retry: { enabled: false },
            failure_rate: { min_sample: 1 },
            ticket_system: 'github',
            ticket_project: 'acme/tracker',
          },
        });
        const report =
          '<testsuite><testcase classname="auth" name="logs in"><failure message="boom"/></testcase><testcase classname="auth" name="passes"/></testsuite>';
        await ok(s, 'uploadTestResults', {
          ...key,
          branch: 'main',
          sha: 'a'.repeat(40),
          reports: [{ name: 'junit.xml', content: report }],
        });
        // The attempts are made, and refused before any connection.
        const db = new Database(join(s.dataDir, SQLITE_FILE), { readonly: true });
        try {
          const errors = await until(() =>
            (db.prepare('SELECT error FROM webhook_attempts').all() as { error: string }[]).map(
              (r) => r.error,
            ),
          );
          expect(errors[0]).toMatch(/^refused: localhost is a loopback name/);
        } finally {
          db.close();
        }
        expect(issuesOf(gh.world, 'acme', 'tracker')).toEqual([]);
        expect(gh.requests.filter((r) => r.path.includes('/issues')).length).toBe(0);
      } finally {
        await gh.close();
      }
    },
  );
});
