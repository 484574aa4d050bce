// A small Jira emulator (tests only): the issue operations Railyard's flaky-test tickets use, as
// Jira Cloud (REST v3, bodies in the Atlassian Document Format, Basic auth EMAIL:API_TOKEN, search
// at /search/jql) or Jira Data Center (REST v2, plain-text bodies, Bearer personal access tokens,
// search at /search). Create, get, comment, transitions (a workflow To Do → In Progress → Done and
// back), and a JQL search of `project = "KEY" AND labels = "…"`. A body in the other version's
// form is refused with 400, as Jira does. Every answer is checked against the excerpt of
// Atlassian's published REST description in test/fixtures/jira/ (violations in `schemaViolations`).
// For tests: `closeAsPerson`, `setDown` (every request answers 503), `refused`, and
// `loseCreateAnswers` (the issue is made but its answer never arrives).
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';

type Kind = 'string' | 'integer' | 'boolean' | 'object' | 'array' | 'null';
interface Excerpt {
  shapes: Record<string, Record<string, Kind[]>>;
  operations: Record<string, string | null | { v2?: string; v3?: string }>;
  nested: Record<string, string>;
}
const EXCERPT = JSON.parse(
  readFileSync(resolve(import.meta.dirname, '../../fixtures/jira/rest-excerpt.json'), 'utf8'),
) as Excerpt;

const STATUSES = {
  todo: {
    id: '10000',
    name: 'To Do',
    category: { id: 2, key: 'new', name: 'To Do', colorName: 'blue-gray' },
  },
  progress: {
    id: '3',
    name: 'In Progress',
    category: { id: 4, key: 'indeterminate', name: 'In Progress', colorName: 'yellow' },
  },
  done: { id: '10001', name: 'Done', category: { id: 3, key: 'done', name: 'Done', colorName: 'green' } },
} as const;
type StatusName = keyof typeof STATUSES;
/** The workflow: from each status, the transitions (id, name, to). */
const WORKFLOW: Record<StatusName, Array<[string, string, StatusName]>> = {
  todo: [
    ['21', 'Start progress', 'progress'],
    ['31', 'Done', 'done'],
  ],
  progress: [
    ['11', 'Stop progress', 'todo'],
    ['31', 'Done', 'done'],
  ],
  done: [['41', 'Reopen', 'todo']],
};

export interface JiraIssue {
  id: string;
  key: string;
  summary: string;
  /** The description as sent: an ADF document (v3) or a string (v2). */
  description: unknown;
  labels: string[];
  status: StatusName;
  created: number;
  resolutiondate: number | null;
  comments: { id: string; body: unknown; at: number; author: string }[];
}

/** Plain text of an ADF document (v3) or the string itself (v2). */
export function textOf(body: unknown): string {
  if (typeof body === 'string') return body;
  const walk = (n: unknown): string => {
    if (!n || typeof n !== 'object') return '';
    const node = n as { type?: string; text?: string; content?: unknown[] };
    if (node.type === 'text') return node.text ?? '';
    const inner = (node.content ?? []).map(walk).join(node.type === 'doc' ? '\n' : '');
    return inner;
  };
  return walk(body);
}

const jiraTime = (ms: number) => new Date(ms).toISOString().replace('Z', '+0000');

function kindOf(v: unknown): Kind {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : ('number' as Kind);
  return typeof v as Kind;
}

export class JiraEmulator {
  url = '';
  readonly issues = new Map<string, JiraIssue>();
  readonly schemaViolations: string[] = [];
  refused = 0;
  /** Creates whose answer is lost (the issue is made, the connection dropped): `loseCreateAnswers`. */
  private lose = 0;
  private down = false;
  private server: Server | undefined;
  private next = 1;

  constructor(
    readonly version: 2 | 3,
    readonly projectKey: string,
    /** v3: EMAIL:API_TOKEN (Basic); v2: a personal access token (Bearer). */
    readonly token: string,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((done) => this.server!.listen(0, '127.0.0.1', done));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((done) => this.server?.close(done));
  }

  setDown(on: boolean): void {
    this.down = on;
  }

  /** The next `n` creates make the issue and then drop the connection without an answer. */
  loseCreateAnswers(n: number): void {
    this.lose = n;
  }

  closeAsPerson(key: string, at = Date.now()): void {
    const i = this.issues.get(key)!;
    i.status = 'done';
    i.resolutiondate = at;
  }

