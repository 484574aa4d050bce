// GitHub's JSON shapes (REST answers and webhook payloads), built from the emulator's state.
// Field names and required fields follow @octokit/openapi; the emulator's own test validates them.
import type { CommitInfo } from '../emulator-git/index.js';

export interface Urls {
  /** REST base, e.g. http://127.0.0.1:PORT/api/v3 */
  api: string;
  /** Web base, e.g. http://127.0.0.1:PORT */
  web: string;
}

export function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A stable numeric id per login (users are not declared up front). */
export function userId(login: string): number {
  let h = 0;
  for (const c of login) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return 1000 + (h % 1_000_000);
}

export function nodeId(kind: string, id: number): string {
  return Buffer.from(`${kind}:${id}`).toString('base64url');
}

export function userJson(u: Urls, login: string, type: 'User' | 'Organization' | 'Bot' = 'User') {
  const id = userId(login);
  const url = `${u.api}/users/${encodeURIComponent(login)}`;
  return {
    login,
    id,
    node_id: nodeId('User', id),
    avatar_url: `${u.web}/avatars/u/${id}`,
    gravatar_id: '',
    url,
    html_url: `${u.web}/${encodeURIComponent(login)}`,
    followers_url: `${url}/followers`,
    following_url: `${url}/following{/other_user}`,
    gists_url: `${url}/gists{/gist_id}`,
    starred_url: `${url}/starred{/owner}{/repo}`,
    subscriptions_url: `${url}/subscriptions`,
    organizations_url: `${url}/orgs`,
    repos_url: `${url}/repos`,
    events_url: `${url}/events{/privacy}`,
    received_events_url: `${url}/received_events`,
    type,
    site_admin: false,
  };
}

export interface RepoFacts {
  id: number;
  owner: string;
  name: string;
  defaultBranch: string;
  createdAt: number;
  pushedAt: number;
  openIssues: number;
}

export function repoJson(u: Urls, r: RepoFacts) {
  const full = `${r.owner}/${r.name}`;
  const url = `${u.api}/repos/${full}`;
  const host = new URL(u.web).host;
  return {
    id: r.id,
    node_id: nodeId('Repository', r.id),
    name: r.name,
    full_name: full,
    private: true,
    owner: userJson(u, r.owner),
    html_url: `${u.web}/${full}`,
    description: null,
    fork: false,
    url,
    archive_url: `${url}/{archive_format}{/ref}`,
    assignees_url: `${url}/assignees{/user}`,
    blobs_url: `${url}/git/blobs{/sha}`,
    branches_url: `${url}/branches{/branch}`,
    collaborators_url: `${url}/collaborators{/collaborator}`,
    comments_url: `${url}/comments{/number}`,
    commits_url: `${url}/commits{/sha}`,
    compare_url: `${url}/compare/{base}...{head}`,
    contents_url: `${url}/contents/{+path}`,
    contributors_url: `${url}/contributors`,
    deployments_url: `${url}/deployments`,
    downloads_url: `${url}/downloads`,
    events_url: `${url}/events`,
    forks_url: `${url}/forks`,
    git_commits_url: `${url}/git/commits{/sha}`,
    git_refs_url: `${url}/git/refs{/sha}`,
    git_tags_url: `${url}/git/tags{/sha}`,
    git_url: `git://${host}/${full}.git`,
    issue_comment_url: `${url}/issues/comments{/number}`,
    issue_events_url: `${url}/issues/events{/number}`,
    issues_url: `${url}/issues{/number}`,
    keys_url: `${url}/keys{/key_id}`,
    labels_url: `${url}/labels{/name}`,
    languages_url: `${url}/languages`,
    merges_url: `${url}/merges`,
    milestones_url: `${url}/milestones{/number}`,
    notifications_url: `${url}/notifications{?since,all,participating}`,
    pulls_url: `${url}/pulls{/number}`,
    releases_url: `${url}/releases{/id}`,
    ssh_url: `git@${host.replace(/:\d+$/, '')}:${full}.git`,
    stargazers_url: `${url}/stargazers`,
    statuses_url: `${url}/statuses/{sha}`,
    subscribers_url: `${url}/subscribers`,
    subscription_url: `${url}/subscription`,
    tags_url: `${url}/tags`,
    teams_url: `${url}/teams`,
    trees_url: `${url}/git/trees{/sha}`,
    clone_url: `${u.web}/${full}.git`,
    mirror_url: null,
    hooks_url: `${url}/hooks`,
    svn_url: `${u.web}/${full}`,
    homepage: null,
    language: null,
    forks_count: 0,
    stargazers_count: 0,
    watchers_count: 0,
    size: 1,
    default_branch: r.defaultBranch,
    open_issues_count: r.openIssues,
    is_template: false,
    topics: [],
    has_issues: true,
    has_projects: true,
    has_wiki: true,
    has_pages: false,
    has_downloads: true,
    has_discussions: false,
    archived: false,
    disabled: false,
    visibility: 'private',
    pushed_at: iso(r.pushedAt),
    created_at: iso(r.createdAt),
    updated_at: iso(r.pushedAt),
    permissions: { admin: true, maintain: true, push: true, triage: true, pull: true },
    allow_rebase_merge: true,
    allow_squash_merge: true,
    allow_merge_commit: true,
    allow_auto_merge: false,
    delete_branch_on_merge: false,
    allow_forking: false,
    web_commit_signoff_required: false,
    license: null,
    forks: 0,
    open_issues: r.openIssues,
    watchers: 0,
    network_count: 0,
    subscribers_count: 0,
  };
}

