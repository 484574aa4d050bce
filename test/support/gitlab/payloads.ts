// GitLab webhook payloads (Push, Merge Request, Pipeline, Job and Note hooks) built from the
// emulator's state, each checked at compile time against @gitbeaker/core's Webhook*Schema types.
import type {
  WebhookJobEventSchema,
  WebhookMergeRequestEventSchema,
  WebhookMergeRequestNoteEventSchema,
  WebhookPipelineEventSchema,
  WebhookProjectSchema,
  WebhookPushEventSchema,
} from '@gitbeaker/rest';
import { userBasic } from './json.js';
import {
  emailOf,
  iso,
  ZERO,
  type Mr,
  type Note,
  type Pipeline,
  type Project,
  type Status,
  type User,
  type World,
} from './world.js';

export function hookProject(w: World, p: Project) {
  const host = new URL(w.web).host.replace(/:\d+$/, '');
  return {
    id: p.id,
    name: p.path,
    description: '',
    web_url: w.webUrl(p),
    avatar_url: null,
    git_ssh_url: `git@${host}:${p.pathWithNamespace}.git`,
    git_http_url: w.cloneUrl(p),
    namespace: p.namespace.split('/').pop()!,
    visibility_level: 0,
    path_with_namespace: p.pathWithNamespace,
    default_branch: p.defaultBranch,
    homepage: w.webUrl(p),
    url: w.cloneUrl(p),
    ssh_url: `git@${host}:${p.pathWithNamespace}.git`,
    http_url: w.cloneUrl(p),
  } satisfies WebhookProjectSchema;
}

function hookRepository(w: World, p: Project) {
  const proj = hookProject(w, p);
  return {
    name: p.path,
    url: proj.url,
    description: '',
    homepage: proj.homepage,
    git_http_url: proj.git_http_url,
    git_ssh_url: proj.git_ssh_url,
    visibility_level: 0,
  };
}

function hookUser(w: World, u: User) {
  const b = userBasic(w, u);
  return { ...b, email: '[REDACTED]' };
}

async function commitBrief(w: World, p: Project, sha: string) {
  const c = await w.commitJson(p, sha);
  return {
    id: c.id,
    message: c.message,
    title: c.title,
    timestamp: c.cd,
    url: `${w.webUrl(p)}/-/commit/${c.id}`,
    author: { name: c.an, email: c.ae },
  };
}

export async function pushPayload(
  w: World,
  p: Project,
  branch: string,
  before: string | null,
  after: string | null,
  actor: User,
) {
  const commits = [];
  let total = 0;
  if (after !== null) {
    const list = await w.git.newCommits(p.dir, branch, before, after);
    total = list.length;
    for (const sha of list.slice(-20)) {
      const { added, modified, removed } = await w.git.changedFiles(p.dir, sha);
      commits.push({ ...(await commitBrief(w, p, sha)), added, modified, removed });
    }
  }
  return {
    object_kind: 'push' as const,
    event_name: 'push' as const,
    before: before ?? ZERO,
    after: after ?? ZERO,
    ref: `refs/heads/${branch}`,
    ref_protected: p.protectedBranches.some((b) => globMatch(b.name, branch)),
    checkout_sha: after ?? (null as unknown as string),
    user_id: actor.id,
    user_name: actor.name,
    user_username: actor.username,
    user_email: emailOf(actor.username),
    user_avatar: userBasic(w, actor).avatar_url,
    project_id: p.id,
    project: hookProject(w, p),
    commits,
    total_commits_count: total,
    repository: hookRepository(w, p),
  } satisfies WebhookPushEventSchema;
}

