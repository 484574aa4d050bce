/**
 * The webhook deliverer stopping (what `railyard serve` does on SIGTERM): a delivery it claimed
 * just as it was told to stop is sent once and its attempt recorded before close() returns, so the
 * next start (SQLite forgets claims) does not send it again. The real store on an SQLite file and
 * a slow receiver over HTTP on 127.0.0.1.
 */
import { describe, expect, it } from 'vitest';
import { Deliverer, type DelivererLog } from '../../src/server/webhooks/deliverer.js';
import { openStore, type Store } from '../../src/store/index.js';
import { until } from '../support/forge-e2e.js';
import { tempDir } from '../support/tmp.js';
import { startReceiver } from '../support/webhook-receiver.js';

const OPTIONS = { allowPrivate: true, allowHttp: true, timeoutMs: 5_000, pollMs: 60_000 };

/** Writes one event of PR 1 (one line: its events go out in order) to the outbox. */
async function writeEvent(store: Store, n: number): Promise<void> {
  await store.db
    .transaction()
    .execute((trx) =>
      store.webhooks.writeEvents(trx, 'acme', [
        { type: 'pull_request.submitted', payload: { pr: 1, n }, orderKey: 'pr:1', repoKey: null },
      ]),
    );
}

describe('the webhook deliverer closing', () => {
  it('finishes and records a delivery it was claiming when close() began; the next start does not send it again', async () => {
    const dataDir = await tempDir('railyard-deliverer-close-');
    const receiver = await startReceiver(['whsec_dGVzdA==']);
    // Slow enough that close() would be long done before the answer, were the delivery not waited for.
    receiver.delayMs = 300;
    const errors: string[] = [];
    const log: DelivererLog = {
      info: () => undefined,
      warn: () => undefined,
      error: (_obj, msg) => errors.push(msg),
    };
    let store = await openStore({ dataDir });
    let deliverer: Deliverer | undefined;
    try {
      const { id: endpointId } = await store.webhooks.endpoints.createEndpoint({
        org: 'acme',
        url: receiver.url,
        kind: 'standard',
        description: null,
        events: null,
        repos: null,
        secret: 'whsec_dGVzdA==',
      });
      await writeEvent(store, 1);
      // The deliverer reads its clock right before it claims: that is when close() is called.
      let claiming!: () => void;
      const claimStarted = new Promise<void>((resolve) => (claiming = resolve));
      deliverer = new Deliverer(store.webhooks, OPTIONS, log, () => {
        claiming();
        return Date.now();
      });
      await deliverer.start();
      await claimStarted;
      await deliverer.close();

      expect(receiver.delivered.map((d) => d.json)).toMatchObject([{ pr: 1, n: 1 }]);
      const [delivery] = await store.webhooks.listDeliveries(endpointId, 10);
      expect(delivery).toMatchObject({ state: 'succeeded', attempts: 1, lastStatus: 200 });
      expect(delivery.log.map((a) => [a.status, a.error])).toEqual([[200, null]]);

      // Started again on the same file: only the new event goes out.
      await store.close();
      store = await openStore({ dataDir });
      deliverer = new Deliverer(store.webhooks, OPTIONS, log);
      await deliverer.start();
      await writeEvent(store, 2);
      await until(
        'the second event delivered',
        () => receiver.delivered.length >= 2 || receiver.all.length >= 3,
      );
      expect(receiver.all.map((d) => d.json)).toMatchObject([
        { pr: 1, n: 1 },
        { pr: 1, n: 2 },
      ]);
      expect(new Set(receiver.all.map((d) => d.headers['webhook-id'])).size).toBe(2);
      expect(receiver.all.every((d) => d.verified)).toBe(true);
      expect(errors).toEqual([]);
    } finally {
      await deliverer?.close();
      await store.close();
      await receiver.close();
    }
  });
});
