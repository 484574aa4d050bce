import { randomUUID } from 'node:crypto';
import {
  branchNameProblem,
  describeBranchProblem,
  isoTime,
  type ImpactedTargets,
  type Mode,
  type PriorityInput,
  type PullRequestState,
  type Repo,
  resolvePriority,
} from '../contract/index.js';
import {
  activeEntries,
  EngineRejection,
  findEntry,
  isTerminal,
  laneNumbers,
  listOrder,
  newQueueModel,
  readinessOf,
  step,
  testBasis,
  type ConfigPatch,
  type Effect,
  type EngineEvent,
  type Entry,
  type FailedTest,
  type PrFacts,
  type QueueModel,
  type StepContext,
} from '../engine/index.js';
import type { ForgeDriver, Source } from '../forge/types.js';
import { impactedTargetsKey, type Fence, type ImpactedTargetsWrite, type PrTransition, type Store, type StoredQueue } from '../store/index.js';
import { ForgeEventsStore, LeaseLostError, RiskStore, type RiskSubmissionFacts } from '../store/index.js';
import { RiskEstimates } from './risk.js';
import { badRequest, conflict, HttpError, notFound, ofTokenOrg, tooMany } from './errors.js';
import type { RepoOwners } from './ownership.js';
import { presentListItem, presentQueueSettings, presentSubmitted } from './present.js';

/** One queue as the server holds it: identity, the current engine model, read caches. */
export interface QueueHandle {
  readonly id: string;
  readonly org: string;
  readonly repo: Repo;
  readonly key: string;
  /** The committed model: replaced (never mutated) after each persisted step. */
  model: QueueModel;
  /** Impacted targets per `${prNumber}:${headSha}`, also for PRs not (yet) submitted. */
  impactedTargets: Map<string, ImpactedTargets>;
  /** Serialized getQueue answer; null after a change. */
  getQueueBody: Buffer | null;
  /** The committed version this copy is at (several replicas: another replica may be ahead). */
  version: number;
}

/**
 * How a replica shares its database with others (PostgreSQL): which queues it drives, and the
 * fence its driving writes carry. Without it the server is the only one and drives every queue.
 */
export interface ReplicaView {
  /** The fence of the lease this replica holds on the queue, or undefined if another replica drives it. */
  fence(queueId: string): Fence | undefined;
  /** Whether the copies here hold every write any replica acknowledged before the call (false: ask the database). */
  caughtUp(): Promise<boolean>;
}

/** A getSubmittedPullRequest answer: the entry it is about and its JSON. */
interface SubmittedAnswer {
  entry: Entry;
  body: string;
}

/** Called after a step is committed, with the effects the engine asked for. Must not throw. */
export type EffectHandler = (queue: QueueHandle, effects: readonly Effect[], service: QueueService) => void | Promise<void>;

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
}

/** The part of a pino logger the service writes its events to. */
export interface EventLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** What one organisation may hold: far above what a real team uses, low enough to bound what one costs. */
export interface ServerLimits {
  /** Merge queues per organisation (`serve --max-queues-per-org`). */
  queuesPerOrg: number;
  /** Pull requests in one queue that have not concluded yet (`serve --max-prs-per-queue`). */
  prsPerQueue: number;
}

export const DEFAULT_LIMITS: ServerLimits = { queuesPerOrg: 1_000, prsPerQueue: 1_000 };

export type PrSelector = { number: number; branch?: undefined } | { branch: string; number?: undefined };

export interface ListOptions {
  state?: PullRequestState;
  since?: string;
  until?: string;
  cursor?: string;
  take?: number;
}

/** Repository identity is case-insensitive (as on GitHub): keys and stored names are lower case. */
export function normaliseRepo(repo: Repo): Repo {
  return {
    host: repo.host.trim().toLowerCase(),
    owner: repo.owner.trim().toLowerCase(),
    name: repo.name.trim().toLowerCase(),
  };
}

function queueKey(org: string, repo: Repo, branch: string): string {
  return `${org}\n${repo.host}\n${repo.owner}\n${repo.name}\n${branch}`;
}

const describeRepo = (repo: Repo) =>
  repo.host === 'github.com' ? `${repo.owner}/${repo.name}` : `${repo.host}/${repo.owner}/${repo.name}`;

function sameFacts(a: PrFacts, b: PrFacts): boolean {
  return (
    a.headSha === b.headSha &&
    a.headBranch === b.headBranch &&
    a.title === b.title &&
    a.author === b.author &&
    a.baseBranch === b.baseBranch &&
    a.mergeability === b.mergeability &&
    a.open === b.open &&
    (a.blockedBy ?? '') === (b.blockedBy ?? '') &&
    JSON.stringify(a.conflict ?? null) === JSON.stringify(b.conflict ?? null)
  );
}

/** States in which an entry's testRunId names the run that tests (or tested) it in this change. */
const TESTED_STATES = new Set<PullRequestState>([
  'testing',
  'tests_passed',
  'merged',
  'failed',
  'pending_failure',
]);

