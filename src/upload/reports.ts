/** Test-result upload shared by `flaky upload`, `flaky run` and the Action: finding, reading and sending reports. */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { glob } from 'tinyglobby';
import type { Client } from '../client/index.js';
import { BODY_LIMIT_BYTES } from '../contract/common.js';
import { MAX_REPORTS_PER_UPLOAD } from '../contract/flaky.js';
import type { Repo, UploadReport, UploadTestResultsRequest, UploadTestResultsResponse } from '../contract/index.js';
import { ConfigError } from '../input-error.js';

/**
 * Test-result upload shared by `railyard flaky upload`, `railyard flaky run` and the Action's
 * `upload-tests` operation: finding report files, CI defaults, and splitting the reports into
 * requests under the API's body limit. No oclif here: the Action bundles this file.
 */

/** A report that cannot be sent in any request: nothing is sent. */
export class ReportTooLargeError extends Error {
  override name = 'ReportTooLargeError';
}

export interface ReportFile {
  /** Path as shown to people and sent as the report's name (relative to the working directory when inside it). */
  name: string;
  path: string;
  mtimeMs: number;
}

function displayName(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/**
 * Expands paths and globs into report files, sorted and without duplicates. A literal file is
 * taken as is (whatever its extension), a directory means its `**\/*.xml`, anything else is a
 * glob (node_modules is skipped unless the pattern names it). Throws ConfigError (exit 2) when
 * nothing matches.
 */
export async function findReports(
  patterns: readonly string[],
  opts: { cwd?: string; modifiedSinceMs?: number; allowEmpty?: boolean; label?: string } = {},
): Promise<ReportFile[]> {
  const cwd = resolve(opts.cwd ?? process.cwd());
  const label = opts.label ?? '--junit';
  if (patterns.length === 0) throw new ConfigError(`${label}: give at least one path or glob of JUnit XML reports`);
  const found = new Map<string, ReportFile>();
  const add = async (path: string) => {
    const info = await stat(path).catch(() => null);
    if (!info?.isFile() || found.has(path)) return;
    found.set(path, { name: displayName(path, cwd), path, mtimeMs: info.mtimeMs });
  };
  for (const pattern of patterns) {
    const literal = resolve(cwd, pattern);
    const info = await stat(literal).catch(() => null);
    if (info?.isFile()) {
      await add(literal);
      continue;
    }
    const ignore = pattern.includes('node_modules') ? [] : ['**/node_modules/**'];
    const matches = await glob(info?.isDirectory() ? '**/*.xml' : pattern, {
      cwd: info?.isDirectory() ? literal : cwd,
      absolute: true,
      dot: true,
      onlyFiles: true,
      expandDirectories: false,
      ignore,
    });
    for (const match of matches) await add(resolve(match));
  }
  let files = [...found.values()].sort((a, b) => a.name.localeCompare(b.name));
  const searched = patterns.map((p) => `"${p}"`).join(', ');
  if (files.length === 0 && !opts.allowEmpty) throw new ConfigError(`${label}: no file matches ${searched} (in ${cwd})`);
  if (opts.modifiedSinceMs !== undefined) {
    const since = opts.modifiedSinceMs;
    files = files.filter((f) => f.mtimeMs >= since);
  }
  return files;
}

export async function readReports(files: readonly ReportFile[]): Promise<UploadReport[]> {
  const reports: UploadReport[] = [];
  for (const file of files) {
    const content = await readFile(file.path, 'utf8').catch((error: Error) => {
      throw new ConfigError(`${file.name}: cannot read (${error.message})`);
    });
    reports.push({ name: file.name, content });
  }
  return reports;
}

export type UploadMeta = Omit<UploadTestResultsRequest, 'reports'>;

/**
 * Splits the reports into request bodies of at most `limitBytes` bytes (as JSON, exactly as
 * they are sent) and at most MAX_REPORTS_PER_UPLOAD reports each, keeping their order. A report
 * that does not fit in a request on its own is a ReportTooLargeError naming it.
 */
export function planBatches(
  meta: UploadMeta,
  reports: readonly UploadReport[],
  limitBytes = BODY_LIMIT_BYTES,
  maxReports = MAX_REPORTS_PER_UPLOAD,
): UploadReport[][] {
  // `{...meta,"reports":[]}`: each report adds its JSON plus a comma after the first.
  const envelope = Buffer.byteLength(JSON.stringify({ ...meta, reports: [] }));
  const batches: UploadReport[][] = [];
  let current: UploadReport[] = [];
  let size = envelope;
  for (const report of reports) {
    const bytes = Buffer.byteLength(JSON.stringify(report));
    if (envelope + bytes > limitBytes) {
      throw new ReportTooLargeError(
        `${report.name}: too large to upload (${formatBytes(bytes)} as JSON; a request may carry at most ${formatBytes(limitBytes)}): nothing was uploaded`,
      );
    }
    const added = bytes + (current.length ? 1 : 0);
    if (current.length && (size + added > limitBytes || current.length >= maxReports)) {
      batches.push(current);
      current = [];
      size = envelope;
    }
    size += bytes + (current.length ? 1 : 0);
    current.push(report);
  }
  if (current.length) batches.push(current);
  return batches;
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}

/** The counts of every request added up (a test sent in two requests counts twice). */
export interface UploadSummary extends Omit<UploadTestResultsResponse, 'upload_id'> {
  upload_ids: string[];
  requests: number;
}

/**
 * Sends the reports in as many requests as needed, one after the other. When request k fails,
 * the error says how many were stored before it.
 */
export async function uploadReports(
  client: Client,
  meta: UploadMeta,
  reports: readonly UploadReport[],
  opts: { onProgress?: (done: number, total: number) => void; signal?: AbortSignal; limitBytes?: number } = {},
): Promise<UploadSummary> {
  const batches = planBatches(meta, reports, opts.limitBytes);
  const summary: UploadSummary = {
    upload_ids: [],
    requests: batches.length,
    files: 0,
    tests: 0,
    passed: 0,
    failed: 0,
    skipped: 0,
    flaky: 0,
    new_tests: 0,
    excluded_from_detection: false,
  };
  for (const [index, batch] of batches.entries()) {
    opts.onProgress?.(index, batches.length);
    let answer: UploadTestResultsResponse;
    try {
      answer = await client.call('uploadTestResults', { ...meta, reports: batch }, { signal: opts.signal });
    } catch (error) {
      if (index > 0 && error instanceof Error) {
        error.message += ` (request ${index + 1} of ${batches.length}; the ${index} before it were stored)`;
      }
      throw error;
    }
    summary.upload_ids.push(answer.upload_id);
    for (const key of ['files', 'tests', 'passed', 'failed', 'skipped', 'flaky', 'new_tests'] as const) summary[key] += answer[key];
    summary.excluded_from_detection ||= answer.excluded_from_detection;
  }
  opts.onProgress?.(batches.length, batches.length);
  return summary;
}

/** Rows of the counts table. */
export function summaryRows(s: UploadSummary): Array<[string, string]> {
  return [
    ['files', String(s.files)],
    ['tests', String(s.tests)],
    ['passed', String(s.passed)],
    ['failed', String(s.failed)],
    ['flaky', String(s.flaky)],
    ['skipped', String(s.skipped)],
    ['new tests', String(s.new_tests)],
    ['excluded from detection', s.excluded_from_detection ? 'yes (looks like an infrastructure failure)' : 'no'],
    ['requests', String(s.requests)],
    ['upload ids', s.upload_ids.join(', ')],
  ];
}

// ---------------------------------------------------------------------------------------------
// Where the upload's branch, SHA, PR, job and CODEOWNERS come from.

export interface CiContext {
  repo: Repo | null;
  branch: string | null;
  sha: string | null;
  prNumber: number | null;
  job: string | null;
  attempt: number | null;
}

export interface EventPayload {
  pull_request?: { number?: number; head?: { sha?: string; ref?: string } };
  merge_group?: { head_ref?: string; head_sha?: string };
}

function readEvent(path: string | undefined): EventPayload {
  if (!path) return {};
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as EventPayload;
  } catch {
    return {};
  }
}

