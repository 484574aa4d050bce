/** Schemas and bounds every part of the contract shares: the request body limit, repositories, branches, empty answers. */
import { z } from 'zod';
import { MAX_BRANCH_NAME_BYTES } from './branch-name.js';

/** Largest value of a u32, the upper bound the v1 OpenAPI document uses for integers. */
export const U32_MAX = 4_294_967_295;

/** 20 MiB: the request body limit of the v1 API. */
export const BODY_LIMIT_BYTES = 20 * 1024 * 1024;

/**
 * An enum that accepts any letter case on input (`DRAINING` = `draining`) and always
 * yields the canonical spelling given in `values`.
 */
export function looseEnum<const T extends readonly [string, ...string[]]>(values: T) {
  const byLower = new Map(values.map((v) => [v.toLowerCase(), v]));
  return z.preprocess(
    (input) => (typeof input === 'string' ? (byLower.get(input.toLowerCase()) ?? input) : input),
    z.enum(values),
  );
}

/** An integer that may also arrive as a string of digits (the official uploader sends strings). */
export function looseInt(min: number, max: number) {
  return z.preprocess(
    (input) => (typeof input === 'string' && /^\s*\d+\s*$/.test(input) ? Number(input) : input),
    // The bounds before int(): zod's int() carries its own (the safe-integer range), and the first
    // issue is the one answered, so `1e300` is told this field's bound, not 2^53 - 1.
    z.number().min(min).max(max).int(),
  );
}

export const NonEmptyString = z.string().trim().min(1);

/**
 * Bounds of a repository's names (docs/decisions.md): a DNS host name; GitHub's own limits
 * for an account and a repository name. A GitLab owner is a namespace path (`group/subgroup`) of up
 * to 255 characters: the schema takes the widest bound any forge allows, and the server holds each
 * owner to the bound of the forge serving its host (`Forge.ownerMaxLength`, REPO_OWNER_MAX unless
 * the forge widens it), so one 400 names the bound that applies.
 */
export const REPO_HOST_MAX = 253;
export const REPO_OWNER_MAX = 39;
export const REPO_NAMESPACE_MAX = 255;
export const REPO_NAME_MAX = 100;

export const Repo = z.object({
  host: NonEmptyString.max(REPO_HOST_MAX),
  owner: NonEmptyString.max(REPO_NAMESPACE_MAX).meta({
    description: `At most ${REPO_OWNER_MAX} characters (a GitHub account), or ${REPO_NAMESPACE_MAX} on a host served by a forge with longer owners (a GitLab namespace path).`,
  }),
  name: NonEmptyString.max(REPO_NAME_MAX),
});
export type Repo = z.infer<typeof Repo>;

/**
 * The key of a repository: `host/owner/name`, lower case (repositories are case-insensitive on
 * every forge we know). The one place it is computed.
 */
export function repoKey(repo: Repo): string {
  return `${repo.host.trim()}/${repo.owner.trim()}/${repo.name.trim()}`.toLowerCase();
}

export {
  parseRepoRef,
  repoHostProblem,
  repoNameProblem,
  repoOwnerRuleProblem,
  repoProblem,
} from './repo-ref.js';

/** `repo.owner: must be at most 39 characters` when `owner` is longer than `max` (the forge's bound), else null. */
export function ownerTooLong(owner: string, max = REPO_OWNER_MAX, field = 'repo.owner'): string | null {
  return owner.length > max ? `${field}: must be at most ${max} characters` : null;
}

/** `owner/name` as the GET operations take a repository (`repo=acme/web`), bounded like Repo. */
export const OwnerSlashName = z
  .string()
  .max(REPO_NAMESPACE_MAX + 1 + REPO_NAME_MAX)
  // The owner may be a GitLab namespace path (`group/subgroup/project`): the name is the last segment.
  .regex(/^[^/\s]+(?:\/[^/\s]+)+$/, 'must be owner/name');

/** `owner/name` (the owner may have several segments) → its owner and name. */
export function splitOwnerName(text: string): { owner: string; name: string } {
  const at = text.lastIndexOf('/');
  return { owner: text.slice(0, at), name: text.slice(at + 1) };
}

/** A short identifier (check and status names, labels, ticket ids, run ids, cursors): at most 1,024 characters. */
export const SHORT_STRING_MAX = 1024;
export const ShortString = NonEmptyString.max(SHORT_STRING_MAX);

/**
 * A branch name as reported (a PR's branch, an upload's branch): at most 255 UTF-8 bytes, like a
 * queue's target branch, but not held to git's rules (CI systems report names like `pull/12/merge`).
 */
export const BranchNameInput = NonEmptyString.refine(
  // The length first: a UTF-16 unit is at least one byte, so a long name is never encoded.
  (name) =>
    name.length <= MAX_BRANCH_NAME_BYTES && new TextEncoder().encode(name).length <= MAX_BRANCH_NAME_BYTES,
  { message: `must be at most ${MAX_BRANCH_NAME_BYTES} bytes` },
);

/** ISO 8601 timestamp as accepted on input (any offset); normalised by the server. */
export const DateTimeInput = z.string().refine((s) => !Number.isNaN(Date.parse(s)), {
  message: 'must be an ISO 8601 date-time',
});

/** Every timestamp we emit: ISO 8601 UTC with milliseconds. */
export const DateTimeOutput = z.string();

export const EmptyResponse = z.object({});
export type EmptyResponse = z.infer<typeof EmptyResponse>;

/**
 * Turns a zod error into the one-line, field-naming message the API answers with,
 * e.g. `targetBranch: required` or `concurrency: must be at least 1`.
 */
export function describeZodError(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid request';
  const path = issue.path.length ? issue.path.map(String).join('.') : 'body';
  return `${path}: ${describeIssue(issue)}`;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'required';
      if (issue.input === null) return `must be ${article(issue.expected)}, not null`;
      return `must be ${article(issue.expected)}, got ${typeName(issue.input)}`;
    case 'too_small':
      if (issue.origin === 'string')
        return Number(issue.minimum) <= 1
          ? 'must not be empty'
          : `must be at least ${issue.minimum} characters`;
      if (issue.origin === 'array') return `must have at least ${issue.minimum} items`;
      return `must be at least ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters`;
      if (issue.origin === 'array') return `must have at most ${issue.maximum} items`;
      return `must be at most ${issue.maximum}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => String(v)).join(', ')}`;
    case 'invalid_union':
      return issue.message && !issue.message.startsWith('Invalid input')
        ? issue.message
        : 'has an invalid value';
    case 'invalid_format':
      return `must be a valid ${issue.format}`;
    default:
      return issue.message;
  }
}

function article(expected: string): string {
  if (expected === 'int') return 'an integer';
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

function typeName(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' && !Number.isInteger(value)) return 'a fraction';
  return article(typeof value);
}

/** Formats a Date or epoch milliseconds as ISO 8601 UTC with milliseconds. */
export function isoTime(value: Date | number): string {
  return (typeof value === 'number' ? new Date(value) : value).toISOString();
}

/** `url` without its trailing slashes; a loop, since `/\/+$/` is quadratic on a long run of slashes. */
export function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end--;
  return url.slice(0, end);
}