/** The history row of one stateChanged effect, read against the model right after its step. */
function transitionOf(
  model: QueueModel,
  effect: Extract<Effect, { type: 'stateChanged' }>,
  at: number,
): PrTransition {
  let testRunId: string | null = null;
  if (TESTED_STATES.has(effect.to)) {
    const entry = findEntry(model, effect.prNumber);
    testRunId = entry?.id === effect.entryId ? entry.testRunId : null;
  }
  return {
    entryId: effect.entryId,
    prNumber: effect.prNumber,
    from: effect.from,
    to: effect.to,
    reason: effect.reason,
    testRunId,
    detail: null,
    at,
  };
}

function fromRejection(error: unknown): unknown {
  if (!(error instanceof EngineRejection)) return error;
  const status = error.kind === 'not_found' ? 404 : error.kind === 'conflict' ? 409 : 400;
  return new HttpError(status, error.message);
}

/**
 * Owns the merge queues: one in-memory model per queue, loaded from the store at start.
 * Writes to a queue are serialized (one writer per queue): each command runs the engine,
 * persists the changes in one transaction, and only then swaps the in-memory model.
 * Reads come from memory.
 */
export class QueueService {
  private readonly byKey = new Map<string, QueueHandle>();
  private readonly byId = new Map<string, QueueHandle>();
  private readonly locks = new Map<string, Promise<unknown>>();
  /** getSubmittedPullRequest answers per model version (a new version starts with none). */
  private readonly submittedAnswers = new WeakMap<QueueModel, Map<string, SubmittedAnswer>>();
  private readonly store: Store;
  private readonly source: Source;
  /** The queues' risk models (riskEstimate), fitted from the stored history. */
  private readonly risk: RiskEstimates;
  private readonly forgeKind: string;
  private readonly owners?: RepoOwners;
  private readonly onEffects?: EffectHandler;
  private readonly now: () => number;
  private readonly newId: () => string;
  private readonly log: (message: string, error?: unknown) => void;
  private readonly replicas?: ReplicaView;
  private readonly limits: ServerLimits;
  private readonly events?: EventLog;

  private constructor(options: QueueServiceOptions) {
    this.replicas = options.replicas;
    this.store = options.store;
    this.source = options.forge.source;
    this.forgeKind = options.forge.kind;
    this.owners = options.owners;
    this.onEffects = options.onEffects;
    this.now = options.now ?? Date.now;
    this.newId = options.newId ?? randomUUID;
    this.log = options.log ?? ((message, error) => console.error(message, error ?? ''));
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.events = options.events;
    this.risk = new RiskEstimates(new RiskStore(this.store.db));
  }

  static async load(options: QueueServiceOptions): Promise<QueueService> {
    const service = new QueueService(options);
    for (const q of await options.store.loadQueues()) {
      service.register(service.handleOf(q));
    }
    return service;
  }

  private handleOf(q: StoredQueue): QueueHandle {
    return { ...q, key: queueKey(q.org, q.repo, q.model.branch), getQueueBody: null };
  }

  /** Whether this replica carries out the queue's effects (always, without other replicas). */
  drives(queueId: string): boolean {
    return !this.replicas || this.replicas.fence(queueId) !== undefined;
  }

  /**
   * Several replicas: brings this replica's copy of one queue up to the committed version (a
   * queue created, changed or deleted by another replica). Reads call it first, so an answer is
   * never older than a write another replica acknowledged. A no-op for a lone server.
   * Usually the replica's LISTEN connection vouches for the copy (Replicas.caughtUp, one barrier
   * shared by the requests in flight); only when it cannot is the version looked up here.
   */
  async sync(org: string, rawRepo: Repo, branch: string): Promise<void> {
    if (!this.replicas || (await this.replicas.caughtUp())) return;
    const repo = normaliseRepo(rawRepo);
    const key = queueKey(org, repo, branch);
    const found = await this.store.findQueueVersion(org, repo, branch);
    const local = this.byKey.get(key);
    if (local && (!found || found.id !== local.id)) this.serialize(key, async () => this.unregister(local));
    if (found && (!local || local.id !== found.id || local.version < found.version)) await this.refresh(found.id);
  }

  /** Several replicas: brings every copy up to the committed versions, adds queues created elsewhere, drops deleted ones. */
  async syncAll(): Promise<void> {
    if (!this.replicas) return;
    const committed = await this.store.queueVersions();
    const ids = new Set(committed.map((q) => q.id));
    for (const local of this.queues()) {
      if (!ids.has(local.id)) await this.serialize(local.key, async () => this.unregister(local));
    }
    for (const { id, version } of committed) await this.refresh(id, version);
  }

  /**
   * Several replicas: reloads a queue from the database if the copy here is older than `version` (or missing).
   * Reloads of one queue run one after the other, so a copy loaded before the queue was deleted (or
   * changed) never lands after a later reload that saw the deletion.
   */
  async refresh(queueId: string, version?: number): Promise<void> {
    const local = this.byId.get(queueId);
    if (local && version !== undefined && local.version >= version) return;
    await this.serialize(`reload\n${queueId}`, async () => this.reload(queueId, version));
  }