export async function mrPayload(
  w: World,
  p: Project,
  mr: Mr,
  action: string,
  actor: User,
  detailed: string,
  extra: { oldrev?: string; changes?: Record<string, { previous: unknown; current: unknown }> } = {},
) {
  const source = w.projects.get(mr.sourceProjectId)!;
  const attrs = {
    id: mr.id,
    iid: mr.iid,
    target_branch: mr.targetBranch,
    source_branch: mr.sourceBranch,
    source_project_id: mr.sourceProjectId,
    author_id: mr.authorId,
    assignee_ids: [],
    reviewer_ids: [],
    title: mr.title,
    created_at: iso(mr.createdAt),
    updated_at: iso(mr.updatedAt),
    last_edited_at: null as unknown as string,
    last_edited_by_id: null as unknown as number,
    milestone_id: null,
    state_id: { opened: 1, closed: 2, merged: 3, locked: 4 }[mr.state],
    state: mr.state,
    blocking_discussions_resolved: mr.blocker !== 'discussions_not_resolved',
    work_in_progress: mr.draft,
    draft: mr.draft,
    first_contribution: false,
    merge_commit_sha: null as unknown as string,
    merge_status: mr.mergeStatus,
    target_project_id: mr.projectId,
    description: mr.description,
    total_time_spent: 0,
    time_change: 0,
    human_total_time_spent: null as unknown as string,
    human_time_change: null as unknown as string,
    human_time_estimate: null as unknown as string,
    url: `${w.webUrl(p)}/-/merge_requests/${mr.iid}`,
    source: hookProject(w, source),
    target: hookProject(w, p),
    last_commit: await commitBrief(w, source, mr.sha),
    labels: [],
    action,
    detailed_merge_status: detailed,
    ...(extra.oldrev ? { oldrev: extra.oldrev } : {}),
  };
  const payload = {
    object_kind: 'merge_request' as const,
    event_type: 'merge_request' as const,
    user: hookUser(w, actor),
    project: hookProject(w, p),
    repository: hookRepository(w, p),
    object_attributes: attrs,
    labels: [],
    changes: (extra.changes ?? {}) as WebhookMergeRequestEventSchema['changes'],
    assignees: [],
    reviewers: [],
  };
  return payload satisfies Omit<WebhookMergeRequestEventSchema, 'event_name'>;
}

export async function notePayload(
  w: World,
  p: Project,
  mr: Mr,
  n: Note,
  action: 'create' | 'update',
  detailed: string,
) {
  const source = w.projects.get(mr.sourceProjectId)!;
  const payload = {
    object_kind: 'note' as const,
    event_type: 'note' as const,
    user: hookUser(w, w.mustUser(n.authorId)),
    project_id: p.id,
    project: hookProject(w, p),
    repository: { name: p.path, url: w.cloneUrl(p), description: '', homepage: w.webUrl(p) },
    object_attributes: {
      id: n.id,
      note: n.body,
      noteable_type: 'MergeRequest',
      discussion_id: `d${n.id.toString(16).padStart(39, '0')}`,
      author_id: n.authorId,
      created_at: iso(n.createdAt),
      updated_at: iso(n.updatedAt),
      project_id: p.id,
      attachment: null,
      line_code: null as unknown as string,
      commit_id: '',
      noteable_id: String(mr.id),
      system: n.system,
      st_diff: null,
      url: `${w.webUrl(p)}/-/merge_requests/${mr.iid}#note_${n.id}`,
      action,
    },
    merge_request: {
      id: mr.id,
      target_branch: mr.targetBranch,
      source_branch: mr.sourceBranch,
      source_project_id: mr.sourceProjectId,
      author_id: mr.authorId,
      assignee_id: null as unknown as number,
      title: mr.title,
      created_at: iso(mr.createdAt),
      updated_at: iso(mr.updatedAt),
      milestone_id: null as unknown as number,
      state: mr.state,
      merge_status: mr.mergeStatus,
      target_project_id: mr.projectId,
      iid: mr.iid,
      description: mr.description,
      position: 0,
      labels: [],
      source: hookProject(w, source),
      target: hookProject(w, p),
      last_commit: await commitBrief(w, source, mr.sha),
      work_in_progress: mr.draft,
      draft: mr.draft,
      assignee: null,
      detailed_merge_status: detailed,
    },
  };
  return payload satisfies Omit<WebhookMergeRequestNoteEventSchema, 'event_name'>;
}