/** Defaults from the GitHub Actions environment, or all null outside Actions. */
export function githubContext(env: NodeJS.ProcessEnv = process.env): CiContext {
  if (env.GITHUB_ACTIONS !== 'true') return { repo: null, branch: null, sha: null, prNumber: null, job: null, attempt: null };
  return githubContextOf(env, readEvent(env.GITHUB_EVENT_PATH));
}

/** The workflow run's repository, branch, SHA, PR, job and attempt (the Action always runs inside one). */
export function githubContextOf(env: NodeJS.ProcessEnv, event: EventPayload): CiContext {
  const pr = event.pull_request;
  let prNumber = typeof pr?.number === 'number' ? pr.number : null;
  if (prNumber === null && event.merge_group?.head_ref) {
    const match = /\/pr-(\d+)-[0-9a-f]+$/.exec(event.merge_group.head_ref);
    if (match) prNumber = Number(match[1]);
  }
  let repo: Repo | null = null;
  const parts = (env.GITHUB_REPOSITORY ?? '').split('/').filter(Boolean);
  if (parts.length === 2) {
    let host = 'github.com';
    try {
      if (env.GITHUB_SERVER_URL) host = new URL(env.GITHUB_SERVER_URL).host;
    } catch {
      // keep github.com
    }
    repo = { host, owner: parts[0], name: parts[1] };
  }
  const attempt = env.GITHUB_RUN_ATTEMPT && /^\d+$/.test(env.GITHUB_RUN_ATTEMPT) ? Number(env.GITHUB_RUN_ATTEMPT) : null;
  return {
    repo,
    branch: env.GITHUB_HEAD_REF || pr?.head?.ref || env.GITHUB_REF_NAME || null,
    // The PR head, not the merge commit GitHub checks out for pull_request events.
    sha: pr?.head?.sha || event.merge_group?.head_sha || env.GITHUB_SHA || null,
    prNumber,
    job: env.GITHUB_JOB || null,
    attempt: attempt && attempt >= 1 ? attempt : null,
  };
}

