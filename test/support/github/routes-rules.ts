// REST routes of the GitHub emulator, part 3: what a read-only token or an App can learn about a
// branch's rules and a PR's reviews — GET rules/branches/{branch}, GET branches/{branch},
// GET pulls/{n}/reviews.
import { HttpError } from './rest.js';
import { prFor, repoFor, type AddRoute, type Api } from './routes.js';

export function rulesRoutes(api: Api, add: AddRoute): void {
  const branchRe = (tail: string) => new RegExp(`^/repos/([^/]+)/([^/]+)/${tail}/(.+)$`);
  add(
    'GET',
    '/repos/{owner}/{repo}/rules/branches/{branch}',
    'repos/rules#get-rules-for-a-branch',
    'token',
    (c) => {
      const r = repoFor(api, c);
      return { status: 200, body: api.protection.rulesJson(r, c.params[2]) };
    },
    branchRe('rules/branches'),
  );

  add(
    'GET',
    '/repos/{owner}/{repo}/branches/{branch}',
    'branches/branches#get-a-branch',
    'token',
    async (c) => {
      const r = repoFor(api, c);
      const sha = await api.world.resolve(r, `refs/heads/${c.params[2]}`);
      if (sha === null) throw new HttpError(404, 'Branch not found');
      return { status: 200, body: await api.protection.branchJson(r, c.params[2], sha) };
    },
    branchRe('branches'),
  );

  add(
    'GET',
    '/repos/{owner}/{repo}/pulls/{pull_number}/reviews',
    'pulls/reviews#list-reviews-for-a-pull-request',
    'token',
    (c) => {
      const r = repoFor(api, c);
      const p = prFor(r, c.params[2]);
      const perPage = Math.min(100, Number(c.query.get('per_page') ?? 30) || 30);
      const page = Math.max(1, Number(c.query.get('page') ?? 1) || 1);
      const list = p.reviews
        .slice((page - 1) * perPage, page * perPage)
        .map((rv) => api.protection.reviewJson(r, p, rv));
      return { status: 200, body: list };
    },
  );
}
