// GitLab's REST v4 JSON shapes, built from the emulator's state. Each builder is checked at compile
// time against @gitbeaker/core's schema types (`satisfies`), and the emulator's own test checks the
// fields GitLab's published OpenAPI description names (openapi.ts).
import type {
  CommitStatusSchema,
  ExpandedMergeRequestSchema,
  MergeRequestNoteSchema,
  PersonalAccessTokenSchema,
  PipelineSchema,
  ProjectSchema,
  ProtectedBranchSchema,
  SimpleMemberSchema,
  SimpleProjectSchema,
  SimpleUserSchema,
} from '@gitbeaker/rest';
import {
  emailOf,
  iso,
  type Mr,
  type Note,
  type Pipeline,
  type Project,
  type Status,
  type TokenInfo,
  type User,
  type World,
} from './world.js';

type UserBasic = Pick<SimpleUserSchema, 'id' | 'name' | 'username' | 'state' | 'avatar_url' | 'web_url'> & {
  locked: boolean;
};

export function userBasic(w: World, u: User): UserBasic {
  return {
    id: u.id,
    username: u.username,
    name: u.name,
    state: 'active',
    locked: false,
    avatar_url: `${w.web}/uploads/-/system/user/avatar/${u.id}/avatar.png`,
    web_url: `${w.web}/${u.username}`,
  };
}

export function projectJson(w: World, p: Project) {
  const web = w.webUrl(p);
  const host = new URL(w.web).host;
  const json = {
    id: p.id,
    description: null,
    name: titleOf(p.path),
    name_with_namespace: `${p.namespace.split('/').map(titleOf).join(' / ')} / ${titleOf(p.path)}`,
    path: p.path,
    path_with_namespace: p.pathWithNamespace,
    created_at: iso(p.createdAt),
    default_branch: p.defaultBranch,
    tag_list: [],
    topics: [],
    ssh_url_to_repo: `git@${host.replace(/:\d+$/, '')}:${p.pathWithNamespace}.git`,
    http_url_to_repo: w.cloneUrl(p),
    web_url: web,
    readme_url: `${web}/-/blob/${p.defaultBranch}/README.md`,
    forks_count: [...w.projects.values()].filter((x) => x.forkedFromId === p.id).length,
    avatar_url: null,
    star_count: 0,
    last_activity_at: iso(p.lastActivityAt),
    namespace: {
      id: 10 + p.namespace.length,
      name: titleOf(p.namespace.split('/').pop()!),
      path: p.namespace.split('/').pop()!,
      kind: 'group',
      full_path: p.namespace,
      parent_id: null,
      avatar_url: null,
      web_url: `${w.web}/groups/${p.namespace}`,
    },
    visibility: 'private' as const,
    empty_repo: p.refs.size === 0,
    archived: false,
    only_allow_merge_if_pipeline_succeeds: p.onlyAllowMergeIfPipelineSucceeds,
    allow_merge_on_skipped_pipeline: p.allowMergeOnSkippedPipeline,
    merge_method: 'merge',
    squash_option: 'default_off',
    ...(p.forkedFromId !== null
      ? {
          forked_from_project: {
            id: p.forkedFromId,
            path_with_namespace: w.projects.get(p.forkedFromId)!.pathWithNamespace,
          },
        }
      : {}),
  };
  return json satisfies SimpleProjectSchema;
}

export interface MrAnswerFacts {
  mergeStatus: string;
  detailed: string;
  targetSha: string;
  baseSha: string;
  headPipeline: Pipeline | null;
}

