/**
 * The merge queues' operations that change a queue, as the routes and the forge drivers call
 * them. The parts behind them live beside it: registry.ts (the queues in memory), replica-sync.ts
 * (copies brought up to other replicas' versions), writer.ts (the single writer of each queue),
 * history.ts (history rows, event log), answers.ts (answers read from memory, cached and paged).
 * Callers read through those parts directly (`service.registry`, `service.answers`, ...).
 */
import { randomUUID } from 'node:crypto';
import {
  branchNameProblem,
  describeBranchProblem,
  type ImpactedTargets,
  type Mode,
  type PriorityInput,
  type Repo,
  resolvePriority,
} from '../../contract/index.js';
import {
  activeEntries,
  findEntry,
  freezesProblem,
  isTerminal,
  newQueueModel,
  type ConfigPatch,
  type EngineEvent,
  type PrFacts,
} from '../../engine/index.js';
import type { ForgeDriver, ForgePrFacts, Source } from '../../forge/types.js';
import {
  impactedTargetsKey,
  type PrTransition,
  type QueueEventBuilder,
  type Store,
} from '../../store/index.js';
import type { RiskSubmissionFacts } from '../../store/index.js';
import { badRequest, conflict, forgeUnavailable, notFound, ofTokenOrg, tooMany } from '../errors.js';
import type { RepoOwners } from '../access/ownership.js';
import { neverSubmitted, QueueAnswers, type PrSelector } from './answers.js';
import type { QueueHandle, ReplicaView } from './handle.js';
import type { EventLog } from './history.js';
import { describeRepo, normaliseRepo, queueKey } from './keys.js';
import { presentQueueSettings } from './present.js';
import { engineFacts, sameFacts } from './pr-facts.js';
import { QueueRegistry } from './registry.js';
import { ReplicaSync } from './replica-sync.js';
import { RiskEstimates } from './risk.js';
import { stackBelow } from './stack-submit.js';
import { QueueWriter, type EffectSink } from './writer.js';

/** Called after a step is committed, with the effects the engine asked for. Must not throw. */
export type EffectHandler = EffectSink;

export interface QueueServiceOptions {
  store: Store;
  /** The forge driver: its source reads PR facts (its other roles are the workers' business). */
  forge: Pick<ForgeDriver, 'kind' | 'source'>;
  /** Which organisation each repository belongs to; without it, every organisation sees only its own queues. */
  owners?: RepoOwners;
  /** Where the engine's effects are carried out (test runs, merges, state changes): the queue workers. */
  onEffects?: EffectHandler;
  now?: () => number;
  newId?: () => string;
  log?: (message: string, error?: unknown) => void;
  /** Set when several replicas share a PostgreSQL database. */
  replicas?: ReplicaView;
  /** Limits per organisation and per queue (default DEFAULT_LIMITS). */
  limits?: ServerLimits;
  /** Where queue events are logged (PR state changes, test runs, merges): a pino logger, at info. */
  events?: EventLog;
  /** Builds the outgoing webhook events of each committed step (without it a step writes none). */
  queueEvents?: QueueEventBuilder;
}

/** What one organisation may hold: far above what a real team uses, low enough to bound what one costs. */
export interface ServerLimits {
  /** Merge queues per organisation (`serve --max-queues-per-org`). */
  queuesPerOrg: number;
  /** Pull requests in one queue that have not concluded yet (`serve --max-prs-per-queue`). */
  prsPerQueue: number;
}

export const DEFAULT_LIMITS: ServerLimits = { queuesPerOrg: 1_000, prsPerQueue: 1_000 };

/** 400 naming the field when a settings patch's freeze windows are wrong (a bad time or cron expression). */
function refuseBadFreezes(patch: ConfigPatch): void {
  const problem = patch.freezes ? freezesProblem(patch.freezes) : null;
  if (problem) throw badRequest(problem);
}

/**
 * Owns the merge queues: one in-memory model per queue, loaded from the store at start.
 * Writes to a queue are serialized (one writer per queue): each command runs the engine,
 * persists the changes in one transaction, and only then swaps the in-memory model.
 * Reads come from memory. Routes get a queue once (`replicaSync.queue()`) and pass it to the operations.
 */