  private check(op: string, status: number, body: unknown): void {
    const entry = EXCERPT.operations[`${op} ${status}`];
    if (entry === undefined)
      return void this.schemaViolations.push(`${op} ${status}: not in the description`);
    const name = entry === null || typeof entry === 'string' ? entry : entry[`v${this.version}`];
    if (name === null) return;
    if (name === undefined) return void this.schemaViolations.push(`${op}: not in REST v${this.version}`);
    const walk = (shape: string, value: unknown, at: string) => {
      if (kindOf(value) !== 'object')
        return void this.schemaViolations.push(`${op} ${at}: expected an object`);
      const obj = value as Record<string, unknown>;
      for (const [field, kinds] of Object.entries(EXCERPT.shapes[shape])) {
        if (!(field in obj) || !kinds.includes(kindOf(obj[field])))
          this.schemaViolations.push(
            `${op} ${at}.${field}: expected ${kinds.join('|')}, got ${field in obj ? kindOf(obj[field]) : 'nothing'}`,
          );
      }
      for (const [path, inner] of Object.entries(EXCERPT.nested)) {
        const [owner, field] = path.split('.');
        if (owner !== shape) continue;
        const list = field.endsWith('[]');
        const v = obj[field.replace('[]', '')];
        if (list)
          (Array.isArray(v) ? v : []).forEach((x, n) =>
            walk(inner, x, `${at}.${field.replace('[]', '')}[${n}]`),
          );
        else if (v !== undefined) walk(inner, v, `${at}.${field}`);
      }
    };
    walk(name, body, '$');
  }

