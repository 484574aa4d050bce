/**
 * The queues in the store: each queue's row and settings, its entries (`pull_requests`) and test
 * runs, written one engine step per transaction; the history of its pull requests; the leases
 * between replicas (PostgreSQL). A step's webhook events go to the outbox in its transaction,
 * built by the caller's QueueEventBuilder. Rows and changes are computed in queue-rows.ts.
 */
import { sql, type Selectable, type Transaction } from 'kysely';
import type { ImpactedTargets, PullRequestState, Repo } from '../contract/index.js';
import type { Entry, QueueConfig, QueueModel, TestRun } from '../engine/types.js';
import { ensureOrganisationIn } from './accounts.js';
import type { Db, StoreKind } from './connect.js';
import {
  changeOf,
  DB_NOW_MS,
  ENTRY_CHUNK,
  entryRow,
  flakyDefaults,
  impactedTargetsKey,
  LeaseLostError,
  QUEUE_CHANNEL,
  runRow,
  type ImpactedTargetsWrite,
  type PrTransition,
  type Fence,
  type QueueChange,
  type StoredQueue,
} from './queue-rows.js';
import type { QueuesTable, SchemaTables } from './schema.js';
import { writeQueueStep, type QueueEventBuilder } from './webhooks.js';

/** What a queue write sees inside its transaction (several replicas: the row is locked). */
export interface QueueTransaction {
  /** The queue's committed version. */
  readonly version: number;
  /** The queue as committed (to refresh a stale copy). */
  load(): Promise<StoredQueue | undefined>;
  /** Refuses the write unless `fence` still holds the queue's lease. */
  checkFence(fence: Fence): Promise<void>;
  /** Writes one engine step and bumps the version; returns the new version. */
  write(
    before: QueueModel,
    after: QueueModel,
    impactedTargets?: ImpactedTargetsWrite,
    transitions?: readonly PrTransition[],
    events?: QueueEventBuilder,
  ): Promise<number>;
}

/**
 * The queues part of the store (`store.queues`): each queue's row with its settings, its entries
 * and test runs, the history of its pull requests, and, with several replicas on PostgreSQL, the
 * queues' leases and the announcements of their new versions.
 */
export class QueueStore {
  constructor(
    private readonly db: Db,
    private readonly kind: StoreKind,
  ) {}

  /** SQLite: the next pr_transitions.seq, read once from the table, then counted here (one writer per database). */
  private nextTransitionSeq: number | null = null;

  // ------------------------------------------------------------ queues

  async loadQueues(): Promise<StoredQueue[]> {
    const queues = await this.db
      .selectFrom('queues')
      .selectAll()
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .execute();
    const out: StoredQueue[] = [];
    for (const q of queues) out.push(await this.queueFrom(this.db, q));
    return out;
  }