export interface PrFacts {
  id: number;
  number: number;
  title: string;
  body: string | null;
  user: string;
  head: string;
  headSha: string;
  base: string;
  baseSha: string;
  state: 'open' | 'closed';
  draft: boolean;
  merged: boolean;
  mergedAt: number | null;
  mergedBy: string | null;
  closedAt: number | null;
  createdAt: number;
  updatedAt: number;
  mergeCommitSha: string | null;
  mergeable: boolean | null;
  mergeableState: string;
  comments: number;
  commits: number;
}

export function pullJson(u: Urls, repo: RepoFacts, p: PrFacts) {
  const r = repoJson(u, repo);
  const url = `${r.url}/pulls/${p.number}`;
  const issueUrl = `${r.url}/issues/${p.number}`;
  const html = `${r.html_url}/pull/${p.number}`;
  const statuses = `${r.url}/statuses/${p.headSha}`;
  return {
    url,
    id: p.id,
    node_id: nodeId('PullRequest', p.id),
    html_url: html,
    diff_url: `${html}.diff`,
    patch_url: `${html}.patch`,
    issue_url: issueUrl,
    commits_url: `${url}/commits`,
    review_comments_url: `${url}/comments`,
    review_comment_url: `${r.url}/pulls/comments{/number}`,
    comments_url: `${issueUrl}/comments`,
    statuses_url: statuses,
    number: p.number,
    state: p.state,
    locked: false,
    title: p.title,
    user: userJson(u, p.user),
    body: p.body,
    labels: [],
    milestone: null,
    active_lock_reason: null,
    created_at: iso(p.createdAt),
    updated_at: iso(p.updatedAt),
    closed_at: p.closedAt === null ? null : iso(p.closedAt),
    merged_at: p.mergedAt === null ? null : iso(p.mergedAt),
    merge_commit_sha: p.mergeCommitSha,
    assignee: null,
    assignees: [],
    requested_reviewers: [],
    requested_teams: [],
    head: {
      label: `${repo.owner}:${p.head}`,
      ref: p.head,
      sha: p.headSha,
      user: userJson(u, repo.owner),
      repo: r,
    },
    base: {
      label: `${repo.owner}:${p.base}`,
      ref: p.base,
      sha: p.baseSha,
      user: userJson(u, repo.owner),
      repo: r,
    },
    _links: {
      self: { href: url },
      html: { href: html },
      issue: { href: issueUrl },
      comments: { href: `${issueUrl}/comments` },
      review_comments: { href: `${url}/comments` },
      review_comment: { href: `${r.url}/pulls/comments{/number}` },
      commits: { href: `${url}/commits` },
      statuses: { href: statuses },
    },
    author_association: p.user === repo.owner ? 'OWNER' : 'COLLABORATOR',
    auto_merge: null,
    draft: p.draft,
    merged: p.merged,
    mergeable: p.mergeable,
    rebaseable: p.mergeable,
    mergeable_state: p.mergeableState,
    merged_by: p.mergedBy === null ? null : userJson(u, p.mergedBy),
    comments: p.comments,
    review_comments: 0,
    maintainer_can_modify: false,
    commits: p.commits,
    additions: 0,
    deletions: 0,
    changed_files: 0,
  };
}

export interface AppFacts {
  id: number;
  slug: string;
  owner: string;
  createdAt: number;
}

export const APP_PERMISSIONS = {
  checks: 'write',
  contents: 'write',
  issues: 'write',
  metadata: 'read',
  pull_requests: 'write',
  statuses: 'write',
} as const;
export const APP_EVENTS = ['check_run', 'check_suite', 'issue_comment', 'pull_request', 'push', 'status'];

export function appJson(u: Urls, a: AppFacts) {
  return {
    id: a.id,
    slug: a.slug,
    node_id: nodeId('Integration', a.id),
    client_id: `Iv1.${a.id.toString(16).padStart(16, '0')}`,
    owner: userJson(u, a.owner, 'Organization'),
    name: a.slug,
    description: null,
    external_url: `${u.web}/apps/${a.slug}`,
    html_url: `${u.web}/apps/${a.slug}`,
    created_at: iso(a.createdAt),
    updated_at: iso(a.createdAt),
    permissions: { ...APP_PERMISSIONS },
    events: [...APP_EVENTS],
  };
}

export interface CheckRunFacts {
  id: number;
  name: string;
  headSha: string;
  status: 'queued' | 'in_progress' | 'completed';
  conclusion: string | null;
  startedAt: number;
  completedAt: number | null;
  suiteId: number;
}

