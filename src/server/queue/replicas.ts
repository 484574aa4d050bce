/** This replica among others on one PostgreSQL database: leases, LISTEN/NOTIFY, catching up. */
import { randomUUID } from 'node:crypto';
import type { Client } from 'pg';
import { QUEUE_CHANNEL, type Fence, type Store } from '../../store/index.js';
import type { ReplicaView } from './handle.js';
import type { QueueService } from './service.js';
import type { QueueWorkers } from './workers.js';

export interface ReplicaOptions {
  /** The PostgreSQL URL the store uses (a separate connection LISTENs for other replicas' writes). */
  databaseUrl: string;
  /** How long a lease lasts without renewal (default 5 s): the failover time is at most this plus one renewal. */
  leaseMs?: number;
  /** How often leases are renewed and copies compared with the database (default 1 s). */
  renewMs?: number;
  log?: (message: string, error?: unknown) => void;
}

/**
 * This replica among others on one PostgreSQL database (docs/postgres.md).
 *
 * Every queue has a lease row. Each replica renews, every `renewMs`, the leases it holds and takes
 * those that are free or expired, timed by the database's clock; a lease that changes hands gets
 * a higher fencing number. Only the holder drives a queue (starts test runs, merges, ticks), and
 * every write it makes as the driver checks, in its transaction, that it still holds that fence:
 * a replica that was paused past its lease cannot land anything afterwards. A replica that cannot
 * renew (database gone) stops driving when its lease would have expired, before anyone else may
 * take it.
 *
 * Any replica answers any request: writes lock the queue's row, so they are serialized across
 * replicas exactly as one server serializes them, and each write announces `queueId:version` with
 * NOTIFY; the others reload their copy, and the driver carries out what the new version asks for.
 *
 * Read-your-writes across replicas: a client whose write replica A acknowledged may ask replica B
 * next, while A's notification is still on its way to B; B must not answer from the older copy.
 * Before each request B therefore sends a barrier (`SELECT 1`) on its LISTEN connection and waits
 * for its answer and for the reloads the notifications received meanwhile started (`caughtUp`).
 * PostgreSQL makes that exact: A's backend signals every listening backend when its transaction
 * commits, before A hears that it committed, and a listening backend sends the notifications it
 * was signalled before it answers its next command ("ReadyForQuery"), in commit order. So a barrier
 * sent after A's acknowledgement comes back after A's notification. One barrier serves every
 * request that arrived before it was sent, so under load most requests cost no database query at
 * all, and none takes a connection of the pool. The copies are trusted this way only while the
 * LISTEN connection is up and a full comparison (`syncAll`) has succeeded since it began listening
 * and since the last failed reload; otherwise requests look the version up in the database (see
 * ReplicaSync.sync), as they always did.
 */
export class Replicas implements ReplicaView {
  readonly id = `${process.pid}-${randomUUID()}`;
  private held = new Map<string, number>();
  private validUntil = 0;
  private timer: NodeJS.Timeout | null = null;
  private listener: Client | null = null;
  /** Bumped by anything that may lose a notification: a new or lost LISTEN connection, a failed reload. */
  private epoch = 0;
  /** The epoch in which a full comparison with the database succeeded (copies trusted while it is current). */
  private trustedEpoch = -1;
  /** Reloads started by notifications, not finished yet (each resolves to whether it succeeded). */
  private readonly reloading = new Set<Promise<boolean>>();
  /** The barrier on the LISTEN connection now in flight, and the one that will be sent after it. */
  private barrierInFlight: Promise<void> | null = null;
  private barrierQueued: Promise<void> | null = null;
  private renewing: Promise<void> | null = null;
  private service: QueueService | null = null;
  private workers: QueueWorkers | undefined;
  private closed = false;
  private readonly leaseMs: number;
  private readonly renewMs: number;
  private readonly barrierTimeoutMs: number;
  private readonly log: (message: string, error?: unknown) => void;

  constructor(
    private readonly store: Store,
    private readonly options: ReplicaOptions,
  ) {
    this.leaseMs = options.leaseMs ?? 5000;
    this.renewMs = options.renewMs ?? Math.max(100, Math.floor(this.leaseMs / 5));
    this.barrierTimeoutMs = Math.max(1000, this.renewMs);
    this.log = options.log ?? ((message, error) => console.error(message, error ?? ''));
  }

  fence(queueId: string): Fence | undefined {
    if (Date.now() >= this.validUntil) return undefined;
    const fence = this.held.get(queueId);
    return fence === undefined ? undefined : { holder: this.id, fence };
  }

  /** The queues this replica drives now. */
  driven(): string[] {
    return Date.now() < this.validUntil ? [...this.held.keys()] : [];
  }

  async start(service: QueueService, workers: QueueWorkers | undefined): Promise<void> {
    this.service = service;
    this.workers = workers;
    await this.listen();
    await this.renew();
    this.timer = setInterval(() => void this.renewOnce(), this.renewMs);
    this.timer.unref();
  }