  /** One queue as committed, or undefined if it was deleted. */
  async loadQueue(queueId: string): Promise<StoredQueue | undefined> {
    const q = await this.db
      .selectFrom('queues')
      .selectAll()
      .where('id', '=', queueId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    return q && this.queueFrom(this.db, q);
  }

  /** Every queue's id and version (a replica compares them with its copies). */
  async queueVersions(): Promise<{ id: string; version: number }[]> {
    const rows = await this.db
      .selectFrom('queues')
      .select(['id', 'version'])
      .where('deleted_at', 'is', null)
      .execute();
    return rows.map((r) => ({ id: r.id, version: Number(r.version) }));
  }

  /** The id and version of the queue of (org, repo, branch), if there is one. */
  async findQueueVersion(
    org: string,
    repo: Repo,
    branch: string,
  ): Promise<{ id: string; version: number } | undefined> {
    const row = await this.db
      .selectFrom('queues')
      .select(['id', 'version'])
      .where('org_slug', '=', org)
      .where('repo_host', '=', repo.host)
      .where('repo_owner', '=', repo.owner)
      .where('repo_name', '=', repo.name)
      .where('branch', '=', branch)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    return row && { id: row.id, version: Number(row.version) };
  }

  private async queueFrom(
    db: Db | Transaction<SchemaTables>,
    q: Selectable<QueuesTable>,
  ): Promise<StoredQueue> {
    const entries = await db
      .selectFrom('pull_requests')
      .select('data')
      .where('queue_id', '=', q.id)
      .orderBy('seq')
      .execute();
    const runs = await db
      .selectFrom('test_runs')
      .select('data')
      .where('queue_id', '=', q.id)
      .orderBy('started_at')
      .execute();
    const targets = await db
      .selectFrom('impacted_targets')
      .select(['pr_number', 'head_sha', 'targets'])
      .where('queue_id', '=', q.id)
      .execute();
    return {
      id: q.id,
      version: Number(q.version),
      org: q.org_slug,
      repo: { host: q.repo_host, owner: q.repo_owner, name: q.repo_name },
      model: {
        branch: q.branch,
        // Settings added later (the flaky-aware ones) take their defaults on queues stored before them.
        config: { ...flakyDefaults(), ...(JSON.parse(q.config) as QueueConfig) },
        entries: entries.map((r) => JSON.parse(r.data) as Entry),
        runs: runs.map((r) => JSON.parse(r.data) as TestRun),
        nextSeq: Number(q.next_seq),
      },
      impactedTargets: new Map(
        targets.map((t) => [
          impactedTargetsKey(Number(t.pr_number), t.head_sha),
          JSON.parse(t.targets) as ImpactedTargets,
        ]),
      ),
    };
  }

  /**
   * Creates a queue, or brings back the deleted queue of the same organisation, repository and
   * branch with its pull requests and history (012) under the new config: answers the id used
   * (the deleted queue's when it came back; the caller then loads it).
   */
  async insertQueue(queue: {
    id: string;
    org: string;
    repo: Repo;
    model: QueueModel;
  }): Promise<{ id: string; revived: boolean }> {
    const now = Date.now();
    return this.db.transaction().execute(async (trx) => {
      await ensureOrganisationIn(trx, queue.org);
      const deleted = await trx
        .selectFrom('queues')
        .select(['id', 'version'])
        .where('org_slug', '=', queue.org)
        .where('repo_host', '=', queue.repo.host)
        .where('repo_owner', '=', queue.repo.owner)
        .where('repo_name', '=', queue.repo.name)
        .where('branch', '=', queue.model.branch)
        .where('deleted_at', 'is not', null)
        .executeTakeFirst();
      if (deleted) {
        await trx
          .updateTable('queues')
          .set({
            config: JSON.stringify(queue.model.config),
            deleted_at: null,
            updated_at: now,
            state_since: now,
            version: Number(deleted.version) + 1,
          })
          .where('id', '=', deleted.id)
          .execute();
        if (this.kind === 'postgres') {
          await trx
            .insertInto('queue_leases')
            .values({ queue_id: deleted.id })
            .onConflict((oc) => oc.column('queue_id').doNothing())
            .execute();
        }
        return { id: deleted.id, revived: true };
      }
      await trx
        .insertInto('queues')
        .values({
          id: queue.id,
          org_slug: queue.org,
          repo_host: queue.repo.host,
          repo_owner: queue.repo.owner,
          repo_name: queue.repo.name,
          branch: queue.model.branch,
          config: JSON.stringify(queue.model.config),
          next_seq: queue.model.nextSeq,
          created_at: now,
          updated_at: now,
          state_since: now,
        })
        .execute();
      if (this.kind === 'postgres')
        await trx.insertInto('queue_leases').values({ queue_id: queue.id }).execute();
      return { id: queue.id, revived: false };
    });
  }

  /** When the queue entered its current state (ms), or null when the store does not know. */
  async stateSince(queueId: string): Promise<number | null> {
    const row = await this.db
      .selectFrom('queues')
      .select(['state_since'])
      .where('id', '=', queueId)
      .executeTakeFirst();
    return row?.state_since === null || row?.state_since === undefined ? null : Number(row.state_since);
  }

  /**
   * Deletes a queue (an empty one: every PR in it concluded). Its row stays, marked deleted, with
   * its pull requests, test runs and history: a re-create brings them back (insertQueue).
   */
  async deleteQueue(queueId: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('impacted_targets').where('queue_id', '=', queueId).execute();
      // The lease row stays with the queue's row: a re-create goes on with the same holder and fencing number.
      await trx
        .updateTable('queues')
        .set((eb) => ({ deleted_at: Date.now(), version: eb('version', '+', 1) }))
        .where('id', '=', queueId)
        .execute();
    });
  }

  /**
   * Persists one engine step of a queue in ONE transaction: the changed entries, test runs and
   * config, the state changes of its pull requests (their history), plus an impacted-targets
   * upload when the command carried one.
   */
  async commitQueueChange(
    queueId: string,
    before: QueueModel,
    after: QueueModel,
    impactedTargets?: ImpactedTargetsWrite,
    transitions: readonly PrTransition[] = [],
    events?: QueueEventBuilder,
  ): Promise<void> {
    const change = changeOf(before, after);
    if (change.empty && !impactedTargets && !transitions.length) return;
    await this.db
      .transaction()
      .execute((trx) =>
        this.writeQueueChange(trx, queueId, change, before, after, impactedTargets, transitions, events),
      );
  }

  /**
   * A queue write on a database shared by several replicas: the queue's row is locked for the
   * transaction (writes to one queue are serialized across replicas), `fn` sees its committed
   * version, may reload it, and writes the step; the change is announced to the other replicas
   * when the transaction commits.
   */
  async transactQueue<T>(queueId: string, fn: (tx: QueueTransaction) => Promise<T>): Promise<T> {
    if (this.kind !== 'postgres') throw new Error('transactQueue needs PostgreSQL');
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('queues')
        .selectAll()
        .where('id', '=', queueId)
        .where('deleted_at', 'is', null)
        .forUpdate()
        .executeTakeFirst();
      let version = row ? Number(row.version) : -1;
      const tx: QueueTransaction = {
        version,
        load: async () => (row ? this.queueFrom(trx, { ...row, version }) : undefined),
        checkFence: async (fence) => {
          const held = await trx
            .selectFrom('queue_leases')
            .select('queue_id')
            .where('queue_id', '=', queueId)
            .where('holder', '=', fence.holder)
            .where('fence', '=', fence.fence)
            .where(sql<boolean>`expires_at > ${DB_NOW_MS}`)
            .executeTakeFirst();
          if (!held) throw new LeaseLostError(queueId);
        },
        write: async (before, after, impactedTargets, transitions, events) => {
          if (!row) throw new Error(`queue ${queueId} was deleted`);
          await this.writeQueueChange(
            trx,
            queueId,
            changeOf(before, after),
            before,
            after,
            impactedTargets,
            transitions,
            events,
          );
          version += 1;
          await trx.updateTable('queues').set({ version }).where('id', '=', queueId).execute();
          await sql`SELECT pg_notify(${QUEUE_CHANNEL}, ${`${queueId}:${version}`})`.execute(trx);
          return version;
        },
      };
      return fn(tx);
    });
  }

  /** Announces a created or deleted queue to the other replicas (PostgreSQL). */
  async announceQueue(queueId: string): Promise<void> {
    if (this.kind === 'postgres')
      await sql`SELECT pg_notify(${QUEUE_CHANNEL}, ${`${queueId}:0`})`.execute(this.db);
  }

  // ------------------------------------------------------------ leases (PostgreSQL replicas)

  /**
   * Takes or renews, for `holder`, the lease of every queue that is free, expired or already
   * its own, until the database's clock passes now + ttlMs; returns the queues it holds with their
   * fencing numbers. A lease changing hands gets a new fencing number.
   */
  async claimLeases(holder: string, ttlMs: number): Promise<Map<string, number>> {
    const rows = await sql<{ queue_id: string; fence: number }>`
      UPDATE queue_leases
         SET fence = CASE WHEN holder = ${holder} THEN fence ELSE fence + 1 END,
             holder = ${holder},
             expires_at = ${DB_NOW_MS} + ${ttlMs}
       WHERE holder = ${holder} OR expires_at < ${DB_NOW_MS}
   RETURNING queue_id, fence`.execute(this.db);
    return new Map(rows.rows.map((r) => [r.queue_id, Number(r.fence)]));
  }

  /** Gives up `holder`'s leases (clean shutdown), so another replica takes the queues at once. */
  async releaseLeases(holder: string): Promise<void> {
    await this.db.updateTable('queue_leases').set({ expires_at: 0 }).where('holder', '=', holder).execute();
  }

  private async writeQueueChange(
    trx: Transaction<SchemaTables>,
    queueId: string,
    { entries, runs, configChanged }: QueueChange,
    before: QueueModel,
    after: QueueModel,
    impactedTargets?: ImpactedTargetsWrite,
    transitions: readonly PrTransition[] = [],
    events?: QueueEventBuilder,
  ): Promise<void> {
    {
      if (transitions.length) {
        let seq: number;
        if (this.kind === 'postgres') {
          // Several replicas: numbered per queue, under the queue's row lock (transactQueue).
          const { max } = await trx
            .selectFrom('pr_transitions')
            .select((eb) => eb.fn.max('seq').as('max'))
            .where('queue_id', '=', queueId)
            .executeTakeFirstOrThrow();
          seq = Number(max ?? 0) + 1;
        } else {
          if (this.nextTransitionSeq === null) {
            const { max } = await trx
              .selectFrom('pr_transitions')
              .select((eb) => eb.fn.max('seq').as('max'))
              .executeTakeFirstOrThrow();
            this.nextTransitionSeq ??= Number(max ?? 0) + 1;
          }
          // Numbers are handed out before any await, so queues committing at once never share one (gaps are fine).
          seq = this.nextTransitionSeq;
          this.nextTransitionSeq += transitions.length;
        }
        for (let i = 0; i < transitions.length; i += ENTRY_CHUNK) {
          const rows = transitions.slice(i, i + ENTRY_CHUNK).map((t) => ({
            seq: seq++,
            queue_id: queueId,
            entry_id: t.entryId,
            pr_number: t.prNumber,
            from_state: t.from,
            state: t.to,
            reason: t.reason,
            test_run_id: t.testRunId,
            detail: t.detail,
            at: t.at,
          }));
          await trx.insertInto('pr_transitions').values(rows).execute();
        }
      }
      // The events of this step (its PRs' changes, the queue's own) go to the webhook outbox in this same transaction.
      if (events) await writeQueueStep(trx, queueId, before, after, transitions, events);
      if (configChanged) {
        await trx
          .updateTable('queues')
          .set({
            config: JSON.stringify(after.config),
            next_seq: after.nextSeq,
            updated_at: Date.now(),
            // When the queue entered its state (paused, draining…): the doctor names a queue paused for long.
            ...(before.config.state !== after.config.state ? { state_since: Date.now() } : {}),
          })
          .where('id', '=', queueId)
          .execute();
      }
      for (let i = 0; i < entries.upsert.length; i += ENTRY_CHUNK) {
        const rows = entries.upsert.slice(i, i + ENTRY_CHUNK).map((e) => entryRow(queueId, e));
        await trx
          .insertInto('pull_requests')
          .values(rows)
          .onConflict((oc) =>
            oc.column('id').doUpdateSet((eb) => ({
              state: eb.ref('excluded.state'),
              seq: eb.ref('excluded.seq'),
              head_sha: eb.ref('excluded.head_sha'),
              head_branch: eb.ref('excluded.head_branch'),
              state_changed_at: eb.ref('excluded.state_changed_at'),
              concluded_at: eb.ref('excluded.concluded_at'),
              data: eb.ref('excluded.data'),
            })),
          )
          .execute();
      }
      if (entries.remove.length)
        await trx.deleteFrom('pull_requests').where('id', 'in', entries.remove).execute();
      for (let i = 0; i < runs.upsert.length; i += ENTRY_CHUNK) {
        const rows = runs.upsert.slice(i, i + ENTRY_CHUNK).map((r) => runRow(queueId, r));
        await trx
          .insertInto('test_runs')
          .values(rows)
          .onConflict((oc) =>
            oc
              .column('id')
              .doUpdateSet((eb) => ({ status: eb.ref('excluded.status'), data: eb.ref('excluded.data') })),
          )
          .execute();
      }
      if (runs.remove.length) await trx.deleteFrom('test_runs').where('id', 'in', runs.remove).execute();
      if (impactedTargets) {
        const row = {
          queue_id: queueId,
          pr_number: impactedTargets.prNumber,
          head_sha: impactedTargets.headSha,
          targets: JSON.stringify(impactedTargets.targets),
          updated_at: Date.now(),
        };
        await trx
          .insertInto('impacted_targets')
          .values(row)
          .onConflict((oc) =>
            oc.columns(['queue_id', 'pr_number', 'head_sha']).doUpdateSet((eb) => ({
              targets: eb.ref('excluded.targets'),
              updated_at: eb.ref('excluded.updated_at'),
            })),
          )
          .execute();
      }
    }
  }

  /** Every state change of pull request `prNumber` in a queue (all its submissions), oldest first. */
  async prHistory(queueId: string, prNumber: number): Promise<PrTransition[]> {
    const rows = await this.db
      .selectFrom('pr_transitions')
      .selectAll()
      .where('queue_id', '=', queueId)
      .where('pr_number', '=', prNumber)
      .orderBy('seq')
      .execute();
    return rows.map((r) => ({
      entryId: r.entry_id,
      prNumber: Number(r.pr_number),
      from: r.from_state as PullRequestState | null,
      to: r.state as PullRequestState,
      reason: r.reason,
      testRunId: r.test_run_id,
      detail: r.detail,
      at: Number(r.at),
    }));
  }
}
