// The REST v4 endpoints the GitLab emulator serves (docs: test/support/gitlab/README.md): what
// Railyard's GitLab driver reads and writes, with GitLab's status codes and error bodies.
import type { Ci } from './ci.js';
import { TransitionError } from './ci.js';
import type { Hooks } from './hooks.js';
import {
  jobJson,
  memberJson,
  mrJson,
  noteJson,
  permissionsJson,
  pipelineJson,
  projectJson,
  protectedBranchJson,
  statusJson,
  tokenJson,
  userBasic,
} from './json.js';
import type { Mrs } from './mr.js';
import { globMatch } from './payloads.js';
import { issueRoutes } from './routes-issues.js';
import { HttpError, paged } from './rest.js';
import {
  ACCESS,
  SCOPES,
  type JobStatus,
  type Mr,
  type Project,
  type TokenInfo,
  type World,
} from './world.js';

export interface Api {
  world: World;
  mrs: Mrs;
  ci: Ci;
  hooks: Hooks;
}
export interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}
export interface Ctx {
  params: string[];
  body: Record<string, unknown>;
  query: URLSearchParams;
  token: TokenInfo;
}
export interface RouteDef {
  method: string;
  /** `/projects/:id/…`, relative to /api/v4. */
  path: string;
  handler: (api: Api, c: Ctx) => Promise<Answer> | Answer;
  /** Token scopes that may call it (default: `api`, and `read_api` for a GET); empty: any scope. */
  scopes?: readonly string[];
}

const notFound = (what = 'Not found') => new HttpError(404, { message: `404 ${what}` });
const forbidden = () => new HttpError(403, { message: '403 Forbidden' });
const missing = (field: string) => new HttpError(400, { error: `${field} is missing` });
const invalid = (field: string) => new HttpError(400, { error: `${field} does not have a valid value` });

function project(api: Api, c: Ctx, min: number = ACCESS.guest): Project {
  const id = c.params[0];
  const p = /^\d+$/.test(id) ? api.world.projects.get(Number(id)) : api.world.projectByPath(id);
  if (!p || api.world.accessLevel(p, c.token.userId) < ACCESS.guest) throw notFound('Project Not Found');
  if (api.world.accessLevel(p, c.token.userId) < min) throw forbidden();
  return p;
}

function mergeRequest(p: Project, iid: string): Mr {
  const mr = /^\d+$/.test(iid) ? p.mrs.get(Number(iid)) : undefined;
  if (!mr) throw notFound();
  return mr;
}

async function mrAnswer(api: Api, p: Project, mr: Mr, expanded: boolean, startCheck: boolean) {
  const r = await api.mrs.read(p, mr, startCheck);
  const source = api.world.projects.get(mr.sourceProjectId)!;
  return mrJson(api.world, p, mr, { ...r, headPipeline: api.ci.latest(source, mr.sha) }, expanded);
}

/** Whether a branch of `p` contains `sha` (GitLab's `branch_names_contains`). */
async function onSomeBranch(w: World, p: Project, sha: string): Promise<boolean> {
  for (const head of p.refs.values()) if (head === sha || (await w.isAncestor(p, sha, head))) return true;
  return false;
}

const STATES: JobStatus[] = ['pending', 'running', 'success', 'failed', 'canceled'];