export class QueueService {
  /** The queues in memory: where callers find a queue and list an organisation's. */
  readonly registry: QueueRegistry;
  /** The single writer of each queue: `drives`, `dispatch` (effect outcomes), `drain` (shutdown). */
  readonly writer: QueueWriter;
  /** Several replicas: the copies brought up to the committed versions; `queue()` for a request. */
  readonly replicaSync: ReplicaSync;
  /** The answers read from memory (getQueue, getSubmittedPullRequest, the list). */
  readonly answers = new QueueAnswers();
  private readonly store: Store;
  private readonly source: Source;
  /** The queues' risk models (riskEstimate), fitted from the stored history. */
  private readonly risk: RiskEstimates;
  private readonly forgeKind: string;
  private readonly owners?: RepoOwners;
  private readonly newId: () => string;
  private readonly now: () => number;
  private readonly log: (message: string, error?: unknown) => void;
  private readonly replicas?: ReplicaView;
  private readonly limits: ServerLimits;

  private constructor(options: QueueServiceOptions) {
    this.replicas = options.replicas;
    this.store = options.store;
    this.source = options.forge.source;
    this.forgeKind = options.forge.kind;
    this.owners = options.owners;
    this.newId = options.newId ?? randomUUID;
    this.now = options.now ?? Date.now;
    this.log = options.log ?? ((message, error) => console.error(message, error ?? ''));
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.registry = new QueueRegistry(options.owners);
    this.writer = new QueueWriter({
      store: options.store,
      registry: this.registry,
      replicas: options.replicas,
      onEffects: options.onEffects,
      now: this.now,
      newId: this.newId,
      log: this.log,
      events: options.events,
      queueEvents: options.queueEvents,
    });
    this.replicaSync = new ReplicaSync(options.store, this.registry, this.writer, options.replicas);
    this.risk = new RiskEstimates(this.store.risk);
  }

  static async load(options: QueueServiceOptions): Promise<QueueService> {
    const service = new QueueService(options);
    for (const q of await options.store.queues.loadQueues()) {
      service.registry.register(service.registry.handleOf(q));
    }
    return service;
  }

  // ------------------------------------------------------------ queues

  /** Creates a queue; `settings` (any updateQueue field, an extension) are applied before it is stored, all or nothing. */
  async createQueue(
    org: string,
    rawRepo: Repo,
    branch: string,
    mode?: Mode,
    concurrency?: number,
    settings: ConfigPatch = {},
  ): Promise<void> {
    await this.replicaSync.sync(org, rawRepo, branch);
    const repo = normaliseRepo(rawRepo);
    const problem = branchNameProblem(branch);
    if (problem) throw badRequest(`targetBranch: ${describeBranchProblem(branch, problem)}`);
    refuseBadFreezes(settings);
    if (this.owners && !(await this.owners.claim(org, repo)))
      throw notFound(`repo: no repository ${describeRepo(repo)} ${ofTokenOrg(org)}`);
    const key = queueKey(org, repo, branch);
    await this.refuseMovedTwin(repo, branch);
    await this.writer.serialize(key, async () => {
      if (this.registry.byKeyOf(key))
        throw conflict(`A merge queue already exists for branch "${branch}" in ${describeRepo(repo)}`);
      const max = this.limits.queuesPerOrg;
      if (this.registry.queuesOf(org).length >= max) {
        throw badRequest(
          `organisation "${org}" already has ${max} merge queues, the limit of this server: delete one first (the server's operator sets the limit with --max-queues-per-org)`,
        );
      }
      let model = newQueueModel(branch, mode, concurrency);
      const patch = Object.fromEntries(
        Object.entries(settings).filter(([, v]) => v !== undefined),
      ) as ConfigPatch;
      if (Object.keys(patch).length > 0)
        model = this.writer.runEngine(model, [{ type: 'updateConfig', patch }]).model;
      let handle: QueueHandle = {
        id: this.newId(),
        org,
        repo,
        key,
        model,
        impactedTargets: new Map(),
        getQueueBody: null,
        version: 0,
      };
      try {
        const { id, revived } = await this.store.queues.insertQueue(handle);
        if (revived) {
          // The queue existed before: its concluded PRs (a merged PR stays merged) and their history come back.
          const stored = await this.store.queues.loadQueue(id);
          if (!stored) throw new Error(`queue ${id} vanished while it was re-created`);
          handle = {
            ...handle,
            id,
            model: stored.model,
            impactedTargets: stored.impactedTargets,
            version: stored.version,
          };
        }
      } catch (error) {
        // Another replica created it between our check and the insert (the unique key says so).
        if (this.replicas && (await this.store.queues.findQueueVersion(org, repo, branch))) {
          throw conflict(`A merge queue already exists for branch "${branch}" in ${describeRepo(repo)}`);
        }
        throw error;
      }
      this.registry.register(handle);
      await this.store.queues.announceQueue(handle.id);
    });
  }

