// The GitLab emulator's issues (what Railyard's flaky-test tickets use): create, list (labels,
// state, created_after, search), get, update (`state_event` close/reopen, title, description) and
// notes on them, with GitLab's status codes and error bodies. Issue iids are the project's own
// sequence (not the merge requests'). The answers' shape is checked by openapi.ts (ISSUE, from
// GitLab's Issues API documentation and @gitbeaker/core's IssueSchema). For tests: `issuesOf`,
// `closeIssueAs` (a person closes one) and `setIssuesDown` (every issue request answers 503).
import { userBasic } from './json.js';
import { HttpError } from './rest.js';
import type { Api, Ctx, RouteDef } from './routes.js';
import { ACCESS, iso, type Project, type World } from './world.js';

export interface IssueFacts {
  id: number;
  iid: number;
  projectId: number;
  title: string;
  description: string;
  labels: string[];
  authorId: number;
  state: 'opened' | 'closed';
  closedAt: number | null;
  closedById: number | null;
  createdAt: number;
  updatedAt: number;
  notes: { id: number; authorId: number; body: string; at: number }[];
}

const issues = new WeakMap<Project, Map<number, IssueFacts>>();
const down = new WeakMap<World, { on: boolean; refused: number }>();

function of(p: Project): Map<number, IssueFacts> {
  let m = issues.get(p);
  if (!m) issues.set(p, (m = new Map()));
  return m;
}

export function issuesOf(w: World, path: string): IssueFacts[] {
  const p = w.projectByPath(path);
  return p ? [...of(p).values()] : [];
}

/** A person closes an issue (as in the web UI). */
export function closeIssueAs(w: World, path: string, iid: number, userId: number, at = Date.now()): void {
  const i = of(w.projectByPath(path)!).get(iid);
  if (!i) throw new Error(`no issue ${iid}`);
  Object.assign(i, { state: 'closed', closedAt: at, closedById: userId, updatedAt: at });
}

export function setIssuesDown(w: World, on: boolean): void {
  const d = down.get(w) ?? { on: false, refused: 0 };
  d.on = on;
  down.set(w, d);
}

export function refusedIssueRequests(w: World): number {
  return down.get(w)?.refused ?? 0;
}

function issueJson(w: World, p: Project, i: IssueFacts) {
  const web = `${w.web}/${p.pathWithNamespace}/-/issues/${i.iid}`;
  const api = `${w.web}/api/v4/projects/${p.id}`;
  return {
    id: i.id,
    iid: i.iid,
    project_id: p.id,
    title: i.title,
    description: i.description,
    state: i.state,
    created_at: iso(i.createdAt),
    updated_at: iso(i.updatedAt),
    closed_at: i.closedAt === null ? null : iso(i.closedAt),
    closed_by: i.closedById === null ? null : userBasic(w, w.mustUser(i.closedById)),
    labels: i.labels,
    milestone: null,
    assignees: [],
    author: userBasic(w, w.mustUser(i.authorId)),
    type: 'ISSUE',
    assignee: null,
    user_notes_count: i.notes.length,
    merge_requests_count: 0,
    upvotes: 0,
    downvotes: 0,
    due_date: null,
    confidential: false,
    discussion_locked: null,
    issue_type: 'issue',
    web_url: web,
    time_stats: {
      time_estimate: 0,
      total_time_spent: 0,
      human_time_estimate: null,
      human_total_time_spent: null,
    },
    task_completion_status: { count: 0, completed_count: 0 },
    has_tasks: false,
    _links: {
      self: `${api}/issues/${i.iid}`,
      notes: `${api}/issues/${i.iid}/notes`,
      award_emoji: `${api}/issues/${i.iid}/award_emoji`,
      project: api,
    },
    references: { short: `#${i.iid}`, relative: `#${i.iid}`, full: `${p.pathWithNamespace}#${i.iid}` },
    subscribed: true,
  };
}

type ProjectOf = (api: Api, c: Ctx, min?: number) => Project;

