/**
 * What Railyard asks of an issue tracker (open, look at, comment, close, reopen, find an issue it
 * may have opened before a crash), over the HTTP client of outgoing webhooks (its address rules,
 * no redirects, a deadline per request), and the GitHub Issues and GitLab issues trackers. Jira is
 * in jira.ts. Each answer outside 2xx is a TrackerError naming the request and the status: the
 * delivery is then retried on the outbox's schedule.
 */
import type { WebhookTransport } from '../webhooks/ssrf.js';
import { GITHUB_API, withoutTrailingSlashes } from './config.js';

export interface NewTicket {
  title: string;
  /** Markdown (GitHub, GitLab) or plain lines (Jira). */
  body: string;
  /** Hidden in the body (GitHub, GitLab) or a label (Jira): finds the ticket again after a crash. */
  marker: string;
}

export interface TicketRef {
  key: string;
  url: string;
}

export interface RemoteTicket extends TicketRef {
  open: boolean;
  closedAt: number | null;
}

export interface Tracker {
  create(ticket: NewTicket): Promise<TicketRef>;
  get(key: string): Promise<RemoteTicket>;
  comment(key: string, text: string): Promise<void>;
  close(key: string): Promise<void>;
  reopen(key: string): Promise<void>;
  /** The ticket carrying `marker` created at `since` or later, if any. */
  find(marker: string, since: number): Promise<TicketRef | undefined>;
}

/** The label every ticket gets (GitHub, GitLab, Jira). */
export const TICKET_LABEL = 'flaky-test';

export class TrackerError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

/** JSON over the webhook transport, with the tracker's auth headers; rejects anything but 2xx. */
export class TrackerHttp {
  constructor(
    private readonly transport: WebhookTransport,
    private readonly headers: Record<string, string>,
  ) {}

  async call<T>(method: string, url: string, body?: unknown): Promise<T> {
    const answer = await this.transport.request(
      method,
      url,
      body === undefined ? undefined : JSON.stringify(body),
      {
        accept: 'application/json',
        ...this.headers,
      },
    );
    if (answer.status < 200 || answer.status >= 300) {
      const why = answer.status >= 300 && answer.status < 400 ? ' (redirects are not followed)' : '';
      throw new TrackerError(
        `${method} ${new URL(url).pathname}: HTTP ${answer.status}${why} ${answer.excerpt.slice(0, 300)}`.trim(),
        answer.status,
      );
    }
    const text = answer.body.toString('utf8');
    return (text ? JSON.parse(text) : {}) as T;
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
const time = (s: string | null | undefined) => (s ? Date.parse(s) : null);

interface GitHubIssue {
  number: number;
  html_url: string;
  state: string;
  closed_at: string | null;
  created_at: string;
  body?: string | null;
  pull_request?: unknown;
}

/** GitHub Issues (REST, 2022-11-28): `project` is owner/name. */
export class GitHubTracker implements Tracker {
  private readonly base: string;
  private readonly http: TrackerHttp;

  constructor(transport: WebhookTransport, apiUrl: string | undefined, project: string, token: string) {
    this.base = `${withoutTrailingSlashes(apiUrl ?? GITHUB_API)}/repos/${project.split('/').map(encodeURIComponent).join('/')}`;
    this.http = new TrackerHttp(transport, {
      authorization: `Bearer ${token}`,
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
    });
  }

  async create(t: NewTicket): Promise<TicketRef> {
    const issue = await this.http.call<GitHubIssue>('POST', `${this.base}/issues`, {
      title: t.title,
      body: `${t.body}\n\n<!-- ${t.marker} -->\n`,
      labels: [TICKET_LABEL],
    });
    return { key: String(issue.number), url: issue.html_url };
  }

  async get(key: string): Promise<RemoteTicket> {
    const issue = await this.http.call<GitHubIssue>('GET', `${this.base}/issues/${key}`);
    return { key, url: issue.html_url, open: issue.state === 'open', closedAt: time(issue.closed_at) };
  }

  async comment(key: string, text: string): Promise<void> {
    await this.http.call('POST', `${this.base}/issues/${key}/comments`, { body: text });
  }

  async close(key: string): Promise<void> {
    await this.http.call('PATCH', `${this.base}/issues/${key}`, {
      state: 'closed',
      state_reason: 'completed',
    });
  }

  async reopen(key: string): Promise<void> {
    await this.http.call('PATCH', `${this.base}/issues/${key}`, { state: 'open' });
  }

  async find(marker: string, since: number): Promise<TicketRef | undefined> {
    // `since` filters on the last update, which is at or after the creation.
    const query = new URLSearchParams({
      labels: TICKET_LABEL,
      state: 'all',
      since: iso(since - 60_000),
      per_page: '100',
    });
    const issues = await this.http.call<GitHubIssue[]>('GET', `${this.base}/issues?${query}`);
    const found = issues.find(
      (i) => !i.pull_request && (i.body ?? '').includes(marker) && Date.parse(i.created_at) >= since - 60_000,
    );
    return found && { key: String(found.number), url: found.html_url };
  }
}

interface GitLabIssue {
  iid: number;
  web_url: string;
  state: string;
  closed_at: string | null;
  created_at: string;
  description: string | null;
}

/** GitLab issues (REST v4): `project` is the project's path; `apiUrl` the instance (with or without /api/v4). */
export class GitLabTracker implements Tracker {
  private readonly base: string;
  private readonly http: TrackerHttp;

  constructor(transport: WebhookTransport, apiUrl: string, project: string, token: string) {
    const root = withoutTrailingSlashes(apiUrl);
    this.base = `${root.endsWith('/api/v4') ? root : `${root}/api/v4`}/projects/${encodeURIComponent(project)}`;
    this.http = new TrackerHttp(transport, { 'private-token': token });
  }

  async create(t: NewTicket): Promise<TicketRef> {
    const issue = await this.http.call<GitLabIssue>('POST', `${this.base}/issues`, {
      title: t.title,
      description: `${t.body}\n\n<!-- ${t.marker} -->\n`,
      labels: TICKET_LABEL,
    });
    return { key: String(issue.iid), url: issue.web_url };
  }

  async get(key: string): Promise<RemoteTicket> {
    const issue = await this.http.call<GitLabIssue>('GET', `${this.base}/issues/${key}`);
    return { key, url: issue.web_url, open: issue.state === 'opened', closedAt: time(issue.closed_at) };
  }

  async comment(key: string, text: string): Promise<void> {
    await this.http.call('POST', `${this.base}/issues/${key}/notes`, { body: text });
  }

  async close(key: string): Promise<void> {
    await this.http.call('PUT', `${this.base}/issues/${key}`, { state_event: 'close' });
  }

  async reopen(key: string): Promise<void> {
    await this.http.call('PUT', `${this.base}/issues/${key}`, { state_event: 'reopen' });
  }

  async find(marker: string, since: number): Promise<TicketRef | undefined> {
    const query = new URLSearchParams({
      labels: TICKET_LABEL,
      created_after: iso(since - 60_000),
      per_page: '100',
      scope: 'all',
    });
    const issues = await this.http.call<GitLabIssue[]>('GET', `${this.base}/issues?${query}`);
    const found = issues.find((i) => (i.description ?? '').includes(marker));
    return found && { key: String(found.iid), url: found.web_url };
  }
}
