// REST routes of the GitHub emulator, part 1: rate limit, the repository and pull requests (get,
// list, open, edit, merge).
import { permsOf, repoJson } from './json.js';
import { HttpError } from './rest.js';
import { prFor, repoFor, validation, type AddRoute, type Api } from './routes.js';
import { ZERO } from './world.js';

/** Fields of a full pull request that GitHub's list ("pull-request-simple") does not send. */
const SIMPLE_OMITS = [
  'merged',
  'mergeable',
  'rebaseable',
  'mergeable_state',
  'merged_by',
  'comments',
  'review_comments',
  'maintainer_can_modify',
  'commits',
  'additions',
  'deletions',
  'changed_files',
];

export function pullRoutes(api: Api, add: AddRoute): void {
  add(
    'GET',
    '/rate_limit',
    'rate-limit/rate-limit#get-rate-limit-status-for-the-authenticated-user',
    'none',
    (c) => {
      const h = c.rate;
      const core = {
        limit: Number(h['x-ratelimit-limit']),
        remaining: Number(h['x-ratelimit-remaining']),
        reset: Number(h['x-ratelimit-reset']),
        used: Number(h['x-ratelimit-used']),
      };
      const search = { limit: 30, remaining: 30, reset: core.reset, used: 0 };
      return { status: 200, body: { resources: { core, search, graphql: { ...core } }, rate: core } };
    },
  );

  add('GET', '/repos/{owner}/{repo}', 'repos/repos#get-a-repository', 'token', (c) => {
    const r = repoFor(api, c);
    const body = repoJson(api.world.urls, r);
    // A PAT sees its holder's role in the repository.
    if (c.token!.kind === 'pat') body.permissions = permsOf(c.token!.permission ?? 'admin');
    return { status: 200, body };
  });

  add(
    'GET',
    '/repos/{owner}/{repo}/pulls/{pull_number}',
    'pulls/pulls#get-a-pull-request',
    'token',
    async (c) => {
      const r = repoFor(api, c);
      return { status: 200, body: await api.prs.answer(r, prFor(r, c.params[2]), true) };
    },
  );

  // The list answers GitHub's "simple" pull request: no mergeability (it is never computed for a list).
  // Filters: `state` (open, closed, all; default open), `base`, and `head` (`owner:branch`).
  add('GET', '/repos/{owner}/{repo}/pulls', 'pulls/pulls#list-pull-requests', 'token', async (c) => {
    const r = repoFor(api, c);
    const state = c.query.get('state') ?? 'open';
    if (!['open', 'closed', 'all'].includes(state)) throw validation('PullRequest', 'state', 'invalid');
    const base = c.query.get('base');
    const head = c.query.get('head');
    const headBranch = head === null ? null : head.includes(':') ? head.slice(head.indexOf(':') + 1) : head;
    const perPage = Math.min(100, Number(c.query.get('per_page') ?? 30) || 30);
    const page = Math.max(1, Number(c.query.get('page') ?? 1) || 1);
    const all = [...r.prs.values()]
      .filter((p) => state === 'all' || p.state === state)
      .filter((p) => base === null || p.base === base)
      .filter((p) => headBranch === null || p.head === headBranch)
      .sort((a, b) => b.number - a.number);
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const pageUrl = (n: number) => {
      const q = new URLSearchParams(c.query);
      q.set('per_page', String(perPage));
      q.set('page', String(n));
      return `<${api.world.urls.api}/repos/${r.owner}/${r.name}/pulls?${q}>`;
    };
    const links = page < last ? [`${pageUrl(page + 1)}; rel="next"`, `${pageUrl(last)}; rel="last"`] : [];
    const body = [];
    for (const p of all.slice((page - 1) * perPage, page * perPage)) {
      const full: Record<string, unknown> = await api.prs.answer(r, p, false);
      for (const k of SIMPLE_OMITS) delete full[k];
      body.push(full);
    }
    return { status: 200, body, ...(links.length > 0 ? { headers: { link: links.join(', ') } } : {}) };
  });

  add('POST', '/repos/{owner}/{repo}/pulls', 'pulls/pulls#create-a-pull-request', 'token', async (c) => {
    const r = repoFor(api, c);
    const { title, head, base, body, draft } = c.body;
    if (typeof head !== 'string' || head === '') throw validation('PullRequest', 'head', 'missing_field');
    if (typeof base !== 'string' || base === '') throw validation('PullRequest', 'base', 'missing_field');
    if (typeof title !== 'string' || title === '') throw validation('PullRequest', 'title', 'missing_field');
    const headBranch = head.includes(':') ? head.slice(head.indexOf(':') + 1) : head;
    return api.world.locked(r, async () => {
      const headSha = await api.world.resolve(r, `refs/heads/${headBranch}`);
      if (headSha === null) throw validation('PullRequest', 'head', 'invalid');
      const baseSha = await api.world.resolve(r, `refs/heads/${base}`);
      if (baseSha === null) throw validation('PullRequest', 'base', 'invalid');
      if ([...r.prs.values()].some((p) => p.state === 'open' && p.head === headBranch && p.base === base))
        throw new HttpError(422, 'Validation Failed', {
          errors: [
            {
              resource: 'PullRequest',
              code: 'custom',
              message: `A pull request already exists for ${r.owner}:${headBranch}.`,
            },
          ],
        });
      if (await api.world.isAncestor(r, headSha, baseSha))
        throw new HttpError(422, 'Validation Failed', {
          errors: [
            {
              resource: 'PullRequest',
              code: 'custom',
              message: `No commits between ${base} and ${headBranch}`,
            },
          ],
        });
      const p = await api.prs.open(r, {
        head: headBranch,
        base,
        title,
        body: typeof body === 'string' ? body : null,
        user: c.token!.login,
        draft: draft === true,
      });
      return {
        status: 201,
        body: await api.prs.answer(r, p, false),
        headers: { location: `${api.world.urls.api}/repos/${r.owner}/${r.name}/pulls/${p.number}` },
      };
    });
  });

  add(
    'PATCH',
    '/repos/{owner}/{repo}/pulls/{pull_number}',
    'pulls/pulls#update-a-pull-request',
    'token',
    async (c) => {
      const r = repoFor(api, c);
      const p = prFor(r, c.params[2]);
      const { title, body, state, base } = c.body;
      const actor = c.token!.login;
      if (state !== undefined && state !== 'open' && state !== 'closed')
        throw validation('PullRequest', 'state', 'invalid');
      if (title !== undefined && typeof title !== 'string')
        throw validation('PullRequest', 'title', 'invalid');
      if (
        base !== undefined &&
        (typeof base !== 'string' || (await api.world.resolve(r, `refs/heads/${base}`)) === null)
      )
        throw validation('PullRequest', 'base', 'invalid');
      const changes: Record<string, unknown> = {};
      if (typeof title === 'string' && title !== p.title) {
        changes.title = { from: p.title };
        p.title = title;
      }
      if (body !== undefined && (typeof body === 'string' || body === null) && body !== p.body) {
        changes.body = { from: p.body ?? '' };
        p.body = body;
      }
      if (typeof base === 'string' && base !== p.base) {
        const oldSha = (await api.world.resolve(r, `refs/heads/${p.base}`)) ?? ZERO;
        changes.base = { ref: { from: p.base }, sha: { from: oldSha } };
        p.base = base;
      }
      p.updatedAt = Date.now();
      if (Object.keys(changes).length > 0) {
        api.prs.event(r, p, 'edited', actor, { changes });
        void api.prs.computeMergeability(r, p).catch(() => undefined);
      }
      if (state === 'closed' && p.state === 'open') api.prs.setClosed(r, p, actor);
      else if (state === 'open' && p.state === 'closed' && !p.merged) api.prs.reopen(r, p, actor);
      return { status: 200, body: await api.prs.answer(r, p, false) };
    },
  );

  add(
    'PUT',
    '/repos/{owner}/{repo}/pulls/{pull_number}/merge',
    'pulls/pulls#merge-a-pull-request',
    'token',
    async (c) => {
      const r = repoFor(api, c);
      const p = prFor(r, c.params[2]);
      api.world.mustMay(c.token!, 'contents');
      const { sha, merge_method: method = 'merge', commit_title, commit_message } = c.body;
      if (method !== 'merge' && method !== 'squash' && method !== 'rebase')
        throw validation('PullRequest', 'merge_method', 'invalid');
      const answer = await api.world.locked(r, async () => {
        if (p.state !== 'open') throw new HttpError(405, 'Pull Request is not mergeable');
        if (p.draft) throw new HttpError(405, 'Pull Request is still a draft');
        if (sha !== undefined && sha !== p.headSha)
          throw new HttpError(409, 'Head branch was modified. Review and try the merge again.');
        const rules = r.rules.get(p.base);
        const waits = api.protection.blockedBy(r, p);
        if (rules && waits.length > 0 && !(rules.bypass ?? []).includes(c.token!.login)) {
          const need = rules.requiredApprovals ?? 0;
          throw new HttpError(
            405,
            waits[0].startsWith('required check ')
              ? `Required status check "${waits[0].slice('required check '.length)}" is expected.`
              : waits[0] === 'unresolved conversations'
                ? 'All comments must be resolved.'
                : `At least ${need} approving review${need === 1 ? ' is' : 's are'} required by reviewers with write access.`,
          );
        }
        const title =
          typeof commit_title === 'string'
            ? commit_title
            : method === 'merge'
              ? `Merge pull request #${p.number} from ${r.owner}/${p.head}`
              : `${p.title} (#${p.number})`;
        const message = `${title}\n\n${typeof commit_message === 'string' ? commit_message : p.title}`;
        const newSha = await api.prs.merge(r, p, method, message, c.token!.login);
        if (newSha === null) throw new HttpError(405, 'Pull Request is not mergeable');
        return {
          status: 200,
          body: { sha: newSha, merged: true, message: 'Pull Request successfully merged' },
        };
      });
      // Merged (and its webhooks sent); the answer may take a while (setMergeAnswerDelay).
      if (r.mergeAnswerDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, r.mergeAnswerDelayMs));
      return answer;
    },
  );
}
