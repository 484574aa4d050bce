// GitHub webhook payloads (push, pull_request, status, issue_comment, check_run, check_suite)
// built from the emulator's state; the `repository` and `installation` parts are added on delivery
// (hooks.ts). Shapes follow @octokit/openapi-webhooks, which the emulator's own test checks them against.
import {
  appJson,
  checkRunJson,
  commentJson,
  commitObjectJson,
  iso,
  nodeId,
  pullJson,
  userJson,
  type CheckRunFacts,
  type CommentFacts,
  type PrFacts,
  type StatusFacts,
} from './json.js';
import { CI_APP, CI_USER, latestPerName } from './ci.js';
import { ZERO, type Pr, type Repo, type SuiteState, type World } from './world.js';

type Payload = Record<string, unknown>;

/** The PR as the JSON builders take it: its state plus what GET answers would compute. */
export function prFacts(
  r: Repo,
  p: Pr,
  baseSha: string,
  mergeable: boolean | null,
  mergeableState: string,
): PrFacts {
  return {
    ...p,
    baseSha,
    mergeable,
    mergeableState,
    comments: [...r.comments.values()].filter((c) => c.number === p.number).length,
    commits: 1,
  };
}

/** `pull_request` (`action`) as the PR is now; the base is read from git first. */
export function pullRequestPayload(
  w: World,
  r: Repo,
  p: Pr,
  action: string,
  actor: string,
  extra: Payload = {},
) {
  // Snapshot now: the PR may change before the git read below finishes.
  const snapshot: Pr = { ...p };
  return (async () => {
    const baseSha = (await w.branchSha(r, snapshot.base)) ?? snapshot.headSha;
    return {
      action,
      number: snapshot.number,
      ...extra,
      pull_request: pullJson(w.urls, r, prFacts(r, snapshot, baseSha, null, 'unknown')),
      sender: userJson(w.urls, actor),
    };
  })();
}

/** `push`: the branch's move with (up to 20 of) the commits it brought; null when nobody listens. */
export async function pushPayload(
  w: World,
  r: Repo,
  branch: string,
  before: string | null,
  after: string | null,
  forced: boolean,
  actor: string,
): Promise<Payload | null> {
  const web = `${w.urls.web}/${r.owner}/${r.name}`;
  const commits: unknown[] = [];
  let head: unknown = null;
  if (after !== null) {
    const list = (await w.git.newCommits(r.dir, branch, before, after)).slice(-20);
    const toJson = async (sha: string) => {
      const c = await w.commitJson(r, sha);
      const { added, removed, modified } = await w.git.changedFiles(r.dir, sha);
      return {
        id: c.sha,
        tree_id: c.tree,
        distinct: true,
        message: c.message,
        timestamp: c.cd,
        url: `${web}/commit/${c.sha}`,
        author: { name: c.an, email: c.ae, date: c.ad },
        committer: { name: c.cn, email: c.ce, date: c.cd },
        added,
        removed,
        modified,
      };
    };
    for (const sha of list) commits.push(await toJson(sha));
    head = await toJson(after);
  }
  return {
    ref: `refs/heads/${branch}`,
    before: before ?? ZERO,
    after: after ?? ZERO,
    created: before === null,
    deleted: after === null,
    forced,
    base_ref: null,
    compare: `${web}/compare/${(before ?? ZERO).slice(0, 12)}...${(after ?? ZERO).slice(0, 12)}`,
    commits,
    head_commit: head,
    pusher: { name: actor, email: `${actor.replace(/[^A-Za-z0-9._-]/g, '')}@users.noreply.github.com` },
    sender: userJson(w.urls, actor),
  };
}

/** `status`: a commit status with its commit and the branches at it. */
export async function statusPayload(w: World, r: Repo, s: StatusFacts): Promise<Payload> {
  const c = await w.commitJson(r, s.sha);
  const api = `${w.urls.api}/repos/${r.owner}/${r.name}`;
  const containing = (
    await w.git.git(r.dir, [
      'for-each-ref',
      '--format=%(refname:lstrip=2)',
      '--points-at',
      s.sha,
      'refs/heads',
    ])
  )
    .split('\n')
    .filter(Boolean);
  return {
    id: s.id,
    sha: s.sha,
    name: `${r.owner}/${r.name}`,
    target_url: s.targetUrl,
    avatar_url: null,
    context: s.context,
    description: s.description,
    state: s.state,
    commit: commitObjectJson(w.urls, r, c),
    branches: containing.map((b) => ({
      name: b,
      commit: { sha: s.sha, url: `${api}/commits/${s.sha}` },
      protected: false,
    })),
    created_at: iso(s.createdAt),
    updated_at: iso(s.createdAt),
    sender: userJson(w.urls, s.creator),
  };
}

