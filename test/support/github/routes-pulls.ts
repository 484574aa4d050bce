// REST routes of the emulator, part 1: rate limit, the repository and pull requests (get, open,
// edit, merge).
import type { EmulatorHttp } from './http.js';
import { repoJson } from './json.js';
import { commitEnv, HttpError, ZERO, type AddRoute } from './types.js';

const validation = (resource: string, field: string, code = 'invalid', message?: string) =>
  new HttpError(422, 'Validation Failed', {
    errors: [{ resource, field, code, ...(message ? { message } : {}) }],
  });

export function pullRoutes(e: EmulatorHttp, add: AddRoute): void {
  add(
    'GET',
    '/rate_limit',
    'rate-limit/rate-limit#get-rate-limit-status-for-the-authenticated-user',
    'none',
    (c) => {
      const h = e.rateHeaders(c.tokenText ?? `ip:${c.req.socket.remoteAddress}`, false);
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
    const r = e.repoFor(c);
    return { status: 200, body: repoJson(e.urls, r) };
  });

  add(
    'GET',
    '/repos/{owner}/{repo}/pulls/{pull_number}',
    'pulls/pulls#get-a-pull-request',
    'token',
    async (c) => {
      const r = e.repoFor(c);
      return { status: 200, body: await e.prAnswer(r, e.prFor(r, c.params[2]), true) };
    },
  );

  add('POST', '/repos/{owner}/{repo}/pulls', 'pulls/pulls#create-a-pull-request', 'token', async (c) => {
    const r = e.repoFor(c);
    const { title, head, base, body, draft } = c.body;
    if (typeof head !== 'string' || head === '') throw validation('PullRequest', 'head', 'missing_field');
    if (typeof base !== 'string' || base === '') throw validation('PullRequest', 'base', 'missing_field');
    if (typeof title !== 'string' || title === '') throw validation('PullRequest', 'title', 'missing_field');
    const headBranch = head.includes(':') ? head.slice(head.indexOf(':') + 1) : head;
    return e.locked(r, async () => {
      const headSha = await e.resolve(r, `refs/heads/${headBranch}`);
      if (headSha === null) throw validation('PullRequest', 'head', 'invalid');
      const baseSha = await e.resolve(r, `refs/heads/${base}`);
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
      if (await e.isAncestor(r, headSha, baseSha))
        throw new HttpError(422, 'Validation Failed', {
          errors: [
            {
              resource: 'PullRequest',
              code: 'custom',
              message: `No commits between ${base} and ${headBranch}`,
            },
          ],
        });
      const p = await e.openPr(r, {
        head: headBranch,
        base,
        title,
        body: typeof body === 'string' ? body : null,
        user: c.token!.login,
        draft: draft === true,
      });
      return {
        status: 201,
        body: await e.prAnswer(r, p, false),
        headers: { location: `${e.urls.api}/repos/${r.owner}/${r.name}/pulls/${p.number}` },
      };
    });
  });

  add(
    'PATCH',
    '/repos/{owner}/{repo}/pulls/{pull_number}',
    'pulls/pulls#update-a-pull-request',
    'token',
    async (c) => {
      const r = e.repoFor(c);
      const p = e.prFor(r, c.params[2]);
      const { title, body, state, base } = c.body;
      const actor = c.token!.login;
      if (state !== undefined && state !== 'open' && state !== 'closed')
        throw validation('PullRequest', 'state', 'invalid');
      if (title !== undefined && typeof title !== 'string')
        throw validation('PullRequest', 'title', 'invalid');
      if (
        base !== undefined &&
        (typeof base !== 'string' || (await e.resolve(r, `refs/heads/${base}`)) === null)
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
        const oldSha = (await e.resolve(r, `refs/heads/${p.base}`)) ?? ZERO;
        changes.base = { ref: { from: p.base }, sha: { from: oldSha } };
        p.base = base;
      }
      p.updatedAt = Date.now();
      if (Object.keys(changes).length > 0) e.prEvent(r, p, 'edited', actor, { changes });
      if (state === 'closed' && p.state === 'open') e.setClosed(r, p, actor);
      else if (state === 'open' && p.state === 'closed' && !p.merged) {
        p.state = 'open';
        p.closedAt = null;
        r.openIssues++;
        e.prEvent(r, p, 'reopened', actor);
      }
      return { status: 200, body: await e.prAnswer(r, p, false) };
    },
  );

  add(
    'PUT',
    '/repos/{owner}/{repo}/pulls/{pull_number}/merge',
    'pulls/pulls#merge-a-pull-request',
    'token',
    async (c) => {
      const r = e.repoFor(c);
      const p = e.prFor(r, c.params[2]);
      const { sha, merge_method: method = 'merge', commit_title, commit_message } = c.body;
      if (method !== 'merge' && method !== 'squash' && method !== 'rebase')
        throw validation('PullRequest', 'merge_method', 'invalid');
      const answer = await e.locked(r, async () => {
        if (p.state !== 'open') throw new HttpError(405, 'Pull Request is not mergeable');
        if (p.draft) throw new HttpError(405, 'Pull Request is still a draft');
        if (sha !== undefined && sha !== p.headSha)
          throw new HttpError(409, 'Head branch was modified. Review and try the merge again.');
        const rules = r.rules.get(p.base);
        const waits = e.blockedBy(r, p);
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
        const baseSha = (await e.resolve(r, `refs/heads/${p.base}`))!;
        const title =
          typeof commit_title === 'string'
            ? commit_title
            : method === 'merge'
              ? `Merge pull request #${p.number} from ${r.owner}/${p.head}`
              : `${p.title} (#${p.number})`;
        const message = `${title}\n\n${typeof commit_message === 'string' ? commit_message : p.title}`;
        let newSha: string;
        const env = commitEnv(c.token!.login);
        if (method === 'rebase') {
          newSha = await e.rebase(r, baseSha, p.headSha, c.token!.login);
        } else {
          const mt = await e.git.run(['--git-dir', r.dir, 'merge-tree', '--write-tree', baseSha, p.headSha], {
            okCodes: [1],
          });
          if (mt.code === 1) throw new HttpError(405, 'Pull Request is not mergeable');
          const tree = mt.stdout.split('\n')[0];
          const parents = method === 'merge' ? ['-p', baseSha, '-p', p.headSha] : ['-p', baseSha];
          newSha = await e.git.git(r.dir, ['commit-tree', tree, ...parents, '-m', message], { env });
        }
        await e.git.git(r.dir, ['update-ref', `refs/heads/${p.base}`, newSha, baseSha]);
        p.merged = true;
        p.mergedAt = Date.now();
        p.mergedBy = c.token!.login;
        p.mergeCommitSha = newSha;
        p.shown.push({ at: p.mergedAt, kind: 'merged' });
        e.setClosed(r, p, c.token!.login);
        await e.syncRefs(r, c.token!.login);
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
