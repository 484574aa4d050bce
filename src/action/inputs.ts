/** The Action's inputs and event, read and checked: what to do (submit, cancel, restart, upload…) for which PR and queue. */
import { DEFAULT_API_URL, PULL_REQUEST_STATES, RAILYARD_TOKEN_PREFIX } from '../contract/constants.js';
import type { Repo } from '../contract/index.js';
import { parseRepoRef, withoutTrailingSlashes } from '../contract/common.js';

export const OPERATIONS = [
  'submit',
  'status',
  'wait',
  'cancel',
  'restart',
  'impacted-targets',
  'upload-tests',
] as const;
export type Operation = (typeof OPERATIONS)[number];

/** What the Action needs from the workflow run: its inputs and its event. */
export interface RunEnvironment {
  input(name: string): string;
  /** GITHUB_REPOSITORY (owner/name). */
  repository?: string;
  /** GITHUB_SERVER_URL (https://github.com or a GitHub Enterprise host). */
  serverUrl?: string;
  eventName?: string;
  payload: Record<string, unknown>;
}

/** What every operation needs: where the API is, who calls it, which repository. */
interface Connection {
  token: string;
  apiUrl: string;
  /** Which API the calls speak (`api-version`): v1, or Trunk's v2 at the same address with /v2. */
  apiVersion: 'v1' | 'v2';
  repo: Repo;
}

/** An operation on one pull request of a merge queue. */
export interface PullRequestSettings extends Connection {
  prNumber: number;
  targetBranch: string;
  /** The states that fail the step. */
  failOn: string[];
}

export interface SubmitSettings extends PullRequestSettings {
  operation: 'submit';
  priority: string | null;
  noBatch: boolean;
}

/** status, cancel and restart need only the pull request. */
export interface PullRequestOnlySettings extends PullRequestSettings {
  operation: 'status' | 'cancel' | 'restart';
}

export interface WaitSettings extends PullRequestSettings {
  operation: 'wait';
  timeoutMs: number;
  pollIntervalMs: number;
  /** The longest time without a line in the log (at most a minute). */
  heartbeatMs: number;
}

export interface ImpactedTargetsSettings extends PullRequestSettings {
  operation: 'impacted-targets';
  impactedTargets: string[] | 'ALL';
  headSha: string;
}

/** upload-tests is about a commit, not a queue: the PR number and head SHA are optional. */
export interface UploadTestsSettings extends Connection {
  operation: 'upload-tests';
  prNumber: number | null;
  headSha: string | null;
  junit: string[];
  org: string;
}

/** The checked inputs, each operation with exactly the fields it uses. */
export type ActionSettings =
  | SubmitSettings
  | PullRequestOnlySettings
  | WaitSettings
  | ImpactedTargetsSettings
  | UploadTestsSettings;

/** A problem with the inputs: the step fails with this one-line message. */
export class InputError extends Error {
  override name = 'InputError';
}

function bool(name: string, raw: string): boolean {
  if (raw === '') return false;
  if (/^(true|yes|1)$/i.test(raw)) return true;
  if (/^(false|no|0)$/i.test(raw)) return false;
  throw new InputError(`${name}: must be true or false, got "${raw}"`);
}