  private async listen(): Promise<void> {
    // pg is imported here, when a replica first listens: loading this module (the test harness
    // does, for every server it starts) costs nothing on SQLite.
    const { Client } = await import('pg');
    const client = new Client({
      connectionString: this.options.databaseUrl,
      application_name: 'railyard-listen',
    });
    client.on('notification', (message) => {
      const [queueId, version] = (message.payload ?? '').split(':');
      if (!queueId || !this.service) return;
      const reload = this.service.replicaSync.refresh(queueId, Number(version) || undefined).then(
        () => true,
        (error: unknown) => {
          // This copy may now be stale with nothing to say so: stop trusting the copies until the next full comparison.
          this.epoch++;
          this.log(`queue ${queueId}: reload failed`, error);
          return false;
        },
      );
      this.reloading.add(reload);
      void reload.then(() => this.reloading.delete(reload));
    });
    const lost = (error?: unknown) => {
      if (this.listener !== client) return;
      // Requests look versions up in the database meanwhile; listen again on the next renewal.
      this.listener = null;
      this.epoch++;
      if (!this.closed) this.log('replica notifications: connection lost', error);
      client.end().catch(() => undefined);
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.connect();
    await client.query(`LISTEN ${QUEUE_CHANNEL}`);
    this.listener = client;
    this.epoch++;
  }

  /**
   * Whether this replica's copies hold every write any replica acknowledged before the call
   * (see the class comment); false when that cannot be known now, and the caller must ask the
   * database. Never throws.
   */
  async caughtUp(): Promise<boolean> {
    const listener = this.listener;
    const epoch = this.epoch;
    if (!listener || this.trustedEpoch !== epoch) return false;
    try {
      await this.barrier(listener);
    } catch {
      return false;
    }
    // The notifications that arrived before the barrier's answer have started their reloads.
    const reloads = await Promise.all(this.reloading);
    return reloads.every(Boolean) && this.epoch === epoch && this.listener === listener;
  }

  /**
   * Resolves once a `SELECT 1` sent on the LISTEN connection after this call has been answered.
   * Callers share barriers: one not sent yet (queued behind the one in flight) serves them all.
   */
  private barrier(listener: Client): Promise<void> {
    if (this.barrierQueued) return this.barrierQueued;
    if (!this.barrierInFlight) return this.sendBarrier(listener);
    const queued = this.barrierInFlight.then(
      () => {
        this.barrierQueued = null;
        return this.sendBarrier(listener);
      },
      (error: unknown) => {
        this.barrierQueued = null;
        throw error;
      },
    );
    this.barrierQueued = queued;
    return queued;
  }

  private sendBarrier(listener: Client): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer on the LISTEN connection in ${this.barrierTimeoutMs} ms`)),
        this.barrierTimeoutMs,
      );
    });
    const sent = Promise.race([listener.query('SELECT 1'), timeout]).finally(() => clearTimeout(timer));
    const inFlight: Promise<void> = sent.then(
      () => undefined,
      (error: unknown) => {
        // A connection that does not answer cannot vouch for anything: drop it, listen again on the next renewal.
        if (this.listener === listener) {
          this.listener = null;
          this.epoch++;
          this.log('replica notifications: connection dropped', error);
          listener.end().catch(() => undefined);
        }
        throw error;
      },
    );
    this.barrierInFlight = inFlight;
    // The in-flight barrier settles one way or the other; whoever queued behind it then sends the next.
    void inFlight
      .catch(() => undefined)
      .then(() => {
        if (this.barrierInFlight === inFlight) this.barrierInFlight = null;
      });
    return inFlight;
  }

  private renewOnce(): Promise<void> {
    this.renewing ??= this.renew().finally(() => (this.renewing = null));
    return this.renewing;
  }

  private async renew(): Promise<void> {
    if (this.closed || !this.service) return;
    const service = this.service;
    const asked = Date.now();
    let claimed: Map<string, number>;
    // Copies are trusted if this comparison starts after LISTEN began and nothing lost a notification meanwhile.
    let epoch = -1;
    try {
      if (!this.listener) await this.listen().catch(() => undefined);
      epoch = this.listener ? this.epoch : -1;
      claimed = await this.store.queues.claimLeases(this.id, this.leaseMs);
      await service.replicaSync.syncAll();
      if (epoch === this.epoch) this.trustedEpoch = epoch;
    } catch (error) {
      if (Date.now() >= this.validUntil && this.held.size) {
        this.log('cannot renew queue leases: this replica stops driving its queues', error);
        this.drop([...this.held.keys()]);
      }
      return;
    }
    if (this.closed) return;
    // Trust the lease for less than its length, counted from before the database granted it.
    const validUntil = asked + this.leaseMs - Math.max(this.renewMs, this.leaseMs / 5);
    const lost = [...this.held.keys()].filter((id) => claimed.get(id) !== this.held.get(id));
    const gained = [...claimed.keys()].filter((id) => this.held.get(id) !== claimed.get(id));
    if (lost.length) this.drop(lost);
    // Bring the copies of newly driven queues up to date before driving them.
    for (const id of gained)
      await service.replicaSync
        .refresh(id)
        .catch((error: unknown) => this.log(`queue ${id}: reload failed`, error));
    this.held = claimed;
    this.validUntil = validUntil;
    for (const id of gained) {
      const queue = service.registry.byQueueId(id);
      if (queue) this.workers?.recover(queue);
    }
  }

  private drop(queueIds: string[]): void {
    for (const id of queueIds) {
      this.held.delete(id);
      const queue = this.service?.registry.byQueueId(id);
      if (queue) this.workers?.release(queue);
    }
  }

  /** Stops renewing and hands the leases back, so another replica takes the queues at once. */
  async close(): Promise<void> {
    this.closed = true;
    this.epoch++;
    if (this.timer) clearInterval(this.timer);
    await this.renewing;
    this.held.clear();
    this.validUntil = 0;
    await this.store.queues
      .releaseLeases(this.id)
      .catch((error: unknown) => this.log('could not release queue leases', error));
    await this.listener?.end().catch(() => undefined);
    this.listener = null;
  }
}