/** `issue_comment` created. */
export function commentPayload(w: World, r: Repo, p: Pr, c: CommentFacts): Payload {
  return {
    action: 'created',
    issue: issueJson(w, r, p),
    comment: commentJson(w.urls, r, c),
    sender: userJson(w.urls, c.user),
  };
}

/** `check_run` completed. */
export function checkRunPayload(w: World, r: Repo, suite: SuiteState, run: CheckRunFacts): Payload {
  const base = checkRunJson(w.urls, r, CI_APP, run);
  const runs = latestPerName(r.checkRuns.filter((c) => c.suiteId === suite.id));
  const {
    head_commit: _hc,
    latest_check_runs_count: _l,
    check_runs_url: _u,
    rerequestable: _r,
    runs_rerequestable: _rr,
    ...simple
  } = suiteJson(w, r, suite, runs);
  return {
    action: 'completed',
    check_run: { ...base, check_suite: simple },
    sender: userJson(w.urls, CI_USER, 'Bot'),
  };
}

/** `check_suite` completed, with its head commit read from git. */
export async function checkSuitePayload(
  w: World,
  r: Repo,
  suite: SuiteState,
  runs: CheckRunFacts[],
): Promise<Payload> {
  const json = suiteJson(w, r, suite, runs);
  const c = await w.commitJson(r, suite.sha);
  json.head_commit = {
    id: c.sha,
    tree_id: c.tree,
    message: c.message,
    timestamp: c.cd,
    author: { name: c.an, email: c.ae },
    committer: { name: c.cn, email: c.ce },
  };
  return { action: 'completed', check_suite: json, sender: userJson(w.urls, CI_USER, 'Bot') };
}

function suiteConclusion(runs: CheckRunFacts[]): string | null {
  if (runs.some((c) => c.status !== 'completed')) return null;
  for (const bad of ['failure', 'timed_out', 'cancelled', 'action_required'])
    if (runs.some((c) => c.conclusion === bad)) return bad;
  if (runs.every((c) => c.conclusion === 'skipped')) return 'skipped';
  if (runs.every((c) => c.conclusion === 'neutral' || c.conclusion === 'skipped')) return 'neutral';
  return 'success';
}

function suiteJson(w: World, r: Repo, suite: SuiteState, runs: CheckRunFacts[]) {
  const api = `${w.urls.api}/repos/${r.owner}/${r.name}`;
  const conclusion = suiteConclusion(runs);
  return {
    id: suite.id,
    node_id: nodeId('CheckSuite', suite.id),
    head_branch: suite.branch,
    head_sha: suite.sha,
    status: conclusion === null ? 'in_progress' : 'completed',
    conclusion,
    url: `${api}/check-suites/${suite.id}`,
    before: ZERO,
    after: suite.sha,
    pull_requests: [],
    app: appJson(w.urls, CI_APP),
    created_at: iso(suite.createdAt),
    updated_at: iso(suite.updatedAt),
    latest_check_runs_count: runs.length,
    check_runs_url: `${api}/check-suites/${suite.id}/check-runs`,
    rerequestable: true,
    runs_rerequestable: true,
    head_commit: null as unknown,
  };
}

/** The issue side of a PR (what `issue_comment` carries). */
function issueJson(w: World, r: Repo, p: Pr) {
  const url = `${w.urls.api}/repos/${r.owner}/${r.name}/issues/${p.number}`;
  const html = `${w.urls.web}/${r.owner}/${r.name}/pull/${p.number}`;
  return {
    url,
    repository_url: `${w.urls.api}/repos/${r.owner}/${r.name}`,
    labels_url: `${url}/labels{/name}`,
    comments_url: `${url}/comments`,
    events_url: `${url}/events`,
    html_url: html,
    id: p.id + 1,
    node_id: nodeId('Issue', p.id + 1),
    number: p.number,
    title: p.title,
    user: userJson(w.urls, p.user),
    labels: [],
    state: p.state,
    locked: false,
    assignee: null,
    assignees: [],
    milestone: null,
    comments: [...r.comments.values()].filter((c) => c.number === p.number).length,
    created_at: iso(p.createdAt),
    updated_at: iso(p.updatedAt),
    closed_at: p.closedAt === null ? null : iso(p.closedAt),
    author_association: p.user === r.owner ? 'OWNER' : 'COLLABORATOR',
    active_lock_reason: null,
    draft: p.draft,
    body: p.body,
    reactions: {
      url: `${url}/reactions`,
      total_count: 0,
      '+1': 0,
      '-1': 0,
      laugh: 0,
      hooray: 0,
      confused: 0,
      heart: 0,
      rocket: 0,
      eyes: 0,
    },
    timeline_url: `${url}/timeline`,
    performed_via_github_app: null,
    state_reason: p.state === 'closed' ? 'completed' : null,
    pull_request: {
      url: `${w.urls.api}/repos/${r.owner}/${r.name}/pulls/${p.number}`,
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      merged_at: p.mergedAt === null ? null : iso(p.mergedAt),
    },
  };
}