  private async reload(queueId: string, version?: number): Promise<void> {
    const local = this.byId.get(queueId);
    if (local && version !== undefined && local.version >= version) return;
    const stored = await this.store.loadQueue(queueId);
    if (!stored) {
      if (local) await this.serialize(local.key, async () => this.unregister(local));
      return;
    }
    const handle = this.handleOf(stored);
    await this.serialize(handle.key, async () => {
      const current = this.byId.get(queueId);
      if (!current) {
        // A queue another replica created (or a new copy after a delete and re-create).
        const stale = this.byKey.get(handle.key);
        if (stale) this.unregister(stale);
        this.register(handle);
        this.adopt(handle, null);
      } else if (current.version < stored.version) this.replaceModel(current, stored);
    });
  }

  /** Puts a newer committed copy in place; the driving replica carries out what it asks for. */
  private replaceModel(handle: QueueHandle, stored: StoredQueue): void {
    const before = handle.model;
    handle.model = stored.model;
    handle.impactedTargets = stored.impactedTargets;
    handle.version = stored.version;
    handle.getQueueBody = null;
    this.adopt(handle, before);
  }

  /** Effects of changes another replica committed, for the replica that drives the queue. */
  private adopt(handle: QueueHandle, before: QueueModel | null): void {
    if (!this.drives(handle.id)) return;
    const effects = effectsBetween(before, handle.model);
    if (effects.length) this.dispatchEffects(handle, effects);
  }

  private register(handle: QueueHandle): void {
    this.byKey.set(handle.key, handle);
    this.byId.set(handle.id, handle);
  }

  private unregister(handle: QueueHandle): void {
    this.byKey.delete(handle.key);
    this.byId.delete(handle.id);
  }

  /** Every queue (all organisations). */
  queues(): QueueHandle[] {
    return [...this.byId.values()];
  }

  /** The queues an organisation sees: its own, in repositories it owns (or nobody owns). */
  queuesOf(org: string): QueueHandle[] {
    return this.queues().filter((q) => q.org === org && this.allows(org, q.repo));
  }

  /** Whether `org` may see `repo` (it belongs to no other organisation). */
  private allows(org: string, repo: Repo): boolean {
    return this.owners?.allows(org, repo) ?? true;
  }

  byQueueId(id: string): QueueHandle | undefined {
    return this.byId.get(id);
  }

  find(org: string, repo: Repo, branch: string): QueueHandle | undefined {
    const handle = this.byKey.get(queueKey(org, normaliseRepo(repo), branch));
    // A queue made before the repository went to another organisation is hidden like a missing one.
    return handle && this.allows(org, handle.repo) ? handle : undefined;
  }

  /** The queue or a 404 (also for another organisation's queue: existence is never revealed). */
  require(org: string, repo: Repo, branch: string): QueueHandle {
    const handle = this.find(org, repo, branch);
    if (!handle) throw notFound(`no merge queue for branch "${branch}" in ${describeRepo(normaliseRepo(repo))} ${ofTokenOrg(org)}`);
    return handle;
  }