  async deleteQueue(queue: QueueHandle): Promise<void> {
    await this.writer.write(queue, async (handle) => {
      const active = activeEntries(handle.model).length;
      if (active > 0) {
        throw badRequest(
          `queue for ${handle.model.branch} in ${describeRepo(handle.repo)} is not empty: cancel or merge its ${active} pull request${active === 1 ? '' : 's'} first`,
        );
      }
      if (this.replicas) {
        // Another replica may have queued PRs meanwhile: decide on the committed copy.
        const stored = await this.store.queues.loadQueue(handle.id);
        if (stored && stored.version !== handle.version) this.writer.replaceModel(handle, stored);
        const now = activeEntries(handle.model).length;
        if (now > 0)
          throw badRequest(
            `queue for ${handle.model.branch} in ${describeRepo(handle.repo)} is not empty: cancel or merge its ${now} pull request${now === 1 ? '' : 's'} first`,
          );
      }
      await this.store.queues.deleteQueue(handle.id);
      this.registry.unregister(handle);
      await this.store.queues.announceQueue(handle.id);
    });
  }

  async updateQueue(queue: QueueHandle, patch: ConfigPatch) {
    refuseBadFreezes(patch);
    const model = await this.writer.write(queue, (handle) =>
      this.writer.commit(handle, [{ type: 'updateConfig', patch }]),
    );
    return presentQueueSettings(model);
  }

  /** 400 when a queue of `branch` exists under another name of the same repository (it was moved). */
  private async refuseMovedTwin(repo: Repo, branch: string): Promise<void> {
    const identify = this.source.repoIdentity?.bind(this.source);
    if (!identify) return;
    const others = this.registry
      .queues()
      .filter(
        (q) =>
          q.model.branch === branch &&
          q.repo.host.toLowerCase() === repo.host.toLowerCase() &&
          describeRepo(q.repo).toLowerCase() !== describeRepo(repo).toLowerCase(),
      );
    if (others.length === 0) return;
    const id = await identify(repo).catch(() => null);
    if (id === null) return;
    for (const q of others)
      if ((await identify(q.repo).catch(() => null)) === id)
        throw badRequest(
          `repo: ${describeRepo(repo)} is the repository of the existing queue for branch "${branch}" in ${describeRepo(q.repo)} (it was moved): one queue per branch; use that queue, or delete it first`,
        );
  }

  /** Records a forge event a driver acted on (store: forge_events); true the first time only. */
  rememberForgeEvent(forge: string, repo: Repo, kind: 'delivery' | 'comment', key: string): Promise<boolean> {
    const r = normaliseRepo(repo);
    return this.store.forgeEvents.claim(forge, `${r.host}/${r.owner}/${r.name}`.toLowerCase(), kind, key);
  }

  // ------------------------------------------------------------ pull requests

  private async facts(handle: QueueHandle, prNumber: number): Promise<ForgePrFacts> {
    let facts: ForgePrFacts | null;
    try {
      facts = await this.source.getPullRequest(handle.repo, prNumber, handle.model.branch);
    } catch (error) {
      // A forge behind HTTP (GitHub) that failed: say so instead of a bare internal error.
      const status = (error as { status?: unknown } | null)?.status;
      if (typeof status !== 'number') throw error;
      const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
      throw forgeUnavailable(
        `${this.forgeKind}: reading pull request #${prNumber} failed (${status}: ${detail})`,
      );
    }
    if (!facts) throw notFound(`pull request #${prNumber} does not exist in ${describeRepo(handle.repo)}`);
    return facts;
  }