export function issueRoutes(project: ProjectOf): RouteDef[] {
  const guard = (api: Api) => {
    const d = down.get(api.world);
    if (!d?.on) return;
    d.refused++;
    throw new HttpError(503, { message: '503 Service Unavailable' });
  };
  const issue = (p: Project, iid: string) => {
    const i = /^\d+$/.test(iid) ? of(p).get(Number(iid)) : undefined;
    if (!i) throw new HttpError(404, { message: '404 Not found' });
    return i;
  };
  const labelsOf = (v: unknown) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : Array.isArray(v)
        ? v.map(String)
        : [];
  return [
    {
      method: 'POST',
      path: '/projects/:id/issues',
      handler: (api, c) => {
        guard(api);
        const p = project(api, c, ACCESS.guest);
        if (typeof c.body.title !== 'string' || !c.body.title)
          throw new HttpError(400, { error: 'title is missing' });
        const at = Date.now();
        const m = of(p);
        const i: IssueFacts = {
          id: 80_000 + api.world.id(),
          iid: m.size + 1,
          projectId: p.id,
          title: c.body.title,
          description: typeof c.body.description === 'string' ? c.body.description : '',
          labels: labelsOf(c.body.labels),
          authorId: c.token.userId,
          state: 'opened',
          closedAt: null,
          closedById: null,
          createdAt: at,
          updatedAt: at,
          notes: [],
        };
        m.set(i.iid, i);
        return { status: 201, body: issueJson(api.world, p, i) };
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/issues',
      handler: (api, c) => {
        guard(api);
        const p = project(api, c);
        const state = c.query.get('state') ?? 'all';
        if (!['opened', 'closed', 'all'].includes(state))
          throw new HttpError(400, { error: 'state does not have a valid value' });
        const labels = labelsOf(c.query.get('labels') ?? '');
        const after = c.query.get('created_after');
        if (after !== null && Number.isNaN(Date.parse(after)))
          throw new HttpError(400, { error: 'created_after is invalid' });
        const search = c.query.get('search');
        const list = [...of(p).values()]
          .filter((i) => (state === 'all' || i.state === state) && labels.every((l) => i.labels.includes(l)))
          .filter((i) => after === null || i.createdAt >= Date.parse(after))
          .filter((i) => search === null || i.title.includes(search) || i.description.includes(search))
          .sort((a, b) => b.createdAt - a.createdAt)
          .slice(0, Math.min(100, Number(c.query.get('per_page') ?? 20)));
        return { status: 200, body: list.map((i) => issueJson(api.world, p, i)) };
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/issues/:iid',
      handler: (api, c) => {
        guard(api);
        const p = project(api, c);
        return { status: 200, body: issueJson(api.world, p, issue(p, c.params[1])) };
      },
    },
    {
      method: 'PUT',
      path: '/projects/:id/issues/:iid',
      handler: (api, c) => {
        guard(api);
        const p = project(api, c, ACCESS.reporter);
        const i = issue(p, c.params[1]);
        const event = c.body.state_event;
        if (event !== undefined && event !== 'close' && event !== 'reopen')
          throw new HttpError(400, { error: 'state_event does not have a valid value' });
        const at = Date.now();
        if (typeof c.body.title === 'string') i.title = c.body.title;
        if (typeof c.body.description === 'string') i.description = c.body.description;
        if (event === 'close' && i.state === 'opened')
          Object.assign(i, { state: 'closed', closedAt: at, closedById: c.token.userId });
        if (event === 'reopen' && i.state === 'closed')
          Object.assign(i, { state: 'opened', closedAt: null, closedById: null });
        i.updatedAt = at;
        return { status: 200, body: issueJson(api.world, p, i) };
      },
    },
    {
      method: 'POST',
      path: '/projects/:id/issues/:iid/notes',
      handler: (api, c) => {
        guard(api);
        const p = project(api, c);
        const i = issue(p, c.params[1]);
        if (typeof c.body.body !== 'string' || !c.body.body)
          throw new HttpError(400, { error: 'body is missing' });
        const at = Date.now();
        const n = { id: 90_000 + api.world.id(), authorId: c.token.userId, body: c.body.body, at };
        i.notes.push(n);
        i.updatedAt = at;
        return {
          status: 201,
          body: {
            id: n.id,
            type: null,
            body: n.body,
            attachment: null,
            author: userBasic(api.world, api.world.mustUser(n.authorId)),
            created_at: iso(at),
            updated_at: iso(at),
            system: false,
            noteable_id: i.id,
            noteable_type: 'Issue',
            noteable_iid: i.iid,
            resolvable: false,
            confidential: false,
            internal: false,
          },
        };
      },
    },
  ];
}
