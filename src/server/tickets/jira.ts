/**
 * Jira as a ticket tracker: Cloud (REST v3, descriptions and comments in the Atlassian Document
 * Format) and Data Center / Server (REST v2, plain text). The version is the path's when the
 * address ends in /rest/api/2 or /rest/api/3, else 3 on *.atlassian.net and 2 elsewhere. A token
 * with a colon is EMAIL:API_TOKEN (Cloud, Basic auth); without one it is a personal access token
 * (Data Center, Bearer). Tickets are of type Bug, labelled `flaky-test` and a label naming the
 * test (how a ticket opened before a crash is found again); closing and reopening take the first
 * transition to a status of the category done, or out of it.
 */
import type { WebhookTransport } from '../webhooks/ssrf.js';
import { withoutTrailingSlashes } from './config.js';
import {
  TICKET_LABEL,
  TrackerError,
  TrackerHttp,
  type NewTicket,
  type RemoteTicket,
  type TicketRef,
  type Tracker,
} from './tracker.js';

interface Transition {
  id: string;
  name: string;
  to?: { statusCategory?: { key?: string } };
}

interface JiraIssue {
  key: string;
  fields?: {
    status?: { statusCategory?: { key?: string } };
    resolutiondate?: string | null;
    created?: string;
  };
}

/** The issue type of new tickets. */
const ISSUE_TYPE = 'Bug';

/** A paragraph per line, as the Atlassian Document Format has it (Cloud, REST v3). */
function adf(text: string) {
  return {
    type: 'doc',
    version: 1,
    content: text
      .split('\n')
      .map((line) =>
        line
          ? { type: 'paragraph', content: [{ type: 'text', text: line }] }
          : { type: 'paragraph', content: [] },
      ),
  };
}

/** Jira's date-time (`2026-12-03T10:00:00.000+0000`) in ms. */
function jiraTime(s: string | null | undefined): number | null {
  if (!s) return null;
  const ms = Date.parse(s.replace(/([+-]\d\d)(\d\d)$/, '$1:$2'));
  return Number.isNaN(ms) ? null : ms;
}

export class JiraTracker implements Tracker {
  private readonly api: string;
  private readonly site: string;
  readonly version: 2 | 3;
  private readonly http: TrackerHttp;

  constructor(
    transport: WebhookTransport,
    apiUrl: string,
    private readonly project: string,
    token: string,
  ) {
    const root = withoutTrailingSlashes(apiUrl);
    const pinned = /\/rest\/api\/([23])$/.exec(root);
    this.site = pinned ? root.slice(0, -'/rest/api/N'.length) : root;
    this.version = pinned
      ? (Number(pinned[1]) as 2 | 3)
      : new URL(root).hostname.endsWith('.atlassian.net')
        ? 3
        : 2;
    this.api = `${this.site}/rest/api/${this.version}`;
    const auth = token.includes(':') ? `Basic ${Buffer.from(token).toString('base64')}` : `Bearer ${token}`;
    this.http = new TrackerHttp(transport, { authorization: auth });
  }

  private text(text: string): unknown {
    return this.version === 3 ? adf(text) : text;
  }

  private url(key: string): string {
    return `${this.site}/browse/${encodeURIComponent(key)}`;
  }

  async create(t: NewTicket): Promise<TicketRef> {
    const issue = await this.http.call<{ key: string }>('POST', `${this.api}/issue`, {
      fields: {
        project: { key: this.project },
        summary: t.title.replace(/\s+/g, ' ').slice(0, 250),
        description: this.text(t.body),
        issuetype: { name: ISSUE_TYPE },
        labels: [TICKET_LABEL, t.marker],
      },
    });
    return { key: issue.key, url: this.url(issue.key) };
  }

  async get(key: string): Promise<RemoteTicket> {
    const issue = await this.http.call<JiraIssue>(
      'GET',
      `${this.api}/issue/${encodeURIComponent(key)}?fields=status,resolutiondate`,
    );
    const done = issue.fields?.status?.statusCategory?.key === 'done';
    return {
      key,
      url: this.url(key),
      open: !done,
      closedAt: done ? (jiraTime(issue.fields?.resolutiondate) ?? Date.now()) : null,
    };
  }

  async comment(key: string, text: string): Promise<void> {
    await this.http.call('POST', `${this.api}/issue/${encodeURIComponent(key)}/comment`, {
      body: this.text(text),
    });
  }

  private async transition(key: string, toDone: boolean): Promise<void> {
    const { transitions } = await this.http.call<{ transitions?: Transition[] }>(
      'GET',
      `${this.api}/issue/${encodeURIComponent(key)}/transitions`,
    );
    const pick = (transitions ?? []).find((t) => (t.to?.statusCategory?.key === 'done') === toDone);
    if (!pick)
      throw new TrackerError(
        `${key}: no transition ${toDone ? 'to a done status' : 'out of the done statuses'} in its workflow`,
        null,
      );
    await this.http.call('POST', `${this.api}/issue/${encodeURIComponent(key)}/transitions`, {
      transition: { id: pick.id },
    });
  }

  close(key: string): Promise<void> {
    return this.transition(key, true);
  }

  reopen(key: string): Promise<void> {
    return this.transition(key, false);
  }

  async find(marker: string, since: number): Promise<TicketRef | undefined> {
    const jql = `project = "${this.project}" AND labels = "${marker}" ORDER BY created DESC`;
    const query = new URLSearchParams({ jql, fields: 'created', maxResults: '10' });
    // Cloud's search is /search/jql (the older /search is gone there); Data Center's is /search.
    const path = this.version === 3 ? 'search/jql' : 'search';
    const { issues } = await this.http.call<{ issues?: JiraIssue[] }>('GET', `${this.api}/${path}?${query}`);
    const found = (issues ?? []).find((i) => (jiraTime(i.fields?.created) ?? Infinity) >= since - 60_000);
    return found && { key: found.key, url: this.url(found.key) };
  }
}
