/** What an upload stores of each test: results folded per test, failures grouped by message. */
import type { Repo } from '../contract/index.js';
import { failureLine, normaliseFailure } from './failures.js';
import { JUnitParseError, parseJUnit, type JUnitCase } from './junit.js';
import { foldResults, type ResultOutcome } from './results.js';
import type { TestIdentity } from './identity.js';

/** What the server stores of one test in an upload: the folded result, its failure already grouped. */
export interface IngestResult extends TestIdentity {
  id: string;
  outcome: ResultOutcome;
  attempts: number;
  durationMs: number;
  timestamp: number | null;
  /** The failure group (normalised failure line) of failed and flaky results. */
  failureKey: string | null;
  /** The failure line as reported (at most 500 characters). */
  failureLine: string | null;
}

export interface IngestTask {
  org: string;
  repo: Repo;
  variant: string;
  reports: ReadonlyArray<{ name: string; content: string }>;
}

/** Plain data either way, so that it crosses a worker thread boundary unchanged. */
export type IngestOutcome = { ok: true; results: IngestResult[] } | { ok: false; error: string };

/** Results per piece of a packed outcome. */
export const RESULTS_PER_PIECE = 2_000;

/**
 * An outcome as it crosses from a worker thread: the results as JSON text, RESULTS_PER_PIECE to a
 * piece. Strings cross whole (a copy of their bytes) and the receiving thread parses one piece at a
 * time between its other work; 200,000 result objects crossing as objects were rebuilt on the
 * request thread in one go (~300 ms with the garbage they made).
 */
export type PackedOutcome = { ok: true; pieces: string[] } | { ok: false; error: string };

export function packOutcome(outcome: IngestOutcome): PackedOutcome {
  if (!outcome.ok) return outcome;
  const pieces: string[] = [];
  for (let i = 0; i < outcome.results.length; i += RESULTS_PER_PIECE)
    pieces.push(JSON.stringify(outcome.results.slice(i, i + RESULTS_PER_PIECE)));
  return { ok: true, pieces };
}

/**
 * Parses every report of an upload and folds the cases into one result per test. One malformed
 * report fails the whole upload (`ok: false` with the file, line and reason), so nothing of it is
 * stored. Pure and synchronous: the server runs it on a worker thread.
 */
export function readReports(task: IngestTask): IngestOutcome {
  const cases: JUnitCase[] = [];
  for (const report of task.reports) {
    try {
      for (const c of parseJUnit(report.content, report.name).cases) cases.push(c);
    } catch (error) {
      if (error instanceof JUnitParseError) return { ok: false, error: error.message };
      throw error;
    }
  }
  const results: IngestResult[] = [];
  for (const r of foldResults(task.org, task.repo, task.variant, cases)) {
    const { failure } = r;
    results.push({
      id: r.id,
      file: r.file,
      classname: r.classname,
      parent: r.parent,
      name: r.name,
      variant: r.variant,
      outcome: r.outcome,
      attempts: r.attempts,
      durationMs: r.durationMs,
      timestamp: r.timestamp,
      failureKey: failure ? normaliseFailure(failure.message, failure.text) : null,
      failureLine: failure ? failureLine(failure.message, failure.text).slice(0, 500) || null : null,
    });
  }
  return { ok: true, results };
}
