// REST routes of the GitHub emulator, part 4: issues (what Railyard's flaky-test tickets use):
// create, list (labels, state, since), get, update (state, state_reason, title, body) and comments
// on them (POST …/issues/{n}/comments of routes-repo.ts hands issues here). Issues are numbered with
// the pull requests, as on GitHub. The answers are checked against @octokit/openapi with the rest.
// For tests: `issuesOf` (the issues of a repository), `closeIssueAs` (a person closes one) and
// `setIssuesDown` (every issue request answered 503 until turned off again).
import { commentJson, iso, nodeId, userJson, type Urls } from './json.js';
import { HttpError } from './rest.js';
import { repoFor, validation, type AddRoute, type Answer, type Api, type Ctx } from './routes.js';
import type { IssueFacts, Repo, World } from './world.js';

const down = new WeakSet<World>();
const refused = new WeakMap<World, number>();

/** Every issue request of this emulator answers 503 while `on`. */
export function setIssuesDown(world: World, on: boolean): void {
  if (on) down.add(world);
  else down.delete(world);
}

/** Issue requests answered 503 so far. */
export function refusedIssueRequests(world: World): number {
  return refused.get(world) ?? 0;
}

export function issuesOf(world: World, owner: string, name: string): IssueFacts[] {
  const r = world.repos.get(`${owner}/${name}`);
  return r ? [...r.issues.values()] : [];
}

/** A person closes an issue (as in the web UI). */
export function closeIssueAs(
  world: World,
  owner: string,
  name: string,
  number: number,
  user: string,
  at = Date.now(),
): void {
  const issue = world.repos.get(`${owner}/${name}`)?.issues.get(number);
  if (!issue) throw new Error(`no issue ${number}`);
  Object.assign(issue, {
    state: 'closed',
    stateReason: 'completed',
    closedBy: user,
    closedAt: at,
    updatedAt: at,
  });
}

function labelJson(u: Urls, r: Repo, name: string) {
  const id = 40_000 + [...name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 1_000_000, 0);
  return {
    id,
    node_id: nodeId('Label', id),
    url: `${u.api}/repos/${r.owner}/${r.name}/labels/${encodeURIComponent(name)}`,
    name,
    description: null,
    color: 'ededed',
    default: false,
  };
}

export function issueJson(u: Urls, r: Repo, i: IssueFacts) {
  const url = `${u.api}/repos/${r.owner}/${r.name}/issues/${i.number}`;
  return {
    id: i.id,
    node_id: nodeId('Issue', i.id),
    url,
    repository_url: `${u.api}/repos/${r.owner}/${r.name}`,
    labels_url: `${url}/labels{/name}`,
    comments_url: `${url}/comments`,
    events_url: `${url}/events`,
    html_url: `${u.web}/${r.owner}/${r.name}/issues/${i.number}`,
    number: i.number,
    state: i.state,
    state_reason: i.stateReason,
    title: i.title,
    body: i.body,
    user: userJson(u, i.user),
    labels: i.labels.map((l) => labelJson(u, r, l)),
    assignee: null,
    assignees: [],
    milestone: null,
    locked: false,
    active_lock_reason: null,
    comments: i.comments.length,
    closed_at: i.closedAt === null ? null : iso(i.closedAt),
    closed_by: i.closedBy === null ? null : userJson(u, i.closedBy),
    created_at: iso(i.createdAt),
    updated_at: iso(i.updatedAt),
    author_association: i.user === r.owner ? 'OWNER' : 'COLLABORATOR',
  };
}

function guard(api: Api): void {
  if (!down.has(api.world)) return;
  refused.set(api.world, refusedIssueRequests(api.world) + 1);
  throw new HttpError(503, 'Service Unavailable');
}

function issueFor(r: Repo, n: string): IssueFacts {
  const i = /^\d+$/.test(n) ? r.issues.get(Number(n)) : undefined;
  if (!i) throw new HttpError(404, 'Not Found');
  return i;
}

/** POST …/issues/{n}/comments on an issue. */
export function commentOnIssue(api: Api, r: Repo, i: IssueFacts, c: Ctx): Answer {
  guard(api);
  if (typeof c.body.body !== 'string' || c.body.body === '')
    throw validation('IssueComment', 'body', 'missing_field');
  const at = Date.now();
  i.comments.push({ user: c.token!.login, body: c.body.body, at });
  i.updatedAt = at;
  const id = 7_000_000 + api.world.id();
  const json = commentJson(api.world.urls, r, {
    id,
    number: i.number,
    user: c.token!.login,
    body: c.body.body,
    createdAt: at,
    updatedAt: at,
  });
  return {
    status: 201,
    body: {
      ...json,
      html_url: `${api.world.urls.web}/${r.owner}/${r.name}/issues/${i.number}#issuecomment-${id}`,
    },
  };
}