  /** Runs `fn` after every earlier command of the same queue key finished (one writer per queue). */
  private serialize<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(key) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.locks.set(key, tail);
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    });
    return run;
  }

  /** Waits until no command is running or queued (used on shutdown). */
  async drain(): Promise<void> {
    while (this.locks.size) await Promise.all([...this.locks.values()]);
  }

  private ctx(): StepContext {
    return { now: this.now(), newId: this.newId };
  }

  /**
   * Applies events to a queue as ONE command: engine steps, one transaction, then the swap.
   * `more` may add events after seeing the intermediate model. Must run inside serialize().
   */
  private async commit(
    handle: QueueHandle,
    events: EngineEvent[],
    options: {
      impactedTargets?: ImpactedTargetsWrite;
      more?: (model: QueueModel) => EngineEvent[];
      fenced?: boolean;
    } = {},
  ): Promise<QueueModel> {
    if (this.replicas) return this.commitShared(handle, events, options);
    const before = handle.model;
    const { model, effects, transitions } = this.runEngine(before, events, options.more);
    await this.store.commitQueueChange(handle.id, before, model, options.impactedTargets, transitions);
    handle.model = model;
    if (options.impactedTargets) {
      const t = options.impactedTargets;
      handle.impactedTargets.set(impactedTargetsKey(t.prNumber, t.headSha), t.targets);
    }
    if (model !== before) handle.getQueueBody = null;
    if (this.events && model !== before) this.logEvents(handle, before, model, transitions, events);
    if (effects.length) this.dispatchEffects(handle, effects);
    return model;
  }

  /** Runs events through the engine: the new model, the effects it asks for, and the PR transitions to keep. */
  private runEngine(
    before: QueueModel,
    events: EngineEvent[],
    more?: (model: QueueModel) => EngineEvent[],
  ): { model: QueueModel; effects: Effect[]; transitions: PrTransition[] } {
    let model = before;
    const effects: Effect[] = [];
    const transitions: PrTransition[] = [];
    const run = (event: EngineEvent) => {
      try {
        const ctx = this.ctx();
        const result = step(model, event, ctx);
        model = result.model;
        effects.push(...result.effects);
        const detail =
          (event.type === 'testRunStartFailed' || event.type === 'testRunFinished' || event.type === 'mergeFailed') && event.detail
            ? event.detail
            : null;
        for (const effect of result.effects) {
          if (effect.type !== 'stateChanged') continue;
          const t = transitionOf(model, effect, ctx.now);
          if (detail !== null && (t.to === 'failed' || t.to === 'pending_failure')) t.detail = detail;
          if (event.type === 'testRunFinished') {
            t.detail ??= flakyDetail(model, event.runId, t.reason);
            if (!event.passed && event.failures?.length && (t.to === 'failed' || t.to === 'pending_failure'))
              t.detail = [t.detail, failingTestsDetail(event.failures)].filter(Boolean).join('; ');
          }
          transitions.push(t);
        }
      } catch (error) {
        throw fromRejection(error);
      }
    };
    events.forEach(run);
    more?.(model).forEach(run);
    return { model, effects, transitions };
  }

  /**
   * `commit` on a database shared by several replicas: the queue's row is locked, a stale copy is
   * reloaded first (another replica wrote meanwhile), and a driving write (test results, merges,
   * ticks) is refused when this replica's lease is gone. Only the driving replica carries out the
   * effects; the others leave them to it (it derives them when it sees the new version).
   */
  private async commitShared(
    handle: QueueHandle,
    events: EngineEvent[],
    options: {
      impactedTargets?: ImpactedTargetsWrite;
      more?: (model: QueueModel) => EngineEvent[];
      fenced?: boolean;
    },
  ): Promise<QueueModel> {
    const fence = this.replicas!.fence(handle.id);
    if (options.fenced && !fence) throw new LeaseLostError(handle.id);
    const result = await this.store.transactQueue(handle.id, async (tx) => {
      if (tx.version < 0) throw notFound(`no queue ${handle.id}`);
      if (options.fenced) await tx.checkFence(fence!);
      if (tx.version !== handle.version) {
        const stored = await tx.load();
        if (stored) this.replaceModel(handle, stored);
      }
      const before = handle.model;
      const stepped = this.runEngine(before, events, options.more);
      if (stepped.model === before && !options.impactedTargets) return { before, ...stepped, version: tx.version };
      const version = await tx.write(before, stepped.model, options.impactedTargets, stepped.transitions);
      return { before, ...stepped, version };
    });
    const effects = result.effects;
    if (result.model !== handle.model) handle.getQueueBody = null;
    handle.model = result.model;
    handle.version = result.version;
    if (options.impactedTargets) {
      const t = options.impactedTargets;
      handle.impactedTargets.set(impactedTargetsKey(t.prNumber, t.headSha), t.targets);
    }
    if (this.events && result.model !== result.before) this.logEvents(handle, result.before, result.model, result.transitions, events);
    if (effects.length && this.drives(handle.id)) this.dispatchEffects(handle, effects);
    return result.model;
  }

  /** One log line per PR state change (with its reason), test run started / finished, and merge. */
  private logEvents(
    handle: QueueHandle,
    before: QueueModel,
    after: QueueModel,
    transitions: PrTransition[],
    events: EngineEvent[],
  ): void {
    const log = this.events!;
    const queue = { org: handle.org, repo: describeRepo(handle.repo), branch: after.branch };
    for (const t of transitions) {
      log.info(
        {
          ...queue,
          pr: t.prNumber,
          from: t.from,
          to: t.to,
          reason: t.reason,
          testRunId: t.testRunId ?? undefined,
          detail: t.detail ?? undefined,
        },
        'pull request state changed',
      );
    }
    if (before.runs !== after.runs) {
      const old = new Map(before.runs.map((r) => [r.id, r]));
      for (const run of after.runs) {
        const was = old.get(run.id);
        if (was === run) continue;
        if (!was)
          log.info(
            {
              ...queue,
              testRunId: run.id,
              prs: run.prNumbers,
              basePrs: run.basePrNumbers,
              bisection: run.isBisection,
            },
            'test run started',
          );
        else if (was.status === 'in_progress' && run.status !== 'in_progress') {
          log.info(
            {
              ...queue,
              testRunId: run.id,
              prs: run.prNumbers,
              status: run.status,
              reason: run.failureReason ?? undefined,
              durationMs: (run.finishedAt ?? this.now()) - run.startedAt,
            },
            'test run finished',
          );
        }
      }
    }
    for (const event of events) {
      if (event.type === 'mergeSucceeded') {
        const run = after.runs.find((r) => r.id === event.runId);
        log.info({ ...queue, testRunId: event.runId, prs: run?.mergePrNumbers ?? run?.prNumbers }, 'merged');
      } else if (event.type === 'mergeFailed') {
        log.warn({ ...queue, testRunId: event.runId, reason: event.reason }, 'merge failed');
      }
    }
  }

  /** The place where the engine's effects are carried out: after the commit, outside the writer. */
  private dispatchEffects(handle: QueueHandle, effects: Effect[]): void {
    const handler = this.onEffects;
    if (!handler) return;
    setImmediate(() => {
      Promise.resolve()
        .then(() => handler(handle, effects, this))
        .catch((error) => this.log(`effects of queue ${handle.id} failed`, error));
    });
  }

  /** Feeds an event into a queue through its writer (for effect outcomes: test results, merges, ticks). */
  async dispatch(queueId: string, event: EngineEvent): Promise<QueueModel> {
    const handle = this.byId.get(queueId);
    if (!handle) throw notFound(`no queue ${queueId}`);
    return this.serialize(handle.key, async () => {
      if (this.byId.get(queueId) !== handle) throw notFound(`no queue ${queueId}`);
      return this.commit(handle, [event], { fenced: true });
    });
  }

  private write<T>(org: string, repo: Repo, branch: string, fn: (handle: QueueHandle) => Promise<T>): Promise<T> {
    const handle = this.require(org, repo, branch);
    return this.serialize(handle.key, async () => fn(this.require(org, repo, branch)));
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
    const repo = normaliseRepo(rawRepo);
    const problem = branchNameProblem(branch);
    if (problem) throw badRequest(`targetBranch: ${describeBranchProblem(branch, problem)}`);
    if (this.owners && !(await this.owners.claim(org, repo)))
      throw notFound(`repo: no repository ${describeRepo(repo)} ${ofTokenOrg(org)}`);
    const key = queueKey(org, repo, branch);
    await this.serialize(key, async () => {
      if (this.byKey.has(key)) throw conflict(`A merge queue already exists for branch "${branch}" in ${describeRepo(repo)}`);
      const max = this.limits.queuesPerOrg;
      if (this.queuesOf(org).length >= max) {
        throw badRequest(
          `organisation "${org}" already has ${max} merge queues, the limit of this server: delete one first (the server's operator sets the limit with --max-queues-per-org)`,
        );
      }
      let model = newQueueModel(branch, mode, concurrency);
      const patch = Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined)) as ConfigPatch;
      if (Object.keys(patch).length > 0) model = this.runEngine(model, [{ type: 'updateConfig', patch }]).model;
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
        const { id, revived } = await this.store.insertQueue(handle);
        if (revived) {
          // The queue existed before: its concluded PRs (a merged PR stays merged) and their history come back.
          const stored = await this.store.loadQueue(id);
          if (!stored) throw new Error(`queue ${id} vanished while it was re-created`);
          handle = { ...handle, id, model: stored.model, impactedTargets: stored.impactedTargets, version: stored.version };
        }
      } catch (error) {
        // Another replica created it between our check and the insert (the unique key says so).
        if (this.replicas && (await this.store.findQueueVersion(org, repo, branch))) {
          throw conflict(`A merge queue already exists for branch "${branch}" in ${describeRepo(repo)}`);
        }
        throw error;
      }
      this.register(handle);
      await this.store.announceQueue(handle.id);
    });
  }

  async deleteQueue(org: string, repo: Repo, branch: string): Promise<void> {
    await this.write(org, repo, branch, async (handle) => {
      const active = activeEntries(handle.model).length;
      if (active > 0) {
        throw badRequest(
          `queue for ${branch} in ${describeRepo(handle.repo)} is not empty: cancel or merge its ${active} pull request${active === 1 ? '' : 's'} first`,
        );
      }
      if (this.replicas) {
        // Another replica may have queued PRs meanwhile: decide on the committed copy.
        const stored = await this.store.loadQueue(handle.id);
        if (stored && stored.version !== handle.version) this.replaceModel(handle, stored);
        const now = activeEntries(handle.model).length;
        if (now > 0)
          throw badRequest(
            `queue for ${branch} in ${describeRepo(handle.repo)} is not empty: cancel or merge its ${now} pull request${now === 1 ? '' : 's'} first`,
          );
      }
      await this.store.deleteQueue(handle.id);
      this.unregister(handle);
      await this.store.announceQueue(handle.id);
    });
  }

  async updateQueue(org: string, repo: Repo, branch: string, patch: ConfigPatch) {
    const model = await this.write(org, repo, branch, (handle) => this.commit(handle, [{ type: 'updateConfig', patch }]));
    return presentQueueSettings(model);
  }

  /** Records a forge event a driver acted on (store: forge_events); true the first time only. */
  rememberForgeEvent(forge: string, repo: Repo, kind: 'delivery' | 'comment', key: string): Promise<boolean> {
    this.forgeEvents ??= new ForgeEventsStore(this.store.db);
    const r = normaliseRepo(repo);
    return this.forgeEvents.claim(forge, `${r.host}/${r.owner}/${r.name}`.toLowerCase(), kind, key);
  }
  private forgeEvents: ForgeEventsStore | null = null;

  /** The getQueue answer, serialized once per queue version. */
  getQueueBody(org: string, repo: Repo, branch: string): Buffer {
    const handle = this.require(org, repo, branch);
    if (!handle.getQueueBody) {
      const model = handle.model;
      const line = activeEntries(model).filter((e) => e.state !== 'not_ready');
      const lanes = laneNumbers(model, line);
      const body = {
        ...presentQueueSettings(model),
        enqueuedPullRequests: line.map((e) => presentListItem(e, lanes.get(e.id))),
      };
      const buffer = Buffer.from(JSON.stringify(body));
      // Only cache if nothing changed meanwhile (building is synchronous, but stay safe).
      if (handle.model === model) handle.getQueueBody = buffer;
      return buffer;
    }
    return handle.getQueueBody;
  }

  // ------------------------------------------------------------ pull requests

  private async facts(handle: QueueHandle, prNumber: number): Promise<PrFacts> {
    let facts: PrFacts | null;
    try {
      facts = await this.source.getPullRequest(handle.repo, prNumber, handle.model.branch);
    } catch (error) {
      // A forge behind HTTP (GitHub) that failed: say so instead of a bare internal error.
      const status = (error as { status?: unknown } | null)?.status;
      if (typeof status !== 'number') throw error;
      const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
      throw new HttpError(502, `${this.forgeKind}: reading pull request #${prNumber} failed (${status}: ${detail})`);
    }
    if (!facts) throw notFound(`pull request #${prNumber} does not exist in ${describeRepo(handle.repo)}`);
    return facts;
  }

  private neverSubmitted(handle: QueueHandle, what: string): HttpError {
    return notFound(`pull request ${what} was never submitted to the ${handle.model.branch} queue of ${describeRepo(handle.repo)}`);
  }

  async submit(
    org: string,
    repo: Repo,
    branch: string,
    prNumber: number,
    options: { priority?: PriorityInput; noBatch?: boolean },
  ): Promise<void> {
    const queue = this.require(org, repo, branch);
    const facts = await this.facts(queue, prNumber);
    if (!facts.open) {
      // The GitHub forge says whether it was merged or closed.
      const state = (facts as PrFacts & { closedAs?: string }).closedAs ?? 'closed';
      throw badRequest(`pull request #${prNumber} is ${state}: only open pull requests can be submitted`);
    }
    const baseProblem = branchNameProblem(facts.baseBranch);
    if (baseProblem)
      throw badRequest(
        `pull request #${prNumber}: its base ${describeBranchProblem(facts.baseBranch, baseProblem)}`,
      );
    // Nothing lands twice: a PR the forge reports merged or closed, or whose head or changes are
    // already in the target, is refused.
    const landing = await this.source.landingState?.(queue.repo, prNumber, facts, queue.model.branch);
    if (landing && landing.state !== 'open') {
      throw badRequest(
        `pull request #${prNumber} is ${landing.state === 'merged' ? 'already merged' : 'closed'}: ${landing.detail}`,
      );
    }
    const priority = options.priority === undefined ? undefined : resolvePriority(options.priority);
    const risk = await this.riskOf(queue, prNumber, facts);
    await this.write(org, repo, branch, (handle) => {
      this.refuseMerged(handle, prNumber);
      const existing = findEntry(handle.model, prNumber);
      if (!existing || isTerminal(existing.state)) {
        const max = this.limits.prsPerQueue;
        let active = 0;
        for (const e of handle.model.entries) if (!isTerminal(e.state)) active++;
        if (active >= max) {
          throw tooMany(
            `the ${branch} queue of ${describeRepo(handle.repo)} already holds ${max} pull requests, the limit of this server: submit again once some have merged (the server's operator sets the limit with --max-prs-per-queue)`,
          );
        }
      }
      return this.commit(
        handle,
        [{ type: 'submit', prNumber, pr: facts, priority, noBatch: options.noBatch, ...(risk ? { riskEstimate: risk.estimate } : {}) }],
        {
          // Impacted targets may be uploaded before the PR is submitted: apply them to the new entry.
          more: (model) => {
            const entry = findEntry(model, prNumber);
            const stored = handle.impactedTargets.get(impactedTargetsKey(prNumber, facts.headSha));
            if (!entry || entry.impactedTargets !== null || stored === undefined) return [];
            return [{ type: 'impactedTargets', prNumber, sha: facts.headSha, targets: stored }];
          },
        },
      );
    });
    if (risk) {
      const entry = findEntry(this.require(org, repo, branch).model, prNumber);
      if (entry)
        await this.risk
          .record(queue.id, entry.id, prNumber, risk.facts, this.now())
          .catch((error: unknown) => this.log(`risk: recording the facts of #${prNumber} failed`, error));
    }
  }

  /**
   * The PR's riskEstimate (issue 22), from the queue's history: author, the paths it changes (the
   * forge's diff against the target; else its impacted targets) and its size. Null when the
   * history cannot be read (the PR is submitted without an estimate; the error is logged).
   */
  private async riskOf(queue: QueueHandle, prNumber: number, facts: PrFacts): Promise<{ estimate: number; facts: RiskSubmissionFacts } | null> {
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

  /**
   * 400 when a queue of the repository already merged PR `prNumber`: a forge that cannot tell
   * (the sandbox) would otherwise let it land again. Runs in the writer, so a merge that finished
   * while the forge was asked is seen.
   */
  private refuseMerged(handle: QueueHandle, prNumber: number): void {
    for (const q of this.queuesOf(handle.org)) {
      if (
        q.repo.host !== handle.repo.host ||
        q.repo.owner !== handle.repo.owner ||
        q.repo.name !== handle.repo.name
      )
        continue;
      const merged = q.model.entries.find((e) => e.prNumber === prNumber && e.state === 'merged');
      if (merged) {
        const when = merged.concludedAt === null ? '' : ` at ${isoTime(merged.concludedAt)}`;
        throw badRequest(
          `pull request #${prNumber} is already merged: the ${q.model.branch} queue merged it${when}`,
        );
      }
    }
  }

  async cancel(org: string, repo: Repo, branch: string, prNumber: number): Promise<void> {
    await this.write(org, repo, branch, (handle) => {
      if (!findEntry(handle.model, prNumber)) throw this.neverSubmitted(handle, `#${prNumber}`);
      return this.commit(handle, [{ type: 'cancel', prNumber, reason: 'USER_REQUESTED' }]);
    });
  }

  async restart(org: string, repo: Repo, branch: string, prNumber: number): Promise<void> {
    await this.write(org, repo, branch, (handle) => {
      if (!findEntry(handle.model, prNumber)) throw this.neverSubmitted(handle, `#${prNumber}`);
      return this.commit(handle, [{ type: 'restart', prNumber, reason: 'TESTS_RESTARTED_BY_API_REQUEST' }]);
    });
  }

  async setImpactedTargets(org: string, repo: Repo, branch: string, prNumber: number, sha: string, targets: ImpactedTargets) {
    await this.write(org, repo, branch, (handle) => {
      const entry = findEntry(handle.model, prNumber);
      // Targets of another commit would be stored and never used: say so instead of answering 200.
      if (entry && !isTerminal(entry.state) && entry.pr.headSha !== sha) {
        throw badRequest(`pr.sha: ${sha} is not the head of #${prNumber} (${entry.pr.headSha}); send the targets of its head`);
      }
      const submitted = entry !== undefined;
      const events: EngineEvent[] = submitted ? [{ type: 'impactedTargets', prNumber, sha, targets }] : [];
      return this.commit(handle, events, { impactedTargets: { prNumber, headSha: sha, targets } });
    });
  }

  private select(handle: QueueHandle, pr: PrSelector): Entry {
    if (pr.number !== undefined) {
      const entry = findEntry(handle.model, pr.number);
      if (!entry) throw this.neverSubmitted(handle, `#${pr.number}`);
      return entry;
    }
    let best: Entry | undefined;
    for (const e of handle.model.entries) {
      if (e.pr.headBranch !== pr.branch) continue;
      const rank = (x: Entry) => (isTerminal(x.state) ? 0 : 1);
      if (!best || rank(e) > rank(best) || (rank(e) === rank(best) && e.seq > best.seq)) best = e;
    }
    if (!best) throw this.neverSubmitted(handle, `from branch "${pr.branch}"`);
    return best;
  }

  /**
   * The getSubmittedPullRequest answer for `pr` in the queue's current model, serialized once per
   * model version: models are replaced, never mutated, so the answers of a version stay right
   * for as long as it is current, and a new version starts with none.
   */
  private submittedAnswer(handle: QueueHandle, pr: PrSelector): SubmittedAnswer {
    const model = handle.model;
    let answers = this.submittedAnswers.get(model);
    if (!answers) {
      answers = new Map();
      this.submittedAnswers.set(model, answers);
    }
    const key = pr.number !== undefined ? `number:${pr.number}` : `branch:${pr.branch}`;
    let answer = answers.get(key);
    if (!answer) {
      const entry = this.select(handle, pr);
      answer = { entry, body: JSON.stringify(presentSubmitted(entry, readinessOf(model, entry))) };
      answers.set(key, answer);
    }
    return answer;
  }

  /** getSubmittedPullRequest, serialized: readiness from fresh forge facts; a changed PR goes through the engine first. */
  async getSubmittedBody(org: string, repo: Repo, branch: string, pr: PrSelector): Promise<string> {
    const handle = this.require(org, repo, branch);
    const { entry } = this.submittedAnswer(handle, pr);
    if (!isTerminal(entry.state)) {
      const fresh = await this.source.getPullRequest(handle.repo, entry.prNumber, handle.model.branch);
      if (fresh && !sameFacts(fresh, entry.pr)) {
        const prNumber = entry.prNumber;
        await this.write(org, repo, branch, (h) => this.commit(h, [{ type: 'prUpdated', prNumber, pr: fresh }]));
      }
    }
    return this.submittedAnswer(this.require(org, repo, branch), pr).body;
  }

  /** Every state change of a pull request in a queue, over all its submissions (404 if never submitted). */
  async history(org: string, repo: Repo, branch: string, prNumber: number): Promise<PrTransition[]> {
    const handle = this.require(org, repo, branch);
    if (!findEntry(handle.model, prNumber)) throw this.neverSubmitted(handle, `#${prNumber}`);
    return this.store.prHistory(handle.id, prNumber);
  }

  listPullRequests(org: string, repo: Repo, branch: string, options: ListOptions) {
    const handle = this.require(org, repo, branch);
    const take = options.take ?? 50;
    const since = options.since === undefined ? undefined : Date.parse(options.since);
    const until = options.until === undefined ? undefined : Date.parse(options.until);
    // Queue order as the engine sees it (the line, then the PRs not ready, then those that left):
    // computed live, so a page after a change continues after the cursor's PR where it is now.
    let entries = listOrder(handle.model);
    const lanes = laneNumbers(handle.model, entries);
    if (options.cursor !== undefined && options.cursor !== '') {
      const at = entries.findIndex((e) => e.id === options.cursor);
      if (at < 0) throw badRequest('cursor: unknown cursor (pass the nextCursor of the previous page)');
      entries = entries.slice(at + 1);
    }
    const matches = (e: Entry) => {
      if (options.state !== undefined && e.state !== options.state) return false;
      if (since !== undefined || until !== undefined) {
        if (e.concludedAt === null) return false;
        if (since !== undefined && e.concludedAt < since) return false;
        if (until !== undefined && e.concludedAt > until) return false;
      }
      return true;
    };
    const page: Entry[] = [];
    let more = false;
    for (const e of entries) {
      if (!matches(e)) continue;
      if (page.length === take) {
        more = true;
        break;
      }
      page.push(e);
    }
    const out: { pullRequests: ReturnType<typeof presentListItem>[]; nextCursor?: string } = {
      pullRequests: page.map((e) => presentListItem(e, lanes.get(e.id))),
    };
    if (more) out.nextCursor = page[page.length - 1].id;
    return out;
  }
}