export function routes(): RouteDef[] {
  const base = (api: Api, rest: string) => `${api.world.web}/api/v4${rest}`;
  return [
    ...issueRoutes(project),
    {
      method: 'GET',
      path: '/user',
      scopes: [...SCOPES.restRead, 'read_user'],
      handler: (api, c) => ({
        status: 200,
        body: { ...userBasic(api.world, api.world.mustUser(c.token.userId)), bot: false },
      }),
    },
    {
      method: 'GET',
      path: '/users',
      scopes: [...SCOPES.restRead, 'read_user'],
      handler: (api, c) => {
        const name = c.query.get('username');
        const list = [...api.world.users.values()].filter(
          (u) => name === null || u.username.toLowerCase() === name.toLowerCase(),
        );
        return paged(
          list.map((u) => userBasic(api.world, u)),
          c.query,
          base(api, '/users'),
        );
      },
    },
    {
      // The token reads itself (@gitbeaker's PersonalAccessTokens.show()), with api or read_api.
      method: 'GET',
      path: '/personal_access_tokens/self',
      handler: (_api, c) => ({ status: 200, body: tokenJson(c.token) }),
    },
    {
      method: 'GET',
      path: '/projects/:id',
      handler: (api, c) => {
        const p = project(api, c);
        return {
          status: 200,
          body: { ...projectJson(api.world, p), permissions: permissionsJson(api.world, p, c.token.userId) },
        };
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/merge_requests',
      handler: async (api, c) => {
        const p = project(api, c);
        const state = c.query.get('state') ?? 'all';
        if (!['opened', 'closed', 'merged', 'locked', 'all'].includes(state)) throw invalid('state');
        const target = c.query.get('target_branch');
        const source = c.query.get('source_branch');
        const after = c.query.get('updated_after');
        const iids = c.query.getAll('iids[]');
        if (iids.some((i) => !/^\d+$/.test(i))) throw invalid('iids');
        const list = [...p.mrs.values()]
          .filter((m) => iids.length === 0 || iids.includes(String(m.iid)))
          .filter((m) => state === 'all' || m.state === state)
          .filter((m) => target === null || m.targetBranch === target)
          .filter((m) => source === null || m.sourceBranch === source)
          .filter((m) => after === null || m.updatedAt > Date.parse(after))
          .sort((a, b) => b.createdAt - a.createdAt || b.iid - a.iid);
        const json = [];
        // with_merge_status_recheck=true asks GitLab to recheck unchecked MRs (in the background).
        const recheck = c.query.get('with_merge_status_recheck') === 'true';
        for (const m of list) json.push(await mrAnswer(api, p, m, false, recheck));
        return paged(json, c.query, base(api, `/projects/${p.id}/merge_requests`));
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/merge_requests/:iid',
      handler: async (api, c) => {
        const p = project(api, c);
        return { status: 200, body: await mrAnswer(api, p, mergeRequest(p, c.params[1]), true, true) };
      },
    },
    {
      method: 'PUT',
      path: '/projects/:id/merge_requests/:iid',
      handler: async (api, c) => {
        const p = project(api, c, ACCESS.developer);
        const mr = mergeRequest(p, c.params[1]);
        const actor = api.world.mustUser(c.token.userId);
        const ev = c.body.state_event;
        if (ev !== undefined) {
          if (ev !== 'close' && ev !== 'reopen') throw invalid('state_event');
          api.mrs.setState(p, mr, ev === 'close' ? 'closed' : 'opened', actor);
        }
        if (typeof c.body.title === 'string') mr.title = c.body.title;
        return { status: 200, body: await mrAnswer(api, p, mr, true, false) };
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/merge_requests/:iid/notes',
      handler: (api, c) => {
        const p = project(api, c);
        const mr = mergeRequest(p, c.params[1]);
        const asc = c.query.get('sort') === 'asc';
        const list = [...api.world.notes.values()]
          .filter((n) => n.projectId === p.id && n.iid === mr.iid)
          .sort((a, b) =>
            asc ? a.createdAt - b.createdAt || a.id - b.id : b.createdAt - a.createdAt || b.id - a.id,
          );
        return paged(
          list.map((n) => noteJson(api.world, n)),
          c.query,
          base(api, `/projects/${p.id}/merge_requests/${mr.iid}/notes`),
        );
      },
    },
    {
      method: 'POST',
      path: '/projects/:id/merge_requests/:iid/notes',
      handler: (api, c) => {
        const p = project(api, c);
        const mr = mergeRequest(p, c.params[1]);
        if (typeof c.body.body !== 'string' || c.body.body === '') throw missing('body');
        const n = api.mrs.addNote(p, mr, api.world.mustUser(c.token.userId), c.body.body);
        return { status: 201, body: noteJson(api.world, n) };
      },
    },
    {
      method: 'PUT',
      path: '/projects/:id/merge_requests/:iid/notes/:note_id',
      handler: (api, c) => {
        const p = project(api, c);
        const mr = mergeRequest(p, c.params[1]);
        const n = api.world.notes.get(Number(c.params[2]));
        if (!n || n.projectId !== p.id || n.iid !== mr.iid) throw notFound('Note Not Found');
        if (n.authorId !== c.token.userId) throw forbidden();
        if (typeof c.body.body !== 'string' || c.body.body === '') throw missing('body');
        api.mrs.editNote(p, mr, n, c.body.body);
        return { status: 200, body: noteJson(api.world, n) };
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/members/all/:user_id',
      handler: (api, c) => {
        const p = project(api, c);
        const u = api.world.users.get(Number(c.params[1]));
        const level = u ? api.world.accessLevel(p, u.id) : 0;
        if (!u || level === 0) throw notFound();
        return { status: 200, body: memberJson(api.world, u, level) };
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/pipelines',
      handler: (api, c) => {
        const p = project(api, c, ACCESS.reporter);
        const sha = c.query.get('sha');
        const ref = c.query.get('ref');
        const list = api.world.pipelines
          .filter(
            (x) => x.projectId === p.id && (sha === null || x.sha === sha) && (ref === null || x.ref === ref),
          )
          .sort((a, b) => b.id - a.id);
        return paged(
          list.map((x) => pipelineJson(api.world, x)),
          c.query,
          base(api, `/projects/${p.id}/pipelines`),
        );
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/pipelines/:pipeline_id',
      handler: (api, c) => {
        const p = project(api, c, ACCESS.reporter);
        const pl = api.world.pipelines.find((x) => x.projectId === p.id && x.id === Number(c.params[1]));
        if (!pl) throw notFound();
        return { status: 200, body: pipelineJson(api.world, pl) };
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/pipelines/:pipeline_id/jobs',
      handler: async (api, c) => {
        const p = project(api, c, ACCESS.reporter);
        const pl = api.world.pipelines.find((x) => x.projectId === p.id && x.id === Number(c.params[1]));
        if (!pl) throw notFound();
        const jobs = api.world.statuses.filter(
          (s) => s.pipelineId === pl.id && s.kind === 'build' && !s.retried,
        );
        const json = [];
        for (const j of jobs.sort((a, b) => b.id - a.id)) json.push(await jobJson(api.world, j));
        return paged(json, c.query, base(api, `/projects/${p.id}/pipelines/${pl.id}/jobs`));
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/repository/commits/:sha/statuses',
      handler: (api, c) => {
        const p = project(api, c, ACCESS.reporter);
        const sha = c.params[1];
        const all = c.query.get('all') === 'true';
        const ref = c.query.get('ref');
        const name = c.query.get('name');
        const list = api.world.statuses.filter(
          (s) =>
            s.projectId === p.id &&
            s.sha === sha &&
            (all || !s.retried) &&
            (ref === null || s.ref === ref) &&
            (name === null || s.name === name),
        );
        return paged(
          list.map((s) => statusJson(api.world, s)),
          c.query,
          base(api, `/projects/${p.id}/repository/commits/${sha}/statuses`),
        );
      },
    },
    {
      method: 'POST',
      path: '/projects/:id/statuses/:sha',
      handler: async (api, c) => {
        const p = project(api, c, ACCESS.developer);
        const state = c.body.state;
        if (state === undefined) throw missing('state');
        if (typeof state !== 'string' || !STATES.includes(state as JobStatus)) throw invalid('state');
        const sha = c.params[1];
        if (!/^[0-9a-f]{40}$/.test(sha) || (await api.world.resolve(p, sha)) !== sha)
          throw notFound('Commit Not Found');
        const str = (k: string) => (typeof c.body[k] === 'string' ? (c.body[k] as string) : null);
        // GitLab's ref: the one given, else the sha's pipeline's, else a branch containing it. A
        // fork's commit (only under refs/merge-requests here) has none: 404, as GitLab answers.
        if (
          str('ref') === null &&
          !api.world.pipelines.some((x) => x.projectId === p.id && x.sha === sha) &&
          !(await onSomeBranch(api.world, p, sha))
        )
          throw notFound('References for commit Not Found');
        try {
          const s = api.ci.postStatus(p, sha, {
            state: state as JobStatus,
            name: str('name') ?? str('context') ?? 'default',
            ref: str('ref'),
            description: str('description'),
            targetUrl: str('target_url'),
            userId: c.token.userId,
            pipelineId: c.body.pipeline_id === undefined ? null : Number(c.body.pipeline_id),
          });
          return { status: 201, body: statusJson(api.world, s) };
        } catch (e) {
          if (e instanceof TransitionError) throw new HttpError(400, { message: e.message });
          throw e;
        }
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/protected_branches',
      handler: (api, c) => {
        const p = project(api, c, ACCESS.maintainer);
        const json = p.protectedBranches.map((b) => protectedBranchJson(b));
        return paged(json, c.query, base(api, `/projects/${p.id}/protected_branches`));
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/protected_branches/:name',
      handler: (api, c) => {
        const p = project(api, c, ACCESS.maintainer);
        const b = p.protectedBranches.find((x) => x.name === c.params[1]);
        if (!b) throw notFound();
        return { status: 200, body: protectedBranchJson(b) };
      },
    },
    {
      method: 'GET',
      path: '/projects/:id/repository/branches/:branch',
      handler: async (api, c) => {
        const p = project(api, c, ACCESS.reporter);
        const name = c.params[1];
        const sha = p.refs.get(name);
        if (!sha) throw notFound('Branch Not Found');
        const cm = await api.world.commitJson(p, sha);
        const rules = p.protectedBranches.filter((b) => globMatch(b.name, name));
        const isProtected = rules.length > 0;
        const level = api.world.accessLevel(p, c.token.userId);
        // GitLab's ProtectedBranch.developers_can?: a matching rule lets Developers do it.
        const developersCan = (key: 'pushAccessLevel' | 'mergeAccessLevel') =>
          rules.some((b) => b[key] === ACCESS.developer);
        return {
          status: 200,
          body: {
            name,
            merged: false,
            protected: isProtected,
            default: name === p.defaultBranch,
            developers_can_push: developersCan('pushAccessLevel'),
            developers_can_merge: developersCan('mergeAccessLevel'),
            // No one (0) is no one; a rule's level otherwise (Developer where none matches).
            can_push: isProtected
              ? rules.some((b) => b.pushAccessLevel > ACCESS.none && level >= b.pushAccessLevel)
              : level >= ACCESS.developer,
            web_url: `${api.world.webUrl(p)}/-/tree/${name}`,
            commit: {
              id: cm.id,
              short_id: cm.id.slice(0, 8),
              title: cm.title,
              message: cm.message,
              author_name: cm.an,
              author_email: cm.ae,
              created_at: cm.cd,
            },
          },
        };
      },
    },
    {
      method: 'DELETE',
      path: '/projects/:id/repository/branches/:branch',
      handler: async (api, c) => {
        const p = project(api, c, ACCESS.developer);
        const name = c.params[1];
        if (!p.refs.has(name)) throw notFound('Branch Not Found');
        if (p.protectedBranches.some((b) => globMatch(b.name, name))) throw forbidden();
        await api.world.locked(p, async () => {
          await api.world.git.deleteRef(p.dir, `refs/heads/${name}`);
          await api.mrs.syncRefs(p, api.world.mustUser(c.token.userId));
        });
        return { status: 204 };
      },
    },
  ];
}