export function mrJson(w: World, p: Project, mr: Mr, f: MrAnswerFacts, expanded: boolean) {
  const author = userBasic(w, w.mustUser(mr.authorId));
  const ref = `!${mr.iid}`;
  const basic = {
    id: mr.id,
    iid: mr.iid,
    project_id: p.id,
    title: mr.title,
    description: mr.description,
    state: mr.state,
    created_at: iso(mr.createdAt),
    updated_at: iso(mr.updatedAt),
    merged_by: mr.mergedById === null ? null : userBasic(w, w.mustUser(mr.mergedById)),
    merge_user: mr.mergedById === null ? null : userBasic(w, w.mustUser(mr.mergedById)),
    merged_at: mr.mergedAt === null ? null : iso(mr.mergedAt),
    merge_after: null,
    prepared_at: iso(mr.createdAt),
    closed_by: mr.closedById === null ? null : userBasic(w, w.mustUser(mr.closedById)),
    closed_at: mr.closedAt === null ? null : iso(mr.closedAt),
    target_branch: mr.targetBranch,
    source_branch: mr.sourceBranch,
    user_notes_count: [...w.notes.values()].filter((n) => n.projectId === p.id && n.iid === mr.iid).length,
    upvotes: 0,
    downvotes: 0,
    author,
    assignees: [],
    assignee: null,
    reviewers: [],
    source_project_id: mr.sourceProjectId,
    target_project_id: mr.projectId,
    labels: [],
    draft: mr.draft,
    imported: false,
    imported_from: 'none',
    work_in_progress: mr.draft,
    milestone: null,
    merge_when_pipeline_succeeds: false,
    merge_status: f.mergeStatus as ExpandedMergeRequestSchema['merge_status'],
    // `conflict` and `need_rebase` are GitLab values @gitbeaker's union does not list.
    detailed_merge_status: f.detailed as ExpandedMergeRequestSchema['detailed_merge_status'],
    sha: mr.sha,
    merge_commit_sha: null,
    squash_commit_sha: null,
    discussion_locked: null,
    should_remove_source_branch: null,
    force_remove_source_branch: false,
    allow_collaboration: false,
    allow_maintainer_to_push: false,
    reference: ref,
    references: { short: ref, relative: ref, full: `${p.pathWithNamespace}${ref}` },
    web_url: `${w.webUrl(p)}/-/merge_requests/${mr.iid}`,
    time_stats: {
      time_estimate: 0,
      total_time_spent: 0,
      human_time_estimate: null,
      human_total_time_spent: null,
    },
    squash: false,
    squash_on_merge: false,
    task_completion_status: { count: 0, completed_count: 0 },
    has_conflicts: mr.conflict && mr.checkedKey !== null,
    blocking_discussions_resolved: mr.blocker !== 'discussions_not_resolved',
    approvals_before_merge: null,
  };
  if (!expanded) return basic;
  const pl = f.headPipeline;
  return {
    ...basic,
    subscribed: false,
    changes_count: '1',
    latest_build_started_at: pl?.startedAt ? iso(pl.startedAt) : null,
    latest_build_finished_at: pl?.finishedAt ? iso(pl.finishedAt) : null,
    first_deployed_to_production_at: null,
    pipeline: pl ? pipelineJson(w, pl) : null,
    head_pipeline: pl ? { ...pipelineJson(w, pl), ...pipelineDetails(w, pl) } : null,
    diff_refs: { base_sha: f.baseSha, head_sha: mr.sha, start_sha: f.targetSha },
    merge_error: null,
    first_contribution: false,
    user: { can_merge: true },
  } satisfies ExpandedMergeRequestSchema;
}

export function pipelineJson(w: World, pl: Pipeline) {
  const p = w.projects.get(pl.projectId)!;
  return {
    id: pl.id,
    iid: pl.iid,
    project_id: pl.projectId,
    sha: pl.sha,
    ref: pl.ref,
    status: pl.status,
    source: pl.source,
    created_at: iso(pl.createdAt),
    updated_at: iso(pl.updatedAt),
    web_url: `${w.webUrl(p)}/-/pipelines/${pl.id}`,
  } satisfies PipelineSchema;
}

export function pipelineDetails(w: World, pl: Pipeline) {
  const started = pl.startedAt ?? pl.createdAt;
  return {
    before_sha: pl.beforeSha,
    tag: false,
    yaml_errors: null,
    user: userBasic(w, w.mustUser(pl.userId)),
    started_at: iso(started),
    finished_at: pl.finishedAt === null ? (null as unknown as string) : iso(pl.finishedAt),
    duration:
      pl.finishedAt === null ? (null as unknown as number) : Math.round((pl.finishedAt - started) / 1000),
    queued_duration: null,
    coverage: null,
    detailed_status: {
      icon: `status_${pl.status}`,
      text: pl.status,
      label: pl.status,
      group: pl.status,
      tooltip: pl.status,
      has_details: true,
      details_path: `/${w.projects.get(pl.projectId)!.pathWithNamespace}/-/pipelines/${pl.id}`,
      illustration: null,
      favicon: `/assets/ci_favicons/favicon_status_${pl.status}.png`,
    },
  };
}

export function statusJson(w: World, s: Status) {
  return {
    id: s.id,
    sha: s.sha,
    ref: s.ref,
    status: s.status as CommitStatusSchema['status'],
    name: s.name,
    target_url: s.targetUrl as string,
    // GitLab sends null for these; @gitbeaker types them as optional strings.
    description: s.description as string,
    created_at: iso(s.createdAt),
    started_at: (s.startedAt === null ? null : iso(s.startedAt)) as string,
    finished_at: (s.finishedAt === null ? null : iso(s.finishedAt)) as string,
    allow_failure: s.allowFailure,
    coverage: null,
    pipeline_id: s.pipelineId,
    author: userBasic(w, w.mustUser(s.userId)),
  } satisfies CommitStatusSchema;
}