function positiveNumber(name: string, raw: string, fallback: number): number {
  if (raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new InputError(`${name}: must be a positive number, got "${raw}"`);
  return value;
}

function heartbeatSeconds(raw: string): number {
  const value = positiveNumber('heartbeat-seconds', raw, 60);
  if (value > 60)
    throw new InputError(
      `heartbeat-seconds: at most 60 (a wait prints where the PR is at least every minute), got "${raw}"`,
    );
  return value;
}

function list(raw: string): string[] {
  return raw
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter(Boolean);
}

interface PullRequestPayload {
  number?: number;
  head?: { sha?: string; ref?: string };
  base?: { ref?: string };
}

/** PR number, head SHA and base branch from a pull_request, pull_request_target or merge_group event. */
function fromEvent(env: RunEnvironment): {
  prNumber: number | null;
  headSha: string | null;
  base: string | null;
} {
  const pr = env.payload.pull_request as PullRequestPayload | undefined;
  if (pr && typeof pr.number === 'number') {
    return { prNumber: pr.number, headSha: pr.head?.sha ?? null, base: pr.base?.ref ?? null };
  }
  const group = env.payload.merge_group as
    | { head_ref?: string; base_ref?: string; head_sha?: string }
    | undefined;
  if (group?.head_ref) {
    // gh-readonly-queue/<branch>/pr-<number>-<sha>
    const match = /\/pr-(\d+)-[0-9a-f]+$/.exec(group.head_ref);
    return {
      prNumber: match ? Number(match[1]) : null,
      headSha: null,
      base: group.base_ref ? group.base_ref.replace(/^refs\/heads\//, '') : null,
    };
  }
  return { prNumber: null, headSha: null, base: null };
}

function parseRepo(raw: string): Repo {
  const repo = parseRepoRef(raw);
  if (!repo) throw new InputError(`repo: must be host/owner/name or owner/name, got "${raw}"`);
  return repo;
}

function isOperation(raw: string): raw is Operation {
  return (OPERATIONS as readonly string[]).includes(raw);
}

/** The inputs every operation checks last, in this order, whether or not it uses them. */
function laterInputs(env: RunEnvironment) {
  const failOn = list(env.input('fail-on') || 'failed,cancelled').map((s) => s.toLowerCase());
  // A typo here would let a failed PR pass the step: only the states a PR can be in are accepted.
  const unknown = failOn.filter((state) => !(PULL_REQUEST_STATES as readonly string[]).includes(state));
  if (unknown.length) {
    throw new InputError(
      `fail-on: unknown state${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `"${u}"`).join(', ')} (states: ${PULL_REQUEST_STATES.join(', ')})`,
    );
  }
  return {
    failOn,
    priority: env.input('priority') || null,
    noBatch: bool('no-batch', env.input('no-batch')),
    timeoutMs: positiveNumber('timeout-minutes', env.input('timeout-minutes'), 60) * 60_000,
    pollIntervalMs: positiveNumber('poll-interval-seconds', env.input('poll-interval-seconds'), 5) * 1000,
    heartbeatMs: heartbeatSeconds(env.input('heartbeat-seconds')) * 1000,
  };
}

/** Reads and checks every input; throws InputError naming the first bad one. */
export function readSettings(env: RunEnvironment): ActionSettings {
  const token = env.input('token');
  if (!token) throw new InputError('token: required (pass secrets.RAILYARD_TOKEN or your Trunk API token)');

  const operation = (env.input('operation') || 'submit').toLowerCase();
  if (!isOperation(operation)) {
    throw new InputError(`operation: must be one of ${OPERATIONS.join(', ')}, got "${operation}"`);
  }

  if (!env.input('api-url') && token.startsWith(RAILYARD_TOKEN_PREFIX)) {
    // A Railyard token goes only to a server the workflow names, never to the default (Trunk's).
    throw new InputError(
      `api-url: required with a Railyard token (${RAILYARD_TOKEN_PREFIX}…): your server's address, e.g. https://railyard.example.com/v1 ` +
        `(without it the token would go to Trunk's ${DEFAULT_API_URL})`,
    );
  }
  const apiUrl = withoutTrailingSlashes(env.input('api-url') || DEFAULT_API_URL);
  try {
    new URL(apiUrl);
  } catch {
    throw new InputError(`api-url: not a URL: "${apiUrl}"`);
  }

  let repo: Repo;
  const repoInput = env.input('repo');
  if (repoInput) repo = parseRepo(repoInput);
  else if (env.repository) {
    const host = env.serverUrl ? new URL(env.serverUrl).host : 'github.com';
    repo = parseRepo(`${host}/${env.repository}`);
  } else throw new InputError('repo: required outside GitHub Actions (GITHUB_REPOSITORY is not set)');
  const versionInput = (env.input('api-version') || 'v1').trim().toLowerCase();
  if (versionInput !== 'v1' && versionInput !== 'v2')
    throw new InputError(`api-version: must be v1 or v2, got "${env.input('api-version')}"`);
  const connection: Connection = { token, apiUrl, repo, apiVersion: versionInput };

  const event = fromEvent(env);
  const prInput = env.input('pr-number');
  let prNumber = event.prNumber;
  if (prInput) {
    if (!/^\d+$/.test(prInput)) throw new InputError(`pr-number: must be a whole number, got "${prInput}"`);
    prNumber = Number(prInput);
  }
  const targetBranch = env.input('target-branch') || event.base;
  const headSha = env.input('head-sha') || event.headSha || null;

  if (operation === 'upload-tests') {
    const junit = list(env.input('junit'));
    if (junit.length === 0) throw new InputError('junit: required for operation upload-tests');
    const org = env.input('org');
    if (!org) throw new InputError('org: required for operation upload-tests (the organisation slug)');
    laterInputs(env); // checked as for every operation, though none of them is used here
    return { ...connection, operation, prNumber, headSha, junit, org };
  }

  // Every other operation acts on a pull request in a queue.
  if (prNumber === null) {
    throw new InputError(
      `pr-number: required for a ${env.eventName ?? 'non-pull_request'} event (only pull_request, pull_request_target and merge_group events carry one)`,
    );
  }
  if (!targetBranch)
    throw new InputError('target-branch: required when the event has no pull request base branch');

  if (operation === 'impacted-targets') {
    const targetsRaw = env.input('impacted-targets').trim();
    if (targetsRaw === '')
      throw new InputError('impacted-targets: required for operation impacted-targets (a list, [] or ALL)');
    let impactedTargets: string[] | 'ALL';
    if (targetsRaw.toUpperCase() === 'ALL') impactedTargets = 'ALL';
    else if (targetsRaw === '[]') impactedTargets = [];
    else
      impactedTargets = targetsRaw
        .split('\n')
        .map((s) => s.trim())
        .filter(Boolean);
    if (!headSha) throw new InputError('head-sha: required when the event has no pull request head');
    const { failOn } = laterInputs(env);
    return { ...connection, operation, prNumber, targetBranch, failOn, impactedTargets, headSha };
  }

  const { failOn, priority, noBatch, timeoutMs, pollIntervalMs, heartbeatMs } = laterInputs(env);
  const pr: PullRequestSettings = { ...connection, prNumber, targetBranch, failOn };
  switch (operation) {
    case 'submit':
      return { ...pr, operation, priority, noBatch };
    case 'wait':
      return { ...pr, operation, timeoutMs, pollIntervalMs, heartbeatMs };
    case 'status':
    case 'cancel':
    case 'restart':
      return { ...pr, operation };
  }
}
