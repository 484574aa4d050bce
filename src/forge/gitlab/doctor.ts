/**
 * The GitLab forge's doctor role: whether the server's token (a personal, project or group access
 * token) may do what the queue needs in a project — push test branches and land on the target
 * branch (a git push: Developer at least, and allowed by the branch's protection), set the
 * `railyard/merge-queue` status and post its note (Developer, `api` scope) — and whether it stops
 * working soon (its expiry date). It reads, never writes: the token's role from `GET /projects/:id`
 * (`permissions`), its scopes and expiry from `GET /personal_access_tokens/self`, the target's push
 * rule from `GET /projects/:id/repository/branches/:branch` (`can_push`) and, to name who may push,
 * `GET /projects/:id/protected_branches/:name` (Maintainers may read it), and whether a protection
 * rule covers the test branches (`GET /projects/:id/protected_branches`). A read GitLab refuses is
 * named as not checked, never taken for health. Everything is read once per doctor call.
 */
import type { Repo } from '../../contract/index.js';
import type { ForgeDoctor, ForgePermissionNotice } from '../types.js';
import { messageOf, statusOf, type GitLabClient } from './client.js';
import { projectPath } from './repo.js';

/** A token that expires within this many days is named. */
export const TOKEN_EXPIRY_WARN_DAYS = 14;

const DAY = 24 * 60 * 60_000;

/** A test branch's name as the queue makes them (`railyard-merge/pr-<n>/<run>`), for the rules' patterns. */
const TEST_BRANCH_PROBE = 'railyard-merge/pr-1/run';