export function checkRunJson(u: Urls, repo: RepoFacts, app: AppFacts, c: CheckRunFacts) {
  const r = `${u.api}/repos/${repo.owner}/${repo.name}`;
  const html = `${u.web}/${repo.owner}/${repo.name}/runs/${c.id}`;
  return {
    id: c.id,
    head_sha: c.headSha,
    node_id: nodeId('CheckRun', c.id),
    external_id: String(c.id),
    url: `${r}/check-runs/${c.id}`,
    html_url: html,
    details_url: html,
    status: c.status,
    conclusion: c.conclusion,
    started_at: iso(c.startedAt),
    completed_at: c.completedAt === null ? null : iso(c.completedAt),
    output: {
      title: c.conclusion === null ? null : `${c.name}: ${c.conclusion}`,
      summary: c.conclusion === null ? null : `The check ${c.name} ended: ${c.conclusion}.`,
      text: null,
      annotations_count: 0,
      annotations_url: `${r}/check-runs/${c.id}/annotations`,
    },
    name: c.name,
    check_suite: { id: c.suiteId },
    app: appJson(u, app),
    pull_requests: [] as unknown[],
  };
}

export interface StatusFacts {
  id: number;
  sha: string;
  state: 'error' | 'failure' | 'pending' | 'success';
  context: string;
  description: string | null;
  targetUrl: string | null;
  creator: string;
  createdAt: number;
}

export function statusJson(u: Urls, repo: RepoFacts, s: StatusFacts) {
  return {
    url: `${u.api}/repos/${repo.owner}/${repo.name}/statuses/${s.sha}`,
    avatar_url: `${u.web}/avatars/u/${userId(s.creator)}`,
    id: s.id,
    node_id: nodeId('StatusContext', s.id),
    state: s.state,
    description: s.description,
    target_url: s.targetUrl,
    context: s.context,
    created_at: iso(s.createdAt),
    updated_at: iso(s.createdAt),
    creator: userJson(u, s.creator),
  };
}

export interface CommentFacts {
  id: number;
  number: number;
  user: string;
  body: string;
  createdAt: number;
  updatedAt: number;
}

export function commentJson(u: Urls, repo: RepoFacts, c: CommentFacts) {
  const r = `${u.api}/repos/${repo.owner}/${repo.name}`;
  return {
    id: c.id,
    node_id: nodeId('IssueComment', c.id),
    url: `${r}/issues/comments/${c.id}`,
    html_url: `${u.web}/${repo.owner}/${repo.name}/pull/${c.number}#issuecomment-${c.id}`,
    body: c.body,
    user: userJson(u, c.user),
    created_at: iso(c.createdAt),
    updated_at: iso(c.updatedAt),
    issue_url: `${r}/issues/${c.number}`,
    author_association: c.user === repo.owner ? 'OWNER' : 'COLLABORATOR',
    performed_via_github_app: null,
    reactions: {
      url: `${r}/issues/comments/${c.id}/reactions`,
      total_count: 0,
      '+1': 0,
      '-1': 0,
      laugh: 0,
      confused: 0,
      heart: 0,
      hooray: 0,
      eyes: 0,
      rocket: 0,
    },
  };
}

/** A commit as git shows it (what World.commitJson reads). */
export type RawCommit = CommitInfo;

/** The "commit" shape (GET branches/{branch}, the status webhook). */
export function commitObjectJson(u: Urls, repo: RepoFacts, c: RawCommit) {
  const api = `${u.api}/repos/${repo.owner}/${repo.name}`;
  const web = `${u.web}/${repo.owner}/${repo.name}`;
  return {
    sha: c.sha,
    node_id: nodeId('Commit', Number.parseInt(c.sha.slice(0, 8), 16)),
    commit: {
      author: { name: c.an, email: c.ae, date: c.ad },
      committer: { name: c.cn, email: c.ce, date: c.cd },
      message: c.message,
      tree: { sha: c.tree, url: `${api}/git/trees/${c.tree}` },
      url: `${api}/git/commits/${c.sha}`,
      comment_count: 0,
      verification: {
        verified: false,
        reason: 'unsigned',
        signature: null,
        payload: null,
        verified_at: null,
      },
    },
    url: `${api}/commits/${c.sha}`,
    html_url: `${web}/commit/${c.sha}`,
    comments_url: `${api}/commits/${c.sha}/comments`,
    author: null,
    committer: null,
    parents: c.parents.map((p) => ({ sha: p, url: `${api}/commits/${p}`, html_url: `${web}/commit/${p}` })),
  };
}

/** The numeric id userJson gives a login. */
export function userJsonId(login: string): number {
  return userJson({ api: '', web: 'http://x' }, login).id;
}

/** A collaborator's `permissions` object for a permission level. */
export function permsOf(p: 'admin' | 'write' | 'read' | 'none') {
  return {
    admin: p === 'admin',
    maintain: p === 'admin',
    push: p === 'admin' || p === 'write',
    triage: p !== 'none',
    pull: p !== 'none',
  };
}

/** The "minimal-repository" shape some answers embed. */
export function minimalRepo(full: ReturnType<typeof repoJson>) {
  const { network_count: _n, subscribers_count: _s, ...rest } = full;
  return rest;
}