  async submit(
    handle: QueueHandle,
    prNumber: number,
    options: { priority?: PriorityInput; noBatch?: boolean; direct?: boolean },
  ): Promise<void> {
    const queue = this.registry.current(handle);
    const facts = await this.facts(queue, prNumber);
    if (!facts.open) {
      // A forge that records it (GitHub, GitLab) says whether it was merged or closed.
      const state = facts.closedAs ?? 'closed';
      throw badRequest(`pull request #${prNumber} is ${state}: only open pull requests can be submitted`);
    }
    // A stacked PR brings the PRs below it (stack-submit.ts); the bottom one names the queue.
    const below = await stackBelow(prNumber, facts, (n) => this.facts(queue, n));
    const bottom = below[0] ?? { prNumber, facts };
    const named = below.length
      ? `pull request #${prNumber} is stacked on #${bottom.prNumber}, which`
      : `pull request #${prNumber}`;
    const baseProblem = branchNameProblem(bottom.facts.baseBranch);
    if (baseProblem)
      throw badRequest(
        `pull request #${bottom.prNumber}: its base ${describeBranchProblem(bottom.facts.baseBranch, baseProblem)}`,
      );
    // One queue per PR: the queue of its base branch (a retarget while waiting is the engine's).
    if (bottom.facts.baseBranch !== queue.model.branch)
      throw badRequest(
        `${named} is based on ${bottom.facts.baseBranch}, not ${queue.model.branch}: submit it to the ${bottom.facts.baseBranch} queue (a pull request is in one queue at a time), or change its base branch`,
      );
    // Nothing lands twice: a PR the forge reports merged or closed, or whose head or changes are
    // already in the target, is refused (and so is a stack on one).
    const queued = (n: number) => {
      const e = findEntry(queue.model, n);
      return e !== undefined && !isTerminal(e.state);
    };
    const newlyStacked = below.filter((m) => !queued(m.prNumber));
    for (const m of [...newlyStacked, { prNumber, facts }]) {
      const landing = await this.source.landingState?.(queue.repo, m.prNumber, m.facts, queue.model.branch);
      if (landing && landing.state !== 'open') {
        const what = `pull request #${m.prNumber} is ${landing.state === 'merged' ? 'already merged' : 'closed'}: ${landing.detail}`;
        throw badRequest(
          m.prNumber === prNumber ? what : `${what} (#${prNumber} is stacked on it: change its base)`,
        );
      }
    }
    const priority = options.priority === undefined ? undefined : resolvePriority(options.priority);
    const risk = await this.riskOf(queue, prNumber, facts);
    await this.writer.write(queue, (handle) => {
      this.registry.refuseMerged(handle, prNumber);
      const fresh = (n: number) => {
        const e = findEntry(handle.model, n);
        return !e || isTerminal(e.state);
      };
      // The PRs below it that are not queued: submitted with it.
      const stack = below.filter((m) => fresh(m.prNumber));
      for (const m of stack) this.registry.refuseMerged(handle, m.prNumber);
      const adding = stack.length + (fresh(prNumber) ? 1 : 0);
      if (adding > 0) {
        const max = this.limits.prsPerQueue;
        let active = 0;
        for (const e of handle.model.entries) if (!isTerminal(e.state)) active++;
        if (active + adding > max) {
          throw tooMany(
            `the ${handle.model.branch} queue of ${describeRepo(handle.repo)} already holds ${max} pull requests, the limit of this server: submit again once some have merged (the server's operator sets the limit with --max-prs-per-queue)`,
          );
        }
      }
      // A direct submit skips the forge's requirements for the PRs below it too: they land with it.
      const direct = options.direct !== undefined ? { direct: options.direct } : {};
      // Top first, then down the stack: the stack is ready only once its bottom is in, so it is
      // admitted whole and tested in one run (bottom first, as the engine orders it).
      const submits: EngineEvent[] = [
        {
          type: 'submit',
          prNumber,
          pr: engineFacts(facts),
          priority,
          noBatch: options.noBatch,
          ...direct,
          ...(risk ? { riskEstimate: risk.estimate } : {}),
        },
        ...[...stack].reverse().map(
          (m): EngineEvent => ({
            type: 'submit',
            prNumber: m.prNumber,
            pr: engineFacts(m.facts),
            priority,
            noBatch: options.noBatch,
            ...direct,
          }),
        ),
      ];
      return this.writer.commit(handle, submits, {
        // Impacted targets may be uploaded before the PR is submitted: apply them to the new entries.
        more: (model) =>
          [...stack, { prNumber, facts }].flatMap(({ prNumber: n, facts: f }): EngineEvent[] => {
            const entry = findEntry(model, n);
            const stored = handle.impactedTargets.get(impactedTargetsKey(n, f.headSha));
            if (!entry || entry.impactedTargets !== null || stored === undefined) return [];
            return [{ type: 'impactedTargets', prNumber: n, sha: f.headSha, targets: stored }];
          }),
      });
    });
    if (risk) {
      const entry = findEntry(this.registry.current(queue).model, prNumber);
      if (entry)
        await this.risk
          .record(queue.id, entry.id, prNumber, risk.facts, this.now())
          .catch((error: unknown) => this.log(`risk: recording the facts of #${prNumber} failed`, error));
    }
  }