/** GitLab's protected-branch wildcard: `*` stands for any characters, `/` included. */
function wildcardMatch(pattern: string, name: string): boolean {
  const re = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${re}$`).test(name);
}

const DEVELOPER = 30;

/** GitLab's names of its roles (`Gitlab::Access`; 60 is an administrator in a protected branch's levels). */
const ROLES: Record<number, string> = {
  0: 'No one',
  10: 'Guest',
  20: 'Reporter',
  30: 'Developer',
  40: 'Maintainer',
  50: 'Owner',
  60: 'Administrator',
};
const roleName = (level: number) => ROLES[level] ?? `access level ${level}`;

/** Where a role is given, said once for every notice that asks for one. */
const GRANT =
  "in the project's Manage → Members (for a project or group access token, its bot user; or create a new token with that role)";
const GIVE = 'give it to the server (--gitlab-token-file, then restart the server)';
const NEW_TOKEN = `create a token with the api scope (User settings → Access tokens, or the project's or group's Settings → Access tokens) and ${GIVE}`;

interface ProjectAnswer {
  permissions?: {
    project_access?: { access_level?: number } | null;
    group_access?: { access_level?: number } | null;
  } | null;
}
interface TokenAnswer {
  scopes?: string[];
  expires_at?: string | null;
}
interface BranchAnswer {
  protected?: boolean;
  can_push?: boolean;
  developers_can_push?: boolean;
  developers_can_merge?: boolean;
}
interface ProtectedAnswer {
  push_access_levels?: Array<{ access_level?: number; access_level_description?: string }>;
  merge_access_levels?: Array<{ access_level_description?: string }>;
}

/** A read's answer, or GitLab's refusal (401, 403, 404); anything else fails the doctor call. */
type Read<T> = { ok: true; value: T } | { ok: false; status: number; message: string };

async function read<T>(request: () => Promise<unknown>): Promise<Read<T>> {
  try {
    return { ok: true, value: (await request()) as T };
  } catch (error) {
    const status = statusOf(error);
    if (status !== 401 && status !== 403 && status !== 404) throw error;
    return { ok: false, status, message: messageOf(error) };
  }
}

/** `GitLab answered 404 Project Not Found`: GitLab's status and its words. */
const refusal = (r: { status: number; message: string }) =>
  `GitLab answered ${r.message.startsWith(String(r.status)) ? r.message : `${r.status} ${r.message}`.trim()}`;

export class GitLabDoctor implements ForgeDoctor {
  constructor(
    private readonly client: GitLabClient,
    private readonly now: () => number = Date.now,
  ) {}

  async permissions(repo: Repo, targetBranch: string): Promise<ForgePermissionNotice[]> {
    const where = projectPath(repo);
    const [project, token] = await Promise.all([
      read<ProjectAnswer>(() => this.client.api.Projects.show(where)),
      read<TokenAnswer>(() => this.client.api.PersonalAccessTokens.show()),
    ]);
    // A token whose scopes do not reach the API (git scopes only) is refused both reads alike.
    if (!project.ok && project.status === 403 && /insufficient_scope/.test(project.message))
      return [
        {
          permission: 'scope',
          text: `The GitLab token's scopes do not let it use GitLab's API (GET /projects/:id: ${refusal(project)}), so nothing else could be checked: the queue can neither read merge requests, set statuses nor land; ${NEW_TOKEN}.`,
        },
      ];
    // A revoked, expired or wrong token is refused everything.
    if (!project.ok && project.status === 401)
      return [
        {
          permission: 'token',
          text: `GitLab refuses the server's token (GET /projects/:id: ${refusal(project)}), so nothing else could be checked: it is revoked, expired or not a token of this GitLab, and the queue can do nothing; ${NEW_TOKEN}.`,
        },
      ];
    return [...(await this.projectNotices(where, targetBranch, project)), ...this.tokenNotices(token)];
  }

  /** What the token's role in the project, and the target branch's protection, keep it from doing. */
  private async projectNotices(
    where: string,
    branch: string,
    project: Read<ProjectAnswer>,
  ): Promise<ForgePermissionNotice[]> {
    if (!project.ok)
      return [
        {
          permission: 'read',
          text: `The GitLab token cannot see ${where} (${refusal(project)}): the queue can neither read its merge requests nor land; give the token's user the Developer role at least ${GRANT}.`,
        },
      ];
    const levels = [
      project.value.permissions?.project_access?.access_level,
      project.value.permissions?.group_access?.access_level,
    ].filter((l): l is number => typeof l === 'number');
    if (!levels.length)
      return [
        {
          permission: 'push',
          text: `GitLab names no role in ${where} for the token's user (it sees the project as public or internal, or is an administrator): unless it is an administrator it can neither push test branches, land nor set commit statuses; give it the Developer role at least ${GRANT}.`,
        },
      ];
    const role = Math.max(...levels);
    if (role < DEVELOPER)
      return [
        {
          permission: 'push',
          text: `The GitLab token cannot push to ${where} (its user has the ${roleName(role)} role): the queue can neither push test branches nor land; give it the Developer role at least ${GRANT}.`,
        },
        {
          permission: 'statuses',
          text: `The GitLab token cannot set commit statuses in ${where} (that needs the Developer role; its user has ${roleName(role)}): merge requests never show the queue's railyard/merge-queue status; give it the Developer role at least ${GRANT}.`,
        },
      ];
    return [
      ...(await this.branchNotices(where, branch, role)),
      ...(await this.testBranchNotices(where, role)),
    ];
  }

  /**
   * Whether a protection rule covers the test branches (`railyard-merge/…`, a wildcard such as
   * `railyard-*` or `*`): the queue pushes one per test run and deletes it when the run ends, and
   * GitLab refuses both on a protected branch the token's role may not push to, and every deletion
   * of a protected branch by git push. Only Maintainers may read the rules: a Developer's refused
   * read says nothing (test branches are unprotected unless someone protected them).
   */
  private async testBranchNotices(where: string, role: number): Promise<ForgePermissionNotice[]> {
    const rules = await read<Array<ProtectedAnswer & { name?: string }>>(() =>
      this.client.api.ProtectedBranches.all(where, { perPage: 100, maxPages: 5 }),
    );
    if (!rules.ok)
      return role < 40
        ? []
        : [
            {
              permission: 'rules',
              text: `Could not check whether a protection rule covers the queue's test branches (railyard-merge/…) in ${where} (${refusal(rules)}): if one does, test runs cannot start or their branches stay; make sure no protected branch pattern matches railyard-merge/.`,
            },
          ];
    const covering = rules.value.filter(
      (r) => typeof r.name === 'string' && wildcardMatch(r.name, TEST_BRANCH_PROBE),
    );
    if (!covering.length) return [];
    const names = covering.map((r) => `\`${r.name}\``).join(', ');
    const mayPush = covering.every((r) =>
      (r.push_access_levels ?? []).some(
        (l) => typeof l.access_level === 'number' && l.access_level > 0 && l.access_level <= role,
      ),
    );
    return [
      mayPush
        ? {
            permission: 'rules',
            text: `The protected branch rule ${names} in ${where} covers the queue's test branches (railyard-merge/…): GitLab refuses to delete a protected branch by git push, so the branch of every ended test run stays; unprotect them (Settings → Repository → Protected branches: a pattern that does not match railyard-merge/).`,
          }
        : {
            permission: 'push',
            text: `The protected branch rule ${names} in ${where} covers the queue's test branches (railyard-merge/…), and the token's user (the ${roleName(role)} role) may not push to it: no test run can start; unprotect them (Settings → Repository → Protected branches: a pattern that does not match railyard-merge/).`,
          },
    ];
  }

  /** Whether the token may push to the target branch: the queue lands by pushing the tested commit. */
  private async branchNotices(where: string, branch: string, role: number): Promise<ForgePermissionNotice[]> {
    const b = await read<BranchAnswer>(() => this.client.api.Branches.show(where, branch));
    if (!b.ok)
      return [
        {
          permission: 'rules',
          text:
            b.status === 404
              ? `Could not check whether the GitLab token may push to ${branch} in ${where} (${refusal(b)}): the target branch must exist for the queue to land on it; create it, or point the queue at an existing branch.`
              : `Could not check whether the GitLab token may push to ${branch} in ${where} (${refusal(b)}): landings may be refused; give the token's user the Developer role at least ${GRANT}.`,
        },
      ];
    if (b.value.can_push !== false) return [];
    if (!b.value.protected)
      return [
        {
          permission: 'push',
          text: `The GitLab token may not push to ${branch} in ${where}, though the branch is not protected (GitLab's branch API says can_push: false; an archived project takes no pushes): the queue lands by pushing the tested commit, so every landing is refused; unarchive the project, or give the token's user the Developer role at least ${GRANT}.`,
        },
      ];
    const fix = `allow ${roleName(role)}s to push and merge to ${branch} (Settings → Repository → Protected branches, "Allowed to push and merge"), or give the token's user a role that may ${GRANT}`;
    // Only Maintainers may read a protection; a Developer's token is told what the branch API says.
    const rule =
      role >= 40
        ? await read<ProtectedAnswer>(() => this.client.api.ProtectedBranches.show(where, branch))
        : null;
    const names = (list?: Array<{ access_level_description?: string }>) =>
      list
        ?.map((l) => l.access_level_description)
        .filter(Boolean)
        .join(', ') || 'No one';
    const rules =
      rule?.ok === true
        ? `"Allowed to push and merge": ${names(rule.value.push_access_levels)}; "Allowed to merge": ${names(rule.value.merge_access_levels)}`
        : `${b.value.developers_can_push ? 'Developers may push' : 'Developers may not push'} and ${b.value.developers_can_merge ? 'may merge' : 'may not merge'} to it`;
    return [
      {
        permission: 'push',
        text: `The GitLab token may not push to ${branch} in ${where}, a protected branch (${rules}; its user has the ${roleName(role)} role): the queue lands by pushing the tested commit, so every landing is refused; ${fix}.`,
      },
    ];
  }

  /** The token's scopes (`api` to write) and expiry, when GitLab tells them. */
  private tokenNotices(token: Read<TokenAnswer>): ForgePermissionNotice[] {
    if (!token.ok)
      return [
        {
          permission: 'token',
          text: `Could not check the GitLab token's scopes and expiry date (GET /personal_access_tokens/self: ${refusal(token)}; GitLab answers it to personal, project and group access tokens with the api or read_api scope, and old versions not at all): make sure the token has the api scope and an expiry date well ahead, on the page where it was created.`,
        },
      ];
    const out: ForgePermissionNotice[] = [];
    const scopes = token.value.scopes ?? [];
    if (!scopes.includes('api')) {
      const git = scopes.includes('write_repository')
        ? ''
        : scopes.includes('read_repository')
          ? ', nor push test branches or land (that needs write_repository)'
          : ', nor fetch or push test branches or land (git needs read_repository and write_repository)';
      out.push({
        permission: 'scope',
        text: `The GitLab token lacks the api scope (its scopes: ${scopes.join(', ') || 'none'}): the queue can read merge requests but cannot set the railyard/merge-queue status or post its note${git}; ${NEW_TOKEN}.`,
      });
    }
    const expires = token.value.expires_at;
    const at = expires ? Date.parse(`${expires}T00:00:00Z`) : NaN;
    if (Number.isFinite(at) && at - this.now() <= TOKEN_EXPIRY_WARN_DAYS * DAY) {
      const days = Math.max(0, Math.ceil((at - this.now()) / DAY));
      out.push({
        permission: 'expiry',
        text: `The GitLab token expires on ${expires} (${days === 0 ? 'today' : `in ${days} day${days === 1 ? '' : 's'}`}): from then on GitLab refuses it and the queue stops testing and landing; rotate it (Access tokens → Rotate gives a new token with a new date) and ${GIVE}.`,
      });
    }
    return out;
  }
}
