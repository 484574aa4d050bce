// The REST route table of the GitHub emulator: what a route is (method, OpenAPI path template,
// docs link, the auth it needs, its handler), what a handler gets (Ctx) and answers (Answer), the
// parts of the emulator handlers use (Api), and the helpers they share. The endpoints are in
// routes-pulls.ts (repository, pull requests, merge), routes-repo.ts (refs, checks, statuses,
// comments, permissions, App installations), routes-rules.ts (branch rules, reviews) and
// routes-issues.ts (issues, for flaky-test tickets).
import type { IncomingMessage } from 'node:http';
import type { Ci } from './ci.js';
import type { Hooks } from './hooks.js';
import type { Prs } from './pr.js';
import type { Protection } from './protection.js';
import { HttpError } from './rest.js';
import { issueRoutes } from './routes-issues.js';
import { pullRoutes } from './routes-pulls.js';
import { repoRoutes } from './routes-repo.js';
import { rulesRoutes } from './routes-rules.js';
import type { AppState, Pr, Repo, TokenInfo, World } from './world.js';

export interface Api {
  world: World;
  hooks: Hooks;
  ci: Ci;
  protection: Protection;
  prs: Prs;
}
export interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}
export interface Ctx {
  req: IncomingMessage;
  params: string[];
  query: URLSearchParams;
  body: Record<string, unknown>;
  token: TokenInfo | null;
  tokenText: string | null;
  /** The App whose JWT authenticated the request ('jwt' routes). */
  app: AppState | null;
  /** The rate-limit headers of this answer (not counting it when it is GET /rate_limit). */
  rate: Record<string, string>;
}
export interface Route {
  method: string;
  template: string;
  re: RegExp;
  doc: string;
  /** 'jwt': only an App JWT; 'token': a PAT or installation token; 'none': anyone. */
  auth: 'jwt' | 'token' | 'none';
  handler: (c: Ctx) => Promise<Answer> | Answer;
}
export type AddRoute = (
  method: string,
  template: string,
  doc: string,
  auth: Route['auth'],
  handler: Route['handler'],
  re?: RegExp,
) => void;

/** Every route, with docs links of the style's API (GHES 3.19 or api.github.com). */
export function routes(api: Api): Route[] {
  const table: Route[] = [];
  const seg = '([^/]+)';
  const add: AddRoute = (method, template, doc, auth, handler, re) => {
    const pattern = re ?? new RegExp(`^${template.replace(/\{[^{}]+\}/g, seg)}$`);
    table.push({
      method,
      template,
      re: pattern,
      doc: `https://docs.github.com/${api.world.style === 'ghes' ? 'enterprise-server@3.19/' : ''}rest/${doc}`,
      auth,
      handler,
    });
  };
  pullRoutes(api, add);
  repoRoutes(api, add);
  rulesRoutes(api, add);
  issueRoutes(api, add);
  return table;
}

/** The repository of `/repos/{owner}/{repo}/…`, or 404 when unknown or out of the token's sight. */
export function repoFor(api: Api, c: Ctx): Repo {
  const r = api.world.repos.get(`${c.params[0]}/${c.params[1]}`);
  if (!r || !c.token || !api.world.canSee(c.token, r)) throw new HttpError(404, 'Not Found');
  return r;
}

export function prFor(r: Repo, n: string): Pr {
  const p = /^\d+$/.test(n) ? r.prs.get(Number(n)) : undefined;
  if (!p) throw new HttpError(404, 'Not Found');
  return p;
}

/** A sha, a branch name or a full ref, as `commits/{ref}` takes it. */
export async function resolveRef(api: Api, r: Repo, ref: string): Promise<string | null> {
  if (/^[0-9a-f]{40}$/.test(ref)) return api.world.resolve(r, ref);
  return (
    (await api.world.resolve(r, `refs/heads/${ref}`)) ??
    (await api.world.resolve(r, ref.startsWith('refs/') ? ref : `refs/${ref}`))
  );
}

/** 422 Validation Failed with one error, as GitHub words it. */
export function validation(resource: string, field: string, code = 'invalid', message?: string): HttpError {
  return new HttpError(422, 'Validation Failed', {
    errors: [{ resource, field, code, ...(message ? { message } : {}) }],
  });
}
