import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { QUEUE_CHANNEL, type Fence, type Store } from '../store/index.js';
import type { QueueService, ReplicaView } from './service.js';
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
 * This replica among others on one PostgreSQL database (README "Several replicas").
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
 */
export class Replicas implements ReplicaView {
  readonly id = `${process.pid}-${randomUUID()}`;
  private held = new Map<string, number>();
  private validUntil = 0;
  private timer: NodeJS.Timeout | null = null;
  private listener: Client | null = null;
  private renewing: Promise<void> | null = null;
  private service: QueueService | null = null;
  private workers: QueueWorkers | undefined;
  private closed = false;
  private readonly leaseMs: number;
  private readonly renewMs: number;
  private readonly log: (message: string, error?: unknown) => void;

  constructor(
    private readonly store: Store,
    private readonly options: ReplicaOptions,
  ) {
    this.leaseMs = options.leaseMs ?? 5000;
    this.renewMs = options.renewMs ?? Math.max(100, Math.floor(this.leaseMs / 5));
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
    const client = new Client({
      connectionString: this.options.databaseUrl,
      application_name: 'railyard-listen',
    });
    client.on('notification', (message) => {
      const [queueId, version] = (message.payload ?? '').split(':');
      if (!queueId || !this.service) return;
      this.service
        .refresh(queueId, Number(version) || undefined)
        .catch((error: unknown) => this.log(`queue ${queueId}: reload failed`, error));
    });
    client.on('error', (error) => {
      // The periodic comparison keeps copies fresh meanwhile; listen again on the next renewal.
      this.log('replica notifications: connection lost', error);
      if (this.listener === client) this.listener = null;
      client.end().catch(() => undefined);
    });
    await client.connect();
    await client.query(`LISTEN ${QUEUE_CHANNEL}`);
    this.listener = client;
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
    try {
      if (!this.listener) await this.listen().catch(() => undefined);
      claimed = await this.store.claimLeases(this.id, this.leaseMs);
      await service.syncAll();
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
    for (const id of gained) await service.refresh(id).catch((error: unknown) => this.log(`queue ${id}: reload failed`, error));
    this.held = claimed;
    this.validUntil = validUntil;
    for (const id of gained) {
      const queue = service.byQueueId(id);
      if (queue) this.workers?.recover(queue);
    }
  }

  private drop(queueIds: string[]): void {
    for (const id of queueIds) {
      this.held.delete(id);
      const queue = this.service?.byQueueId(id);
      if (queue) this.workers?.release(queue);
    }
  }

  /** Stops renewing and hands the leases back, so another replica takes the queues at once. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.renewing;
    this.held.clear();
    this.validUntil = 0;
    await this.store.releaseLeases(this.id).catch((error: unknown) => this.log('could not release queue leases', error));
    await this.listener?.end().catch(() => undefined);
    this.listener = null;
  }
}