  /**
   * The PR's riskEstimate, from the queue's history: author, the paths it changes (the
   * forge's diff against the target; else its impacted targets) and its size. Null when the
   * history cannot be read (the PR is submitted without an estimate; the error is logged).
   */
  private async riskOf(
    queue: QueueHandle,
    prNumber: number,
    facts: PrFacts,
  ): Promise<{ estimate: number; facts: RiskSubmissionFacts } | null> {
    try {
      const changes = await this.source.changes?.(queue.repo, facts, queue.model.branch).catch(() => null);
      const targets = queue.impactedTargets.get(impactedTargetsKey(prNumber, facts.headSha));
      const paths = changes?.paths ?? (Array.isArray(targets) ? targets : []);
      const known: RiskSubmissionFacts = { author: facts.author, paths, size: changes?.size ?? 0 };
      return { estimate: await this.risk.estimate(queue.id, prNumber, known), facts: known };
    } catch (error) {
      this.log(`risk: estimating #${prNumber} failed`, error);
      return null;
    }
  }

  async cancel(queue: QueueHandle, prNumber: number): Promise<void> {
    await this.writer.write(queue, (handle) => {
      if (!findEntry(handle.model, prNumber)) throw neverSubmitted(handle, `#${prNumber}`);
      return this.writer.commit(handle, [{ type: 'cancel', prNumber, reason: 'USER_REQUESTED' }]);
    });
  }

  async restart(queue: QueueHandle, prNumber: number): Promise<void> {
    await this.writer.write(queue, (handle) => {
      if (!findEntry(handle.model, prNumber)) throw neverSubmitted(handle, `#${prNumber}`);
      return this.writer.commit(handle, [
        { type: 'restart', prNumber, reason: 'TESTS_RESTARTED_BY_API_REQUEST' },
      ]);
    });
  }

  async setImpactedTargets(queue: QueueHandle, prNumber: number, sha: string, targets: ImpactedTargets) {
    await this.writer.write(queue, (handle) => {
      const entry = findEntry(handle.model, prNumber);
      // Targets of another commit would be stored and never used: say so instead of answering 200.
      if (entry && !isTerminal(entry.state) && entry.pr.headSha !== sha) {
        throw badRequest(
          `pr.sha: ${sha} is not the head of #${prNumber} (${entry.pr.headSha}); send the targets of its head`,
        );
      }
      const submitted = entry !== undefined;
      const events: EngineEvent[] = submitted ? [{ type: 'impactedTargets', prNumber, sha, targets }] : [];
      return this.writer.commit(handle, events, { impactedTargets: { prNumber, headSha: sha, targets } });
    });
  }

  /**
   * The write half of getSubmittedPullRequest: readiness is answered from fresh forge facts, so a
   * submitted PR whose facts changed goes through the engine (prUpdated, in the writer) first.
   */
  async refreshFacts(queue: QueueHandle, pr: PrSelector): Promise<void> {
    const handle = this.registry.current(queue);
    const { entry } = this.answers.submittedAnswer(handle, pr);
    if (isTerminal(entry.state)) return;
    const fresh = await this.source.getPullRequest(handle.repo, entry.prNumber, handle.model.branch);
    // Merged by the forge while the queue lands it (GitHub's merge API, --github-merge-api): the landing reports it.
    if (entry.state === 'tests_passed' && fresh?.closedAs === 'merged') return;
    if (fresh && !sameFacts(fresh, entry.pr)) {
      const prNumber = entry.prNumber;
      await this.writer.write(handle, (h) =>
        this.writer.commit(h, [{ type: 'prUpdated', prNumber, pr: engineFacts(fresh) }]),
      );
    }
  }

  /** Every state change of a pull request in a queue, over all its submissions (404 if never submitted). */
  async history(queue: QueueHandle, prNumber: number): Promise<PrTransition[]> {
    const handle = this.registry.current(queue);
    if (!findEntry(handle.model, prNumber)) throw neverSubmitted(handle, `#${prNumber}`);
    return this.store.queues.prHistory(handle.id, prNumber);
  }
}
