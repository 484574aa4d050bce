import { z } from 'zod';

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

export const Repo = z.object({
  host: NonEmptyString,
  owner: NonEmptyString,
  name: NonEmptyString,
});
export type Repo = z.infer<typeof Repo>;

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
      if (issue.origin === 'string') return Number(issue.minimum) <= 1 ? 'must not be empty' : `must be at least ${issue.minimum} characters`;
      if (issue.origin === 'array') return `must have at least ${issue.minimum} items`;
      return `must be at least ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters`;
      if (issue.origin === 'array') return `must have at most ${issue.maximum} items`;
      return `must be at most ${issue.maximum}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => String(v)).join(', ')}`;
    case 'invalid_union':
      return issue.message && !issue.message.startsWith('Invalid input') ? issue.message : 'has an invalid value';
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
