/**
 * The checks a repository asks for: `railyard.json` at the root of the target branch, parsed and
 * validated, and the error that fails a test run when it is missing or wrong. Below both the
 * runner (which runs the checks) and the forges (which read the file from their repositories), so
 * neither imports the other for it.
 */
import type { FailureReason } from '../contract/index.js';
import { jsonTooDeep, MAX_JSON_DEPTH } from '../contract/json-depth.js';

/** The file a repository names its checks in, at the root of the target branch. */
export const CHECKS_CONFIG_FILE = 'railyard.json';

/**
 * A test run cannot start because of the repository's check configuration.
 * `reason` is the failure reason the queue records for the run's PRs.
 */
export class ChecksConfigError extends Error {
  constructor(
    readonly reason: Extract<
      FailureReason,
      | 'START_TEST_RUN_CONFIG_NOT_FOUND'
      | 'START_TEST_RUN_CONFIG_PARSING_FAILURE'
      | 'START_TEST_RUN_NO_REQUIRED_STATUSES'
      | 'START_TEST_RUN_CONFIG_MISSING_REQUIRED_STATUSES'
    >,
    message: string,
    /** For MISSING_REQUIRED_STATUSES: the required statuses that have no check. */
    readonly missing: readonly string[] = [],
  ) {
    super(message);
    this.name = 'ChecksConfigError';
  }
}

export interface ChecksConfig {
  /** Status name → shell command, in file order. */
  checks: Record<string, string>;
  /** `env`: variables the checks get besides the runner's allowlist (src/runner/isolation.ts). */
  env?: Record<string, string>;
  /** Status name → globs of the test reports the check writes (the object form's `reports`). */
  reports: Record<string, string[]>;
}

const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Set by the runner for every check: a railyard.json cannot change them. */
export const RUNNER_ENV: readonly string[] = [
  'HOME',
  'TMPDIR',
  'CI',
  'RAILYARD_SHA',
  'RAILYARD_CHECK',
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
];

/** Validate the text of a `railyard.json` (exported for tools that read it from disk). */
export function parseChecksConfig(text: string, where = CHECKS_CONFIG_FILE): ChecksConfig {
  const fail = (msg: string): never => {
    throw new ChecksConfigError(
      'START_TEST_RUN_CONFIG_PARSING_FAILURE',
      `${CHECKS_CONFIG_FILE} (${where}): ${msg}`,
    );
  };
  // Pull-request code writes this file: nesting is bounded before parsing, as for request bodies
  // (JSON.parse of a 20 MiB `[[[[…` holds the server's only thread for seconds).
  if (jsonTooDeep(text)) fail(`nested deeper than ${MAX_JSON_DEPTH} levels (arrays and objects)`);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    fail(`invalid JSON: ${(err as Error).message}`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) fail('must be a JSON object');
  const checks = (data as Record<string, unknown>).checks;
  if (checks === undefined) fail('checks: required');
  if (typeof checks !== 'object' || checks === null || Array.isArray(checks))
    fail('checks: must be an object of "<status>": "<shell command>"');
  const out: Record<string, string> = {};
  const reports: Record<string, string[]> = {};
  for (const [name, spec] of Object.entries(checks as Record<string, unknown>)) {
    if (name.trim() === '') fail('checks: status names must not be empty');
    // A check is a command, or { "run": "<command>", "reports": ["<glob of JUnit XML>", …] }.
    const object =
      typeof spec === 'object' && spec !== null && !Array.isArray(spec)
        ? (spec as Record<string, unknown>)
        : null;
    const cmd = object ? object.run : spec;
    if (typeof cmd !== 'string' || cmd.trim() === '')
      fail(
        object
          ? `checks.${name}.run: must be a non-empty shell command string`
          : `checks.${name}: must be a non-empty shell command string or { "run": …, "reports": […] }`,
      );
    out[name] = cmd as string;
    if (object) {
      const unknown = Object.keys(object).filter((k) => k !== 'run' && k !== 'reports');
      if (unknown.length) fail(`checks.${name}.${unknown[0]}: unknown key (a check has "run" and "reports")`);
      const globs = object.reports ?? [];
      if (!Array.isArray(globs) || globs.some((g) => typeof g !== 'string' || g.trim() === ''))
        fail(`checks.${name}.reports: must be a list of paths or globs of JUnit XML reports`);
      const list = globs as string[];
      const outside = list.find((g) => g.startsWith('/') || g.split(/[\\/]/).includes('..'));
      if (outside !== undefined)
        fail(`checks.${name}.reports: "${outside}" is outside the checkout (paths are relative to it)`);
      if (list.length) reports[name] = list;
    }
  }
  if (Object.keys(out).length === 0) {
    throw new ChecksConfigError(
      'START_TEST_RUN_NO_REQUIRED_STATUSES',
      `${CHECKS_CONFIG_FILE} (${where}): checks: no checks defined`,
    );
  }
  const env = (data as Record<string, unknown>).env;
  if (env === undefined) return { checks: out, reports };
  if (typeof env !== 'object' || env === null || Array.isArray(env))
    fail('env: must be an object of "<NAME>": "<value>"');
  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries(env as Record<string, unknown>)) {
    if (!ENV_NAME_RE.test(name)) fail(`env: "${name}" is not a variable name`);
    if (RUNNER_ENV.includes(name)) fail(`env.${name}: set by the runner for every check`);
    if (typeof value !== 'string') fail(`env.${name}: must be a string`);
    vars[name] = value as string;
  }
  return { checks: out, reports, env: vars };
}
