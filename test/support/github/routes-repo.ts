// REST routes of the GitHub emulator, part 2: refs (the landing compare-and-swap), check runs,
// statuses, comments, permissions and GitHub App installations.
import { commentOnIssue } from './routes-issues.js';
import { randomBytes } from 'node:crypto';
import { CI_APP, latestPerName } from './ci.js';
import {
  APP_EVENTS,
  checkRunJson,
  commentJson,
  iso,
  minimalRepo,
  nodeId,
  permsOf,
  repoJson,
  statusJson,
  userJson,
  userJsonId,
  type StatusFacts,
} from './json.js';
import { HttpError } from './rest.js';
import { prFor, repoFor, resolveRef, validation, type AddRoute, type Api } from './routes.js';
import type { AppState, Installation, Repo } from './world.js';

export function repoRoutes(api: Api, add: AddRoute): void {
  const refRe = /^\/repos\/([^/]+)\/([^/]+)\/git\/refs\/(heads\/.+)$/;
  add(
    'PATCH',
    '/repos/{owner}/{repo}/git/refs/{ref}',
    'git/refs#update-a-reference',
    'token',
    async (c) => {
      const r = repoFor(api, c);
      api.world.mustMay(c.token!, 'contents');
      const ref = `refs/${c.params[2]}`;
      const { sha, force } = c.body;
      if (typeof sha !== 'string' || !/^[0-9a-f]{40}$/.test(sha))
        throw new HttpError(422, 'Invalid request.\n\n"sha" wasn\'t supplied.');
      return api.world.locked(r, async () => {
        const current = await api.world.resolve(r, ref);
        if (current === null) throw new HttpError(422, 'Reference does not exist');
        if ((await api.world.resolve(r, sha)) === null) throw new HttpError(422, 'Object does not exist');
        if (force !== true && !(await api.world.isAncestor(r, current, sha)))
          throw new HttpError(422, 'Update is not a fast forward');
        // A branch rule refuses it with the same status: only the ref, read again, tells the two apart.
        const refused = ref.startsWith('refs/heads/')
          ? api.protection.refusal(r, ref.slice('refs/heads/'.length), c.token!.login, sha)
          : null;
        if (refused !== null) throw new HttpError(422, refused);
        const upd = await api.world.git.run(['--git-dir', r.dir, 'update-ref', ref, sha, current], {
          okCodes: [1, 128],
        });
        if (upd.code !== 0) throw new HttpError(422, 'Update is not a fast forward');
        await api.prs.syncRefs(r, c.token!.login);
        return { status: 200, body: refJson(api, r, ref, sha) };
      });
    },
    refRe,
  );

  add(
    'DELETE',
    '/repos/{owner}/{repo}/git/refs/{ref}',
    'git/refs#delete-a-reference',
    'token',
    async (c) => {
      const r = repoFor(api, c);
      api.world.mustMay(c.token!, 'contents');
      const ref = `refs/${c.params[2]}`;
      return api.world.locked(r, async () => {
        const current = await api.world.resolve(r, ref);
        if (current === null) throw new HttpError(422, 'Reference does not exist');
        await api.world.git.deleteRef(r.dir, ref, current);
        await api.prs.syncRefs(r, c.token!.login);
        return { status: 204 };
      });
    },
    refRe,
  );

  const commitsRe = (tail: string) => new RegExp(`^/repos/([^/]+)/([^/]+)/commits/(.+)/${tail}$`);
  add(
    'GET',
    '/repos/{owner}/{repo}/commits/{ref}/check-runs',
    'checks/runs#list-check-runs-for-a-git-reference',
    'token',
    async (c) => {
      const r = repoFor(api, c);
      const sha = await resolveRef(api, r, c.params[2]);
      if (sha === null) throw new HttpError(422, `No commit found for SHA: ${c.params[2]}`);
      let runs = r.checkRuns.filter((x) => x.headSha === sha);
      if (c.query.get('filter') !== 'all') runs = latestPerName(runs);
      const name = c.query.get('check_name');
      if (name) runs = runs.filter((x) => x.name === name);
      const st = c.query.get('status');
      if (st) runs = runs.filter((x) => x.status === st);
      runs = [...runs].sort((a, b) => b.id - a.id);
      const total = runs.length;
      const perPage = Math.min(100, Number(c.query.get('per_page') ?? 30) || 30);
      const page = Math.max(1, Number(c.query.get('page') ?? 1) || 1);
      runs = runs.slice((page - 1) * perPage, page * perPage);
      const last = Math.max(1, Math.ceil(total / perPage));
      const pageUrl = (n: number) => {
        const q = new URLSearchParams(c.query);
        q.set('per_page', String(perPage));
        q.set('page', String(n));
        return `<${api.world.urls.api}/repos/${r.owner}/${r.name}/commits/${c.params[2]}/check-runs?${q}>`;
      };
      const links = [
        ...(page < last ? [`${pageUrl(page + 1)}; rel="next"`, `${pageUrl(last)}; rel="last"`] : []),
        ...(page > 1 ? [`${pageUrl(1)}; rel="first"`, `${pageUrl(page - 1)}; rel="prev"`] : []),
      ];
      return {
        status: 200,
        body: { total_count: total, check_runs: runs.map((x) => checkRunJson(api.world.urls, r, CI_APP, x)) },
        ...(links.length > 0 ? { headers: { link: links.join(', ') } } : {}),
      };
    },
    commitsRe('check-runs'),
  );

  add(
    'GET',
    '/repos/{owner}/{repo}/commits/{ref}/status',
    'commits/statuses#get-the-combined-status-for-a-specific-reference',
    'token',
    async (c) => {
      const r = repoFor(api, c);
      const sha = await resolveRef(api, r, c.params[2]);
      if (sha === null) throw new HttpError(404, 'Not Found');
      const latest = new Map<string, StatusFacts>();
      for (const s of r.statuses) if (s.sha === sha) latest.set(s.context, s);
      const list = [...latest.values()];
      const state = list.some((s) => s.state === 'failure' || s.state === 'error')
        ? 'failure'
        : list.length === 0 || list.some((s) => s.state === 'pending')
          ? 'pending'
          : 'success';
      const base = `${api.world.urls.api}/repos/${r.owner}/${r.name}`;
      return {
        status: 200,
        body: {
          state,
          statuses: list.map((s) => {
            const { creator: _c, ...rest } = statusJson(api.world.urls, r, s);
            return rest;
          }),
          sha,
          total_count: list.length,
          repository: minimalRepo(repoJson(api.world.urls, r)),
          commit_url: `${base}/commits/${sha}`,
          url: `${base}/commits/${sha}/status`,
        },
      };
    },
    commitsRe('status'),
  );

  add(
    'POST',
    '/repos/{owner}/{repo}/statuses/{sha}',
    'commits/statuses#create-a-commit-status',
    'token',
    async (c) => {
      const r = repoFor(api, c);
      api.world.mustMay(c.token!, 'statuses');
      const sha = c.params[2];
      const { state, target_url, description, context } = c.body;
      if (state !== 'error' && state !== 'failure' && state !== 'pending' && state !== 'success')
        throw validation('Status', 'state', 'custom', 'state is not included in the list');
      if (!/^[0-9a-f]{40}$/.test(sha) || (await api.world.resolve(r, sha)) === null)
        throw new HttpError(422, `No commit found for SHA: ${sha}`);
      const s = api.ci.addStatus(
        r,
        sha,
        state,
        typeof context === 'string' ? context : 'default',
        typeof description === 'string' ? description.slice(0, 140) : null,
        typeof target_url === 'string' ? target_url : null,
        c.token!.login,
      );
      return { status: 201, body: statusJson(api.world.urls, r, s) };
    },
  );

  add(
    'POST',
    '/repos/{owner}/{repo}/issues/{issue_number}/comments',
    'issues/comments#create-an-issue-comment',
    'token',
    (c) => {
      const r = repoFor(api, c);
      const issue = r.issues.get(Number(c.params[2]));
      if (issue) return commentOnIssue(api, r, issue, c);
      const p = prFor(r, c.params[2]);
      if (typeof c.body.body !== 'string' || c.body.body === '')
        throw validation('IssueComment', 'body', 'missing_field');
      const cm = api.prs.addComment(r, p, c.token!.login, c.body.body);
      return {
        status: 201,
        body: commentJson(api.world.urls, r, cm),
        headers: { location: `${api.world.urls.api}/repos/${r.owner}/${r.name}/issues/comments/${cm.id}` },
      };
    },
  );

  add(
    'PATCH',
    '/repos/{owner}/{repo}/issues/comments/{comment_id}',
    'issues/comments#update-an-issue-comment',
    'token',
    (c) => {
      const r = repoFor(api, c);
      const cm = r.comments.get(Number(c.params[2]));
      if (!cm) throw new HttpError(404, 'Not Found');
      if (typeof c.body.body !== 'string' || c.body.body === '')
        throw validation('IssueComment', 'body', 'missing_field');
      api.prs.editComment(r, cm, c.body.body);
      return { status: 200, body: commentJson(api.world.urls, r, cm) };
    },
  );

  add(
    'GET',
    '/repos/{owner}/{repo}/collaborators/{username}/permission',
    'collaborators/collaborators#get-repository-permissions-for-a-user',
    'token',
    (c) => {
      const r = repoFor(api, c);
      const user = c.params[2];
      const permission = r.perms.get(user) ?? 'read';
      return {
        status: 200,
        body: {
          permission,
          role_name: permission === 'none' ? 'none' : permission,
          user: {
            ...userJson(api.world.urls, user),
            permissions: permsOf(permission),
            role_name: permission,
          },
        },
      };
    },
  );

  add(
    'GET',
    '/repos/{owner}/{repo}/installation',
    'apps/apps#get-a-repository-installation-for-the-authenticated-app',
    'jwt',
    (c) => {
      const app = c.app!;
      const inst = [...api.world.installations.values()].find(
        (i) => i.appId === app.id && i.owner === c.params[0] && i.repo === c.params[1],
      );
      if (!inst) throw new HttpError(404, 'Not Found');
      return { status: 200, body: installationJson(api, inst, app) };
    },
  );

  add(
    'POST',
    '/app/installations/{installation_id}/access_tokens',
    'apps/apps#create-an-installation-access-token-for-an-app',
    'jwt',
    (c) => {
      const app = c.app!;
      const inst = api.world.installations.get(Number(c.params[0]));
      if (!inst || inst.appId !== app.id) throw new HttpError(404, 'Not Found');
      const token = `ghs_${randomBytes(27).toString('base64url').slice(0, 36)}`;
      const expiresAt = Date.now() + app.ttlMs;
      api.world.tokens.set(token, {
        login: `${app.slug}[bot]`,
        kind: 'installation',
        installationId: inst.id,
        expiresAt,
      });
      api.world.installationTokens.push({ token, installationId: inst.id, expiresAt });
      const r = api.world.repos.get(`${inst.owner}/${inst.repo}`)!;
      return {
        status: 201,
        body: {
          token,
          expires_at: iso(expiresAt),
          permissions: { ...inst.permissions },
          repository_selection: 'selected',
          repositories: [minimalRepo(repoJson(api.world.urls, r))],
        },
      };
    },
  );
}

function refJson(api: Api, r: Repo, ref: string, sha: string) {
  const base = `${api.world.urls.api}/repos/${r.owner}/${r.name}`;
  return {
    ref,
    node_id: nodeId('Ref', r.id),
    url: `${base}/git/${ref}`,
    object: { sha, type: 'commit', url: `${base}/git/commits/${sha}` },
  };
}

function installationJson(api: Api, inst: Installation, app: AppState) {
  const urls = api.world.urls;
  return {
    id: inst.id,
    account: userJson(urls, inst.owner),
    repository_selection: 'selected',
    access_tokens_url: `${urls.api}/app/installations/${inst.id}/access_tokens`,
    repositories_url: `${urls.api}/installation/repositories`,
    html_url: `${urls.web}/settings/installations/${inst.id}`,
    app_id: app.id,
    app_slug: app.slug,
    target_id: userJsonId(inst.owner),
    target_type: 'User',
    permissions: { ...inst.permissions },
    events: [...APP_EVENTS],
    created_at: iso(inst.createdAt),
    updated_at: iso(inst.createdAt),
    single_file_name: null,
    has_multiple_single_files: false,
    single_file_paths: [],
    suspended_by: null,
    suspended_at: null,
  };
}
