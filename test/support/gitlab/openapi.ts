// Field-level check of the GitLab emulator's REST answers. Source: GitLab's published OpenAPI v2
// description (gitlabhq/gitlabhq `doc/api/openapi/openapi_v2.yaml`, read at commit
// 0338625c4996c8b4dde44bd86d1767b654121ee7; no npm package ships it) for the project entity
// (`API_Entities_ProjectWithAccess`), and GitLab's REST documentation with @gitbeaker/core's schema
// types for the entities that description does not spell out (merge request, commit status,
// pipeline, note, member, personal access token, protected branch, branch). Only names and JSON types are kept here, in our own form: a change of
// shape in the emulator that a GitLab client would notice fails the emulator's test.

type Kind = 'string' | 'integer' | 'boolean' | 'object' | 'array' | 'null';
/** field → allowed JSON kinds. */
type Shape = Record<string, Kind[]>;

const S: Kind[] = ['string'];
const SN: Kind[] = ['string', 'null'];
const I: Kind[] = ['integer'];
const B: Kind[] = ['boolean'];
const O: Kind[] = ['object'];
const ON: Kind[] = ['object', 'null'];
const A: Kind[] = ['array'];

const USER: Shape = { id: I, username: S, name: S, state: S, avatar_url: SN, web_url: S };

const PROJECT: Shape = {
  id: I,
  description: SN,
  name: S,
  name_with_namespace: S,
  path: S,
  path_with_namespace: S,
  created_at: S,
  default_branch: S,
  tag_list: A,
  topics: A,
  ssh_url_to_repo: S,
  http_url_to_repo: S,
  web_url: S,
  readme_url: SN,
  forks_count: I,
  avatar_url: SN,
  star_count: I,
  last_activity_at: S,
  visibility: S,
  namespace: O,
  empty_repo: B,
  archived: B,
  only_allow_merge_if_pipeline_succeeds: B,
  allow_merge_on_skipped_pipeline: B,
  merge_method: S,
  squash_option: S,
};

/** `API_Entities_ProjectWithAccess`: the project and the caller's `permissions`. */
const PROJECT_WITH_ACCESS: Shape = { ...PROJECT, permissions: O };
const ACCESS_LEVEL: Shape = { access_level: I, notification_level: I };
/** `permissions` of the project: `project_access` and `group_access`, each an access or null. */
const PERMISSIONS: Shape = { project_access: ON, group_access: ON };

/** GitLab's Personal access tokens API (`API_Entities_PersonalAccessToken`). */
const PERSONAL_ACCESS_TOKEN: Shape = {
  id: I,
  name: S,
  revoked: B,
  created_at: S,
  description: SN,
  scopes: A,
  user_id: I,
  last_used_at: SN,
  active: B,
  expires_at: SN,
};

/** GitLab's Protected branches API (`API_Entities_ProtectedBranch`). */
const PROTECTED_BRANCH: Shape = {
  id: I,
  name: S,
  push_access_levels: A,
  merge_access_levels: A,
  unprotect_access_levels: A,
  allow_force_push: B,
  code_owner_approval_required: B,
};
const PROTECTED_ACCESS: Shape = {
  id: I,
  access_level: I,
  access_level_description: S,
  user_id: ['integer', 'null'],
  group_id: ['integer', 'null'],
};

/** GitLab's Branches API (`API_Entities_Branch`). */
const BRANCH: Shape = {
  name: S,
  merged: B,
  protected: B,
  default: B,
  developers_can_push: B,
  developers_can_merge: B,
  can_push: B,
  web_url: S,
  commit: O,
};

const MR_BASIC: Shape = {
  id: I,
  iid: I,
  project_id: I,
  title: S,
  description: SN,
  state: S,
  created_at: S,
  updated_at: S,
  merged_by: ON,
  merge_user: ON,
  merged_at: SN,
  closed_by: ON,
  closed_at: SN,
  target_branch: S,
  source_branch: S,
  user_notes_count: I,
  upvotes: I,
  downvotes: I,
  author: O,
  assignees: A,
  reviewers: A,
  source_project_id: I,
  target_project_id: I,
  labels: A,
  draft: B,
  work_in_progress: B,
  milestone: ON,
  merge_when_pipeline_succeeds: B,
  merge_status: S,
  detailed_merge_status: S,
  sha: S,
  merge_commit_sha: SN,
  squash_commit_sha: SN,
  discussion_locked: ['boolean', 'null'],
  should_remove_source_branch: ['boolean', 'null'],
  force_remove_source_branch: ['boolean', 'null'],
  reference: S,
  references: O,
  web_url: S,
  time_stats: O,
  squash: B,
  task_completion_status: O,
  has_conflicts: B,
  blocking_discussions_resolved: B,
};

const MR: Shape = {
  ...MR_BASIC,
  subscribed: B,
  changes_count: SN,
  pipeline: ON,
  head_pipeline: ON,
  diff_refs: O,
  merge_error: SN,
  user: O,
};

const STATUS: Shape = {
  id: I,
  sha: S,
  ref: SN,
  status: S,
  name: S,
  target_url: SN,
  description: SN,
  created_at: S,
  started_at: SN,
  finished_at: SN,
  allow_failure: B,
  coverage: ['null', 'string'],
  author: O,
};

const PIPELINE: Shape = {
  id: I,
  iid: I,
  project_id: I,
  sha: S,
  ref: S,
  status: S,
  source: S,
  created_at: S,
  updated_at: S,
  web_url: S,
};

const NOTE: Shape = {
  id: I,
  body: S,
  author: O,
  created_at: S,
  updated_at: S,
  system: B,
  noteable_id: I,
  noteable_type: S,
  noteable_iid: I,
  resolvable: B,
};

