/**
 * The single writer of each queue: commands of one queue run one after the other, each runs the
 * engine, persists its step in one transaction (fenced by the lease with several replicas), then
 * swaps the in-memory model, logs the change and hands the engine's effects to the workers.
 */
import {
  effectsBetween,
  step,
  type EngineEvent,
  type Effect,
  type QueueModel,
  type StepContext,
} from '../../engine/index.js';
import {
  impactedTargetsKey,
  LeaseLostError,
  type ImpactedTargetsWrite,
  type PrTransition,
  type QueueEventBuilder,
  type Store,
  type StoredQueue,
} from '../../store/index.js';
import { notFound } from '../errors.js';
import type { QueueHandle, ReplicaView } from './handle.js';
import { logQueueEvents, transitionsOfStep, type EventLog } from './history.js';
import type { QueueRegistry } from './registry.js';

/** Where the writer hands a committed step's effects: the queue workers. Must not throw. */
export type EffectSink = (queue: QueueHandle, effects: readonly Effect[]) => void | Promise<void>;

/** How one command is committed: see QueueWriter.commit. */
interface CommitOptions {
  impactedTargets?: ImpactedTargetsWrite;
  /** Events to add after seeing the intermediate model. */
  more?: (model: QueueModel) => EngineEvent[];
  fenced?: boolean;
}

export interface QueueWriterOptions {
  store: Store;
  registry: QueueRegistry;
  replicas?: ReplicaView;
  onEffects?: EffectSink;
  now: () => number;
  newId: () => string;
  log: (message: string, error?: unknown) => void;
  events?: EventLog;
  /** Builds the webhook events a step writes to the outbox in its transaction. */
  queueEvents?: QueueEventBuilder;
}

/** One command run through the engine and persisted: what the writer's tail applies to the queue. */
interface Committed {
  before: QueueModel;
  model: QueueModel;
  effects: Effect[];
  transitions: PrTransition[];
  /** The committed version (a lone server keeps the one it has). */
  version: number;
}

/**
 * Writes to a queue are serialized (one writer per queue): each command runs the engine,
 * persists the changes in one transaction, and only then swaps the in-memory model.
 */
export class QueueWriter {
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly store: Store;
  private readonly registry: QueueRegistry;
  private readonly replicas?: ReplicaView;
  private readonly onEffects?: EffectSink;
  private readonly now: () => number;
  private readonly newId: () => string;
  private readonly log: (message: string, error?: unknown) => void;
  private readonly events?: EventLog;
  private readonly queueEvents?: QueueEventBuilder;

  constructor(options: QueueWriterOptions) {
    this.store = options.store;
    this.registry = options.registry;
    this.replicas = options.replicas;
    this.onEffects = options.onEffects;
    this.now = options.now;
    this.newId = options.newId;
    this.log = options.log;
    this.events = options.events;
    this.queueEvents = options.queueEvents;
  }

  /** Whether this replica carries out the queue's effects (always, without other replicas). */
  drives(queueId: string): boolean {
    return !this.replicas || this.replicas.fence(queueId) !== undefined;
  }