function git(args: string[], cwd: string): string | null {
  try {
    const out = execFileSync('git', args, { cwd, stdio: ['ignore', 'pipe', 'ignore'], encoding: 'utf8' }).trim();
    return out || null;
  } catch {
    return null;
  }
}

/** Branch and SHA of the local checkout (branch null when HEAD is detached). */
export function gitContext(cwd = process.cwd()): { branch: string | null; sha: string | null; root: string | null } {
  const branch = git(['rev-parse', '--abbrev-ref', 'HEAD'], cwd);
  return {
    branch: branch && branch !== 'HEAD' ? branch : null,
    sha: git(['rev-parse', 'HEAD'], cwd),
    root: git(['rev-parse', '--show-toplevel'], cwd),
  };
}

export const CODEOWNERS_LOCATIONS = ['.github/CODEOWNERS', 'CODEOWNERS', 'docs/CODEOWNERS'];

/** The CODEOWNERS text: the given file, else the first of CODEOWNERS_LOCATIONS under `root`, else null. */
export async function readCodeowners(file: string | undefined, root: string | null): Promise<string | null> {
  if (file) {
    return readFile(file, 'utf8').catch((error: Error) => {
      throw new ConfigError(`--codeowners: cannot read ${file} (${error.message})`);
    });
  }
  if (!root) return null;
  for (const candidate of CODEOWNERS_LOCATIONS) {
    const path = join(root, candidate);
    if (existsSync(path)) return readFile(path, 'utf8').catch(() => null);
  }
  return null;
}

const SHA = /^[0-9a-fA-F]{4,64}$/;

/** Checks the upload fields that people type, with the flag names they typed. */
export function checkMeta(meta: UploadMeta): UploadMeta {
  if (!meta.branch) throw new ConfigError('--branch: required (not in GitHub Actions, and HEAD is detached or this is not a git checkout)');
  if (!meta.sha) throw new ConfigError('--sha: required (not in GitHub Actions, and this is not a git checkout)');
  if (!SHA.test(meta.sha)) throw new ConfigError(`--sha: expected a commit SHA (hex), got "${meta.sha}"`);
  if (meta.started_at !== undefined && Number.isNaN(Date.parse(meta.started_at))) {
    throw new ConfigError(`--started-at: expected an ISO 8601 date-time, got "${meta.started_at}"`);
  }
  return meta;
}