/** GitLab's Issues API documentation and @gitbeaker/core's IssueSchema. */
const ISSUE: Shape = {
  id: I,
  iid: I,
  project_id: I,
  title: S,
  description: SN,
  state: S,
  created_at: S,
  updated_at: S,
  closed_at: SN,
  closed_by: ON,
  labels: A,
  author: O,
  type: S,
  user_notes_count: I,
  upvotes: I,
  downvotes: I,
  confidential: B,
  web_url: S,
  references: O,
  _links: O,
};

const MEMBER: Shape = { ...USER, access_level: I, created_at: S, expires_at: SN };

/** `METHOD template status` → shape of the answer (an array answer: shape of each item). */
const TABLE: Record<string, { shape: Shape; array?: boolean; nested?: Record<string, Shape> }> = {
  'GET /projects/:id 200': {
    shape: PROJECT_WITH_ACCESS,
    nested: {
      permissions: PERMISSIONS,
      'permissions.project_access': ACCESS_LEVEL,
      'permissions.group_access': ACCESS_LEVEL,
    },
  },
  'GET /personal_access_tokens/self 200': { shape: PERSONAL_ACCESS_TOKEN },
  'GET /projects/:id/protected_branches 200': {
    shape: PROTECTED_BRANCH,
    array: true,
    nested: { 'push_access_levels[]': PROTECTED_ACCESS, 'merge_access_levels[]': PROTECTED_ACCESS },
  },
  'GET /projects/:id/protected_branches/:name 200': {
    shape: PROTECTED_BRANCH,
    nested: { 'push_access_levels[]': PROTECTED_ACCESS, 'merge_access_levels[]': PROTECTED_ACCESS },
  },
  'GET /projects/:id/repository/branches/:branch 200': { shape: BRANCH },
  'GET /projects/:id/merge_requests 200': { shape: MR_BASIC, array: true },
  'GET /projects/:id/merge_requests/:iid 200': { shape: MR },
  'PUT /projects/:id/merge_requests/:iid 200': { shape: MR },
  'GET /projects/:id/merge_requests/:iid/notes 200': { shape: NOTE, array: true },
  'POST /projects/:id/merge_requests/:iid/notes 201': { shape: NOTE },
  'PUT /projects/:id/merge_requests/:iid/notes/:note_id 200': { shape: NOTE },
  'GET /projects/:id/members/all/:user_id 200': { shape: MEMBER },
  'GET /projects/:id/pipelines 200': { shape: PIPELINE, array: true },
  'GET /projects/:id/pipelines/:pipeline_id 200': { shape: PIPELINE },
  'GET /projects/:id/repository/commits/:sha/statuses 200': { shape: STATUS, array: true },
  'POST /projects/:id/statuses/:sha 201': { shape: STATUS },
  'GET /user 200': { shape: USER },
  'POST /projects/:id/issues 201': { shape: ISSUE },
  'GET /projects/:id/issues 200': { shape: ISSUE, array: true },
  'GET /projects/:id/issues/:iid 200': { shape: ISSUE },
  'PUT /projects/:id/issues/:iid 200': { shape: ISSUE },
  'POST /projects/:id/issues/:iid/notes 201': { shape: NOTE },
};

function kindOf(v: unknown): Kind {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : ('number' as Kind);
  return typeof v as Kind;
}

function checkShape(shape: Shape, value: unknown, at: string): string | null {
  if (kindOf(value) !== 'object') return `${at}: expected an object, got ${kindOf(value)}`;
  const obj = value as Record<string, unknown>;
  for (const [field, kinds] of Object.entries(shape)) {
    if (!(field in obj)) return `${at}.${field}: missing`;
    const k = kindOf(obj[field]);
    if (!kinds.includes(k)) return `${at}.${field}: expected ${kinds.join(' or ')}, got ${k}`;
  }
  return null;
}

/**
 * Checks an answer against the table; null when it conforms or the endpoint/status is not in it.
 * Error answers must be `{"message": …}` or `{"error": …}` objects.
 */
export function checkOpenApi(method: string, template: string, status: number, body: unknown): string | null {
  if (status >= 400) {
    const o = body as Record<string, unknown> | null;
    if (!o || (typeof o.message !== 'string' && typeof o.error !== 'string'))
      return 'error body without message or error';
    return null;
  }
  const entry = TABLE[`${method} ${template} ${status}`];
  if (!entry) return null;
  if (entry.array) {
    if (!Array.isArray(body)) return `expected an array, got ${kindOf(body)}`;
    for (let i = 0; i < body.length; i++) {
      const v = checkShape(entry.shape, body[i], `[${i}]`);
      if (v) return v;
    }
    return null;
  }
  return checkShape(entry.shape, body, '$') ?? checkNested(entry.nested ?? {}, body);
}

/**
 * The objects inside an answer: `a.b` is field b of field a, `a[]` each item of array a; a null
 * or absent one is not checked (its parent's shape says whether it may be null).
 */
function checkNested(nested: Record<string, Shape>, body: unknown): string | null {
  for (const [path, shape] of Object.entries(nested)) {
    let values: unknown[] = [body];
    for (const seg of path.split('.')) {
      const each = seg.endsWith('[]');
      const key = each ? seg.slice(0, -2) : seg;
      const next: unknown[] = [];
      for (const v of values) {
        const x = kindOf(v) === 'object' ? (v as Record<string, unknown>)[key] : undefined;
        if (x === null || x === undefined) continue;
        if (each && Array.isArray(x)) next.push(...(x as unknown[]));
        else next.push(x);
      }
      values = next;
    }
    for (const v of values) {
      const violation = checkShape(shape, v, `$.${path}`);
      if (violation) return violation;
    }
  }
  return null;
}
