/**
 * The ticket settings of a repository (`ticket_system`, `ticket_project`) over the API: each bad
 * value, and a tracker the server cannot reach (no --ticket-api-url for GitLab or Jira, no token),
 * is refused with 400 naming the setting and what would do, and the settings stay as they were.
 */
import { describe, expect, it } from 'vitest';
import { serversPerTest } from '../support/hooks.js';
import { call, ok, REPO } from './helpers.js';

const server = serversPerTest();

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