/** A job (`GET …/pipelines/:id/jobs`); the user is the basic user GitLab sends, not @gitbeaker's expanded one. */
export async function jobJson(w: World, s: Status) {
  const p = w.projects.get(s.projectId)!;
  const pl = w.pipelines.find((x) => x.id === s.pipelineId)!;
  const c = await w.commitJson(p, s.sha);
  const started = s.startedAt;
  return {
    id: s.id,
    status: s.status,
    stage: s.stage,
    name: s.name,
    ref: s.ref,
    tag: false,
    coverage: null,
    allow_failure: s.allowFailure,
    created_at: iso(s.createdAt),
    started_at: started === null ? null : iso(started),
    finished_at: s.finishedAt === null ? null : iso(s.finishedAt),
    erased_at: null,
    duration: started !== null && s.finishedAt !== null ? (s.finishedAt - started) / 1000 : null,
    queued_duration: 0.1,
    user: userBasic(w, w.mustUser(s.userId)),
    commit: {
      id: c.id,
      short_id: c.id.slice(0, 8),
      created_at: c.cd,
      parent_ids: [],
      title: c.title,
      message: c.message,
      author_name: c.an,
      author_email: c.ae,
      authored_date: c.ad,
      committer_name: c.an,
      committer_email: c.ae,
      committed_date: c.cd,
      web_url: `${w.webUrl(p)}/-/commit/${c.id}`,
    },
    pipeline: pipelineJson(w, pl),
    web_url: `${w.webUrl(p)}/-/jobs/${s.id}`,
    project: { ci_job_token_scope_enabled: false },
    artifacts: [],
    runner: null,
    artifacts_expire_at: null,
    archived: false,
    tag_list: [],
    failure_reason: s.status === 'failed' ? 'script_failure' : undefined,
  };
}

export function noteJson(w: World, n: Note) {
  const mr = w.projects.get(n.projectId)!.mrs.get(n.iid)!;
  return {
    id: n.id,
    type: null,
    body: n.body,
    attachment: null,
    author: userBasic(w, w.mustUser(n.authorId)),
    created_at: iso(n.createdAt),
    updated_at: iso(n.updatedAt),
    system: n.system,
    noteable_id: mr.id,
    noteable_type: 'MergeRequest' as const,
    project_id: n.projectId,
    noteable_iid: n.iid,
    resolvable: false,
    confidential: false,
    internal: false,
    imported: false,
    imported_from: 'none',
    commands_changes: {},
  } satisfies MergeRequestNoteSchema;
}

export function memberJson(w: World, u: User, level: number) {
  return {
    ...userBasic(w, u),
    access_level: level as SimpleMemberSchema['access_level'],
    created_at: iso(u.createdAt),
    created_by: null,
    expires_at: null as unknown as string,
    email: emailOf(u.username),
    membership_state: 'active',
  } satisfies SimpleMemberSchema;
}

/**
 * `permissions` of `GET /projects/:id` for the token's user: a membership of the project is
 * `project_access`, the level a token has where it is no member is answered as inherited from the
 * project's group (`group_access`); null where there is neither.
 */
export function permissionsJson(w: World, p: Project, userId: number) {
  const member = p.members.get(userId);
  const level = w.accessLevel(p, userId);
  const access = (l: number) => ({ access_level: l, notification_level: 3 });
  // @gitbeaker types both as objects; GitLab sends null for the one that does not apply.
  const permissions: Record<keyof ProjectSchema['permissions'], ReturnType<typeof access> | null> = {
    project_access: member !== undefined ? access(member) : null,
    group_access: member === undefined && level > 0 ? access(level) : null,
  };
  return permissions;
}

/** `GET /personal_access_tokens/self`: the token itself (never its secret). */
export function tokenJson(t: TokenInfo) {
  return {
    id: t.id,
    name: 'railyard',
    revoked: false,
    created_at: iso(t.createdAt),
    description: null,
    scopes: t.scopes,
    user_id: t.userId,
    last_used_at: iso(Date.now()),
    active: true,
    expires_at: t.expiresAt as string,
  } satisfies Omit<PersonalAccessTokenSchema, 'token'>;
}

const LEVEL_NAMES: Record<number, string> = {
  0: 'No one',
  30: 'Developers + Maintainers',
  40: 'Maintainers',
  60: 'Admins',
};

export function protectedBranchJson(b: Project['protectedBranches'][number]) {
  const level = (id: number, access: number) => ({
    id,
    access_level: access as 0 | 30 | 40 | 60,
    access_level_description: LEVEL_NAMES[access] ?? 'Maintainers',
    deploy_key_id: null,
    user_id: null,
    group_id: null,
  });
  return {
    id: b.id,
    name: b.name,
    push_access_levels: [level(b.id * 10 + 1, b.pushAccessLevel)],
    merge_access_levels: [level(b.id * 10 + 2, b.mergeAccessLevel)],
    unprotect_access_levels: [],
    allow_force_push: b.allowForcePush,
    code_owner_approval_required: false,
  } satisfies ProtectedBranchSchema;
}

function titleOf(s: string): string {
  return s.replace(/[-_.]+/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase());
}