export async function pipelinePayload(w: World, p: Project, pl: Pipeline, jobs: Status[], mr: Mr | null) {
  const started = pl.startedAt;
  const payload = {
    object_kind: 'pipeline' as const,
    object_attributes: {
      id: pl.id,
      iid: pl.iid,
      name: null as unknown as string,
      ref: pl.ref,
      tag: false,
      sha: pl.sha,
      before_sha: pl.beforeSha,
      source: pl.source,
      status: pl.status,
      detailed_status: pl.status,
      stages: [...new Set(jobs.filter((j) => j.kind === 'build').map((j) => j.stage))],
      created_at: iso(pl.createdAt),
      finished_at: pl.finishedAt === null ? (null as unknown as string) : iso(pl.finishedAt),
      duration:
        started !== null && pl.finishedAt !== null
          ? Math.round((pl.finishedAt - started) / 1000)
          : (null as unknown as number),
      queued_duration: null,
      variables: [],
      url: `${w.webUrl(p)}/-/pipelines/${pl.id}`,
    },
    merge_request: mr
      ? {
          id: mr.id,
          iid: mr.iid,
          title: mr.title,
          source_branch: mr.sourceBranch,
          source_project_id: mr.sourceProjectId,
          target_branch: mr.targetBranch,
          target_project_id: mr.projectId,
          state: mr.state,
          merge_status: mr.mergeStatus,
          detailed_merge_status: 'checking',
          url: `${w.webUrl(p)}/-/merge_requests/${mr.iid}`,
        }
      : null,
    user: hookUser(w, w.mustUser(pl.userId)),
    project: hookProject(w, p),
    commit: await commitBrief(w, p, pl.sha),
    source_pipeline: null as unknown as WebhookPipelineEventSchema['source_pipeline'],
    builds: jobs
      .filter((j) => j.kind === 'build')
      .map((j) => ({
        id: j.id,
        stage: j.stage,
        name: j.name,
        status: j.status,
        created_at: iso(j.createdAt),
        started_at: j.startedAt === null ? null : iso(j.startedAt),
        finished_at: j.finishedAt === null ? null : iso(j.finishedAt),
        duration: j.startedAt !== null && j.finishedAt !== null ? (j.finishedAt - j.startedAt) / 1000 : null,
        queued_duration: 0.1,
        failure_reason: j.status === 'failed' ? 'script_failure' : null,
        when: 'on_success',
        manual: false,
        allow_failure: j.allowFailure,
        user: hookUser(w, w.mustUser(j.userId)),
        runner: null,
        artifacts_file: { filename: null, size: null },
        environment: null,
      })),
  };
  return payload satisfies WebhookPipelineEventSchema;
}

export async function jobPayload(w: World, p: Project, j: Status, pl: Pipeline) {
  const c = await w.commitJson(p, j.sha);
  const payload = {
    object_kind: 'build' as const,
    ref: j.ref,
    tag: false,
    before_sha: pl.beforeSha,
    sha: j.sha,
    build_id: j.id,
    build_name: j.name,
    build_stage: j.stage,
    build_status: j.status,
    build_created_at: iso(j.createdAt),
    build_started_at: j.startedAt === null ? null : iso(j.startedAt),
    build_finished_at: j.finishedAt === null ? null : iso(j.finishedAt),
    build_duration:
      j.startedAt !== null && j.finishedAt !== null ? (j.finishedAt - j.startedAt) / 1000 : null,
    build_queued_duration: 0.1,
    build_allow_failure: j.allowFailure,
    build_failure_reason: j.status === 'failed' ? 'script_failure' : 'unknown_failure',
    retries_count: 0,
    pipeline_id: pl.id,
    project_id: p.id,
    project_name: `${p.namespace.split('/').join(' / ')} / ${p.path}`,
    user: hookUser(w, w.mustUser(j.userId)),
    commit: {
      id: pl.id,
      name: null as unknown as string,
      sha: c.id,
      message: c.message,
      author_name: c.an,
      author_email: c.ae,
      status: pl.status,
      duration: null,
      started_at: pl.startedAt === null ? null : iso(pl.startedAt),
      finished_at: pl.finishedAt === null ? null : iso(pl.finishedAt),
    },
    repository: hookRepository(w, p),
    project: hookProject(w, p),
    runner: null as unknown as WebhookJobEventSchema['runner'],
    environment: null,
    source_pipeline: null as unknown as WebhookJobEventSchema['source_pipeline'],
  };
  return payload satisfies WebhookJobEventSchema;
}

/** GitLab's wildcard branch names: `*` matches any run of characters, including `/`. */
export function globMatch(pattern: string, name: string): boolean {
  if (!pattern.includes('*')) return pattern === name;
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return re.test(name);
}