export function issueRoutes(api: Api, add: AddRoute): void {
  add('POST', '/repos/{owner}/{repo}/issues', 'issues/issues#create-an-issue', 'token', (c) => {
    const r = repoFor(api, c);
    guard(api);
    if (typeof c.body.title !== 'string' || c.body.title === '')
      throw validation('Issue', 'title', 'missing_field');
    if (c.body.body !== undefined && c.body.body !== null && typeof c.body.body !== 'string')
      throw validation('Issue', 'body');
    const labels = Array.isArray(c.body.labels)
      ? c.body.labels.map((l) => (typeof l === 'string' ? l : String((l as { name?: unknown }).name)))
      : [];
    const at = Date.now();
    const i: IssueFacts = {
      number: r.nextNumber++,
      id: 9_000_000 + api.world.id(),
      title: c.body.title,
      body: (c.body.body as string | undefined) ?? null,
      labels,
      user: c.token!.login,
      state: 'open',
      stateReason: null,
      closedBy: null,
      closedAt: null,
      createdAt: at,
      updatedAt: at,
      comments: [],
    };
    r.issues.set(i.number, i);
    return {
      status: 201,
      body: issueJson(api.world.urls, r, i),
      headers: { location: `${api.world.urls.api}/repos/${r.owner}/${r.name}/issues/${i.number}` },
    };
  });

  add('GET', '/repos/{owner}/{repo}/issues', 'issues/issues#list-repository-issues', 'token', (c) => {
    const r = repoFor(api, c);
    guard(api);
    const state = c.query.get('state') ?? 'open';
    if (!['open', 'closed', 'all'].includes(state)) throw validation('Issue', 'state');
    const labels = (c.query.get('labels') ?? '').split(',').filter(Boolean);
    const since = c.query.get('since') ? Date.parse(c.query.get('since')!) : -Infinity;
    if (Number.isNaN(since)) throw validation('Issue', 'since');
    const perPage = Math.min(100, Number(c.query.get('per_page') ?? 30));
    const list = [...r.issues.values()]
      .filter(
        (i) =>
          (state === 'all' || i.state === state) &&
          labels.every((l) => i.labels.includes(l)) &&
          i.updatedAt >= since,
      )
      .sort((a, b) => b.createdAt - a.createdAt)
      .slice(0, perPage);
    return { status: 200, body: list.map((i) => issueJson(api.world.urls, r, i)) };
  });

  add('GET', '/repos/{owner}/{repo}/issues/{issue_number}', 'issues/issues#get-an-issue', 'token', (c) => {
    const r = repoFor(api, c);
    guard(api);
    return { status: 200, body: issueJson(api.world.urls, r, issueFor(r, c.params[2])) };
  });

  add(
    'PATCH',
    '/repos/{owner}/{repo}/issues/{issue_number}',
    'issues/issues#update-an-issue',
    'token',
    (c) => {
      const r = repoFor(api, c);
      guard(api);
      const i = issueFor(r, c.params[2]);
      const { state, state_reason: reason, title, body } = c.body;
      if (state !== undefined && state !== 'open' && state !== 'closed') throw validation('Issue', 'state');
      if (
        reason !== undefined &&
        reason !== null &&
        !['completed', 'not_planned', 'reopened', 'duplicate'].includes(String(reason))
      )
        throw validation('Issue', 'state_reason');
      const at = Date.now();
      if (typeof title === 'string') i.title = title;
      if (typeof body === 'string') i.body = body;
      if (state === 'closed' && i.state === 'open')
        Object.assign(i, {
          state: 'closed',
          stateReason: (reason as string | undefined) ?? 'completed',
          closedBy: c.token!.login,
          closedAt: at,
        });
      if (state === 'open' && i.state === 'closed')
        Object.assign(i, { state: 'open', stateReason: 'reopened', closedBy: null, closedAt: null });
      i.updatedAt = at;
      return { status: 200, body: issueJson(api.world.urls, r, i) };
    },
  );
}