  private issueJson(i: JiraIssue) {
    const s = STATUSES[i.status];
    return {
      id: i.id,
      key: i.key,
      self: `${this.url}/rest/api/${this.version}/issue/${i.id}`,
      fields: {
        summary: i.summary,
        labels: i.labels,
        created: jiraTime(i.created),
        resolutiondate: i.resolutiondate === null ? null : jiraTime(i.resolutiondate),
        status: {
          id: s.id,
          name: s.name,
          self: `${this.url}/rest/api/${this.version}/status/${s.id}`,
          statusCategory: s.category,
        },
      },
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const send = (op: string, status: number, body?: unknown) => {
      if (status < 300) this.check(op, status, body);
      res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    const fail = (status: number, message: string, errors: Record<string, string> = {}) =>
      send('error', status, { errorMessages: message ? [message] : [], errors });
    if (this.down) {
      this.refused++;
      return fail(503, 'Service Unavailable');
    }
    const auth = req.headers.authorization ?? '';
    const want =
      this.version === 3 ? `Basic ${Buffer.from(this.token).toString('base64')}` : `Bearer ${this.token}`;
    if (auth !== want)
      return fail(401, 'You are not authenticated. Authentication required to perform this operation.');
    const url = new URL(req.url ?? '/', this.url);
    const prefix = `/rest/api/${this.version}`;
    if (!url.pathname.startsWith(`${prefix}/`)) return fail(404, 'Not found');
    const path = url.pathname.slice(prefix.length);
    let body: Record<string, unknown> = {};
    try {
      if (chunks.length) body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    } catch {
      return fail(400, 'Unexpected character in the request body');
    }
    const textOk = (v: unknown) =>
      this.version === 2
        ? typeof v === 'string'
        : !!v &&
          typeof v === 'object' &&
          (v as { type?: unknown }).type === 'doc' &&
          (v as { version?: unknown }).version === 1 &&
          Array.isArray((v as { content?: unknown }).content);
    const textError =
      this.version === 3
        ? 'Operation value must be an Atlassian Document (see the Atlassian Document Format)'
        : 'Operation value must be a string';
    const byKey = (k: string) => this.issues.get(decodeURIComponent(k));
    let m: RegExpExecArray | null;

    if (req.method === 'POST' && path === '/issue') {
      const f = (body.fields ?? {}) as Record<string, unknown>;
      if ((f.project as { key?: string } | undefined)?.key !== this.projectKey)
        return fail(400, '', { project: 'valid project is required' });
      if (typeof f.summary !== 'string' || !f.summary)
        return fail(400, '', { summary: 'You must specify a summary of the issue.' });
      if (f.summary.length > 255)
        return fail(400, '', { summary: 'Summary must be less than 255 characters.' });
      if ((f.issuetype as { name?: string } | undefined)?.name !== 'Bug')
        return fail(400, '', { issuetype: 'valid issue type is required' });
      if (f.description !== undefined && !textOk(f.description))
        return fail(400, '', { description: textError });
      const labels = Array.isArray(f.labels) ? f.labels.map(String) : [];
      if (labels.some((l) => /\s/.test(l))) return fail(400, '', { labels: 'Labels cannot contain spaces' });
      const n = this.next++;
      const i: JiraIssue = {
        id: String(10_000 + n),
        key: `${this.projectKey}-${n}`,
        summary: f.summary,
        description: f.description ?? null,
        labels,
        status: 'todo',
        created: Date.now(),
        resolutiondate: null,
        comments: [],
      };
      this.issues.set(i.key, i);
      if (this.lose > 0) {
        this.lose--;
        return void res.destroy();
      }
      return send('POST /issue', 201, { id: i.id, key: i.key, self: `${this.url}${prefix}/issue/${i.id}` });
    }
    if (req.method === 'GET' && (m = /^\/issue\/([^/]+)$/.exec(path))) {
      const i = byKey(m[1]);
      if (!i) return fail(404, 'Issue does not exist or you do not have permission to see it.');
      return send('GET /issue/{issueIdOrKey}', 200, this.issueJson(i));
    }
    if ((m = /^\/issue\/([^/]+)\/transitions$/.exec(path))) {
      const i = byKey(m[1]);
      if (!i) return fail(404, 'Issue does not exist or you do not have permission to see it.');
      const available = WORKFLOW[i.status];
      if (req.method === 'GET')
        return send('GET /issue/{issueIdOrKey}/transitions', 200, {
          transitions: available.map(([id, name, to]) => ({
            id,
            name,
            hasScreen: false,
            isAvailable: true,
            to: {
              id: STATUSES[to].id,
              name: STATUSES[to].name,
              self: `${this.url}${prefix}/status/${STATUSES[to].id}`,
              statusCategory: STATUSES[to].category,
            },
          })),
        });
      const id = (body.transition as { id?: unknown } | undefined)?.id;
      const pick = available.find(([tid]) => tid === id);
      if (!pick) return fail(400, `Transition id '${String(id)}' is not valid for this issue.`);
      i.status = pick[2];
      i.resolutiondate = pick[2] === 'done' ? Date.now() : null;
      return send('POST /issue/{issueIdOrKey}/transitions', 204);
    }
    if (req.method === 'POST' && (m = /^\/issue\/([^/]+)\/comment$/.exec(path))) {
      const i = byKey(m[1]);
      if (!i) return fail(404, 'Issue does not exist or you do not have permission to see it.');
      if (!textOk(body.body)) return fail(400, '', { comment: textError });
      const c = { id: String(20_000 + this.next++), body: body.body, at: Date.now(), author: 'railyard-bot' };
      i.comments.push(c);
      return send('POST /issue/{issueIdOrKey}/comment', 201, {
        id: c.id,
        self: `${this.url}${prefix}/issue/${i.id}/comment/${c.id}`,
        author: { displayName: c.author, active: true },
        body: c.body,
        created: jiraTime(c.at),
        updated: jiraTime(c.at),
      });
    }
    const searchPath = this.version === 3 ? '/search/jql' : '/search';
    if (req.method === 'GET' && path === searchPath) {
      const jql = url.searchParams.get('jql') ?? '';
      const q = /^project = "([^"]+)" AND labels = "([^"]+)" ORDER BY created DESC$/.exec(jql);
      if (!q) return fail(400, `Error in the JQL Query: ${jql.slice(0, 100)}`);
      const found = [...this.issues.values()]
        .filter((i) => q[1] === this.projectKey && i.labels.includes(q[2]))
        .sort((a, b) => b.created - a.created);
      const max = Number(url.searchParams.get('maxResults') ?? 50);
      const issues = found.slice(0, max).map((i) => this.issueJson(i));
      return this.version === 3
        ? send('GET /search/jql', 200, { issues, isLast: found.length <= max })
        : send('GET /search', 200, { startAt: 0, maxResults: max, total: found.length, issues });
    }
    if (path === '/search' || path === '/search/jql') return fail(410, 'The requested API has been removed.');
    return fail(404, 'Not found');
  }
}

export async function startJiraEmulator(version: 2 | 3, projectKey = 'WEB'): Promise<JiraEmulator> {
  const e = new JiraEmulator(
    version,
    projectKey,
    version === 3 ? 'bot@example.com:atl-api-token' : 'dc-personal-access-token',
  );
  await e.start();
  return e;
}
