/**
 * The risk model's stored history (migration 010): the facts of each submission,
 * recorded at submit, and the outcomes the model learns from — each submission's final state in
 * the PR history (`pr_transitions`): merged = passed, failed on its tests (a required check
 * failed, or the run timed out) = failed. Other endings (cancelled, a merge conflict, a config
 * error) say nothing of the change's risk and are left out.
 */
import type { Kysely } from 'kysely';
import type { SchemaTables } from './schema.js';

/** The failure reasons that count as the change failing its tests. */
export const RISK_FAILURE_REASONS = ['TEST_RUN_REQUIRED_STATUS_FAILED', 'TEST_RUN_TIMEOUT'] as const;

/** Paths kept per submission (the model uses only their first two segments). */
const MAX_PATHS = 200;

export interface RiskSubmissionFacts {
  author: string;
  paths: readonly string[];
  size: number;
}

/** One learnt outcome, in history order (`seq` per queue). */
export interface RiskOutcome extends RiskSubmissionFacts {
  seq: number;
  prNumber: number;
  failed: boolean;
}

export class RiskStore {
  constructor(private readonly db: Kysely<SchemaTables>) {}

  /** Records what is known of a submission when it enters the queue (the latest facts win on a resubmit). */
  async record(queueId: string, entryId: string, prNumber: number, facts: RiskSubmissionFacts, at: number): Promise<void> {
    const paths = JSON.stringify([...new Set(facts.paths)].slice(0, MAX_PATHS));
    const size = Math.max(0, Math.round(facts.size));
    await this.db
      .insertInto('risk_facts')
      .values({ queue_id: queueId, entry_id: entryId, pr_number: prNumber, author: facts.author, paths, size, at })
      .onConflict((oc) => oc.columns(['queue_id', 'entry_id']).doUpdateSet({ author: facts.author, paths, size, at }))
      .execute();
  }

  /**
   * Outcomes of the queue's submissions with recorded facts: those after `afterSeq` in history
   * order (at most `limit`), or with `afterSeq` null the newest `limit`, oldest first.
   */
  async outcomes(queueId: string, afterSeq: number | null, limit: number): Promise<RiskOutcome[]> {
    let q = this.db
      .selectFrom('pr_transitions as t')
      .innerJoin('risk_facts as f', (j) => j.onRef('f.queue_id', '=', 't.queue_id').onRef('f.entry_id', '=', 't.entry_id'))
      .select(['t.seq', 't.pr_number', 't.state', 'f.author', 'f.paths', 'f.size'])
      .where('t.queue_id', '=', queueId)
      .where((eb) => eb.or([eb('t.state', '=', 'merged'), eb.and([eb('t.state', '=', 'failed'), eb('t.reason', 'in', [...RISK_FAILURE_REASONS])])]));
    if (afterSeq !== null) q = q.where('t.seq', '>', afterSeq);
    const rows = await q
      .orderBy('t.seq', afterSeq === null ? 'desc' : 'asc')
      .limit(limit)
      .execute();
    if (afterSeq === null) rows.reverse();
    return rows.map((r) => ({
      seq: Number(r.seq),
      prNumber: Number(r.pr_number),
      failed: r.state === 'failed',
      author: r.author,
      paths: parsePaths(r.paths),
      size: Number(r.size),
    }));
  }
}

function parsePaths(text: string): string[] {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((p): p is string => typeof p === 'string') : [];
  } catch {
    return [];
  }
}