/**
 * The effects a driving replica owes for changes it did not make itself (another replica
 * committed them): test runs that started, runs that stopped, merges that were asked for.
 * With no earlier copy, every run in progress and every pending merge (as on a restart).
 */
export function effectsBetween(before: QueueModel | null, after: QueueModel): Effect[] {
  const old = new Map((before?.runs ?? []).map((r) => [r.id, r]));
  const effects: Effect[] = [];
  for (const run of after.runs) {
    const was = old.get(run.id);
    if (run.status === 'in_progress' && was?.status !== 'in_progress') effects.push({ type: 'startTestRun', runId: run.id, basis: testBasis(after, run) });
    if (run.mergeRequested && !was?.mergeRequested)
      effects.push({ type: 'merge', runId: run.id, prNumbers: run.mergePrNumbers ?? run.prNumbers });
  }
  const now = new Map(after.runs.map((r) => [r.id, r]));
  for (const was of old.values()) {
    if (was.status === 'in_progress' && now.get(was.id)?.status !== 'in_progress') effects.push({ type: 'cancelTestRun', runId: was.id });
  }
  return effects;
}

/** The history's words for a flake-aware verdict: the tests a run's failure was ignored or retried for. */
function flakyDetail(model: QueueModel, runId: string, reason: string | null | undefined): string | null {
  const run = model.runs.find((r) => r.id === runId);
  const names = (list: string[]) => list.slice(0, 10).join(', ') + (list.length > 10 ? ` and ${list.length - 10} more` : '');
  if (reason === 'FLAKY_FAILURES_IGNORED' && run?.flakyIgnored?.length)
    return `failed only on ignored tests (flakyPolicy ${model.config.flakyPolicy}): ${names(run.flakyIgnored)}`;
  if (reason === 'FLAKY_FAILURE_RETRIED' && run?.failures?.length)
    return `run ${runId} failed only on tests with flake history, retried (attempt ${(run.attempt ?? 1) + 1} of ${model.config.flakyRetries + 1}): ${names(run.failures.map((f) => f.name))}`;
  return null;
}

/** The history's words for the failing tests of a failed run (issue 22): `failing tests: a (quarantined), b`. */
function failingTestsDetail(failures: readonly FailedTest[]): string {
  const shown = failures.slice(0, 10).map((t) => {
    const notes = [t.quarantined ? 'quarantined' : t.flaky ? 'flaky' : '', t.changedByPr ? 'file changed by the PR' : ''].filter(Boolean);
    return notes.length ? `${t.name} (${notes.join(', ')})` : t.name;
  });
  return `failing tests: ${shown.join(', ')}${failures.length > 10 ? ` and ${failures.length - 10} more` : ''}`;
}