  /** Runs `fn` after every earlier command of the same queue key finished (one writer per queue). */
  serialize<T>(key: string, fn: () => Promise<T>): Promise<T> {
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
  async commit(handle: QueueHandle, events: EngineEvent[], options: CommitOptions = {}): Promise<QueueModel> {
    const committed = this.replicas
      ? await this.persistShared(handle, events, options)
      : await this.persist(handle, events, options);
    this.settle(handle, committed, events, options.impactedTargets);
    return committed.model;
  }

  /** Runs events through the engine: the new model, the effects it asks for, and the PR transitions to keep. */
  runEngine(
    before: QueueModel,
    events: EngineEvent[],
    more?: (model: QueueModel) => EngineEvent[],
  ): { model: QueueModel; effects: Effect[]; transitions: PrTransition[] } {
    let model = before;
    const effects: Effect[] = [];
    const transitions: PrTransition[] = [];
    const run = (event: EngineEvent) => {
      const ctx = this.ctx();
      const result = step(model, event, ctx);
      model = result.model;
      effects.push(...result.effects);
      transitions.push(...transitionsOfStep(model, event, result.effects, ctx.now));
    };
    events.forEach(run);
    more?.(model).forEach(run);
    return { model, effects, transitions };
  }

  /** `commit` on a lone server: the engine's step and its rows in one transaction. */
  private async persist(
    handle: QueueHandle,
    events: EngineEvent[],
    options: CommitOptions,
  ): Promise<Committed> {
    const before = handle.model;
    const stepped = this.runEngine(before, events, options.more);
    await this.store.queues.commitQueueChange(
      handle.id,
      before,
      stepped.model,
      options.impactedTargets,
      stepped.transitions,
      this.queueEvents,
    );
    return { before, ...stepped, version: handle.version };
  }

  /**
   * `commit` on a database shared by several replicas: the queue's row is locked, a stale copy is
   * reloaded first (another replica wrote meanwhile), and a driving write (test results, merges,
   * ticks) is refused when this replica's lease is gone. Only the driving replica carries out the
   * effects; the others leave them to it (it derives them when it sees the new version).
   */
  private async persistShared(
    handle: QueueHandle,
    events: EngineEvent[],
    options: CommitOptions,
  ): Promise<Committed> {
    const fence = this.replicas!.fence(handle.id);
    if (options.fenced && !fence) throw new LeaseLostError(handle.id);
    return this.store.queues.transactQueue(handle.id, async (tx) => {
      if (tx.version < 0) throw notFound(`no queue ${handle.id}`);
      if (options.fenced) await tx.checkFence(fence!);
      if (tx.version !== handle.version) {
        const stored = await tx.load();
        if (stored) this.replaceModel(handle, stored);
      }
      const before = handle.model;
      const stepped = this.runEngine(before, events, options.more);
      if (stepped.model === before && !options.impactedTargets)
        return { before, ...stepped, version: tx.version };
      const version = await tx.write(
        before,
        stepped.model,
        options.impactedTargets,
        stepped.transitions,
        this.queueEvents,
      );
      return { before, ...stepped, version };
    });
  }

  /**
   * The one tail of a committed command: the new model in place (its cached answer dropped), the
   * impacted targets it stored, one log line per change, and the effects handed to the workers
   * when this replica drives the queue.
   */
  private settle(
    handle: QueueHandle,
    committed: Committed,
    events: EngineEvent[],
    targets?: ImpactedTargetsWrite,
  ): void {
    const { before, model, effects, transitions } = committed;
    if (model !== handle.model) handle.getQueueBody = null;
    handle.model = model;
    handle.version = committed.version;
    if (targets)
      handle.impactedTargets.set(impactedTargetsKey(targets.prNumber, targets.headSha), targets.targets);
    if (this.events && model !== before)
      logQueueEvents(this.events, this.now, handle, before, model, transitions, events);
    if (effects.length && this.drives(handle.id)) this.dispatchEffects(handle, effects);
  }

  /** Puts a newer committed copy in place; the driving replica carries out what it asks for. */
  replaceModel(handle: QueueHandle, stored: StoredQueue): void {
    const before = handle.model;
    handle.model = stored.model;
    handle.impactedTargets = stored.impactedTargets;
    handle.version = stored.version;
    handle.getQueueBody = null;
    this.adopt(handle, before);
  }

  /** Effects of changes another replica committed, for the replica that drives the queue. */
  adopt(handle: QueueHandle, before: QueueModel | null): void {
    if (!this.drives(handle.id)) return;
    const effects = effectsBetween(before, handle.model);
    if (effects.length) this.dispatchEffects(handle, effects);
  }

  /** The place where the engine's effects are carried out: after the commit, outside the writer. */
  private dispatchEffects(handle: QueueHandle, effects: Effect[]): void {
    const handler = this.onEffects;
    if (!handler) return;
    setImmediate(() => {
      Promise.resolve()
        .then(() => handler(handle, effects))
        .catch((error) => this.log(`effects of queue ${handle.id} failed`, error));
    });
  }

  /** Feeds an event into a queue through its writer (for effect outcomes: test results, merges, ticks). */
  async dispatch(queueId: string, event: EngineEvent): Promise<QueueModel> {
    const handle = this.registry.byQueueId(queueId);
    if (!handle) throw notFound(`no queue ${queueId}`);
    return this.serialize(handle.key, async () => {
      if (this.registry.byQueueId(queueId) !== handle) throw notFound(`no queue ${queueId}`);
      return this.commit(handle, [event], { fenced: true });
    });
  }

  /**
   * Runs `fn` in the writer of `queue`, with the queue as registered when its turn comes (404 if it
   * was deleted meanwhile; the copy registered now if it was re-created).
   */
  write<T>(queue: QueueHandle, fn: (handle: QueueHandle) => Promise<T>): Promise<T> {
    const current = () => this.registry.current(queue);
    return this.serialize(current().key, async () => fn(current()));
  }
}
