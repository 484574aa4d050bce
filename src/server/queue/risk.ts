/**
 * The server's `riskEstimate`: each queue's risk model (src/engine/risk/model.ts, an
 * online logistic regression) fitted from the queue's own stored history — the facts recorded for
 * every submission (author, touched paths or impacted targets, size) paired with how it ended
 * (src/store/risk.ts) — and asked for an estimate when a PR is submitted. The model is kept per
 * queue in memory and caught up from the database before each estimate, so a restart, or another
 * replica that handled the outcomes, gives the same estimates (the same outcomes in the same
 * order give the same model).
 */
import { RiskModel, type RiskFacts } from '../../engine/risk/model.js';
import type { RiskStore, RiskSubmissionFacts } from '../../store/index.js';

/** Outcomes replayed when a queue's model is first built (the newest ones): bounds start-up work. */
const REPLAYED = 5_000;
/** Outcomes read per round trip while catching up. */
const PAGE = 1_000;

interface QueueRisk {
  model: RiskModel;
  /** The last history row learnt (null: nothing read yet). */
  lastSeq: number | null;
  /** Per PR number: its earlier test outcomes in this queue and how many failed. */
  perPr: Map<number, { runs: number; failures: number }>;
  /** Catch-ups of one queue run one after the other (nothing is learnt twice). */
  chain: Promise<void>;
}

export class RiskEstimates {
  private readonly queues = new Map<string, QueueRisk>();

  constructor(private readonly store: RiskStore) {}

  /** The probability that a PR with these facts fails its queue test, from the queue's history so far. */
  async estimate(queueId: string, prNumber: number, facts: RiskSubmissionFacts): Promise<number> {
    const q = await this.caughtUp(queueId);
    const earlier = q.perPr.get(prNumber) ?? { runs: 0, failures: 0 };
    const value = q.model.estimate({ ...facts, earlierRuns: earlier.runs, earlierFailures: earlier.failures });
    // Four decimals: what the API shows, and the same number on every replica.
    return Math.round(value * 10_000) / 10_000;
  }

  /** Records a submission's facts so its outcome is learnt once it has one. */
  record(queueId: string, entryId: string, prNumber: number, facts: RiskSubmissionFacts, at: number): Promise<void> {
    return this.store.record(queueId, entryId, prNumber, facts, at);
  }

  /** Drops a deleted queue's model. */
  forget(queueId: string): void {
    this.queues.delete(queueId);
  }

  private caughtUp(queueId: string): Promise<QueueRisk> {
    let q = this.queues.get(queueId);
    if (!q) {
      q = { model: new RiskModel(), lastSeq: null, perPr: new Map(), chain: Promise.resolve() };
      this.queues.set(queueId, q);
    }
    const risk = q;
    const next = risk.chain.then(() => this.learn(queueId, risk));
    risk.chain = next.catch(() => undefined);
    return next.then(() => risk);
  }

  private async learn(queueId: string, q: QueueRisk): Promise<void> {
    for (;;) {
      const first = q.lastSeq === null;
      const outcomes = await this.store.outcomes(queueId, q.lastSeq, first ? REPLAYED : PAGE);
      for (const o of outcomes) {
        const earlier = q.perPr.get(o.prNumber) ?? { runs: 0, failures: 0 };
        const facts: RiskFacts = { author: o.author, paths: o.paths, size: o.size, earlierRuns: earlier.runs, earlierFailures: earlier.failures };
        q.model.observe(facts, o.failed);
        q.perPr.set(o.prNumber, { runs: earlier.runs + 1, failures: earlier.failures + (o.failed ? 1 : 0) });
        q.lastSeq = o.seq;
      }
      if (first && q.lastSeq === null) q.lastSeq = -1;
      if (first || outcomes.length < PAGE) return;
    }
  }
}
