/**
 * Outgoing webhooks through the real binaries: the `railyard webhook` commands against a running
 * `railyard serve`, a server killed with SIGKILL in the middle of a burst of deliveries (after a
 * restart nothing is lost, and a duplicate carries the same webhook-id), and one stopped while its
 * deliverer thread has an attempt in flight (it is finished and recorded before the exit).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, type TestContext } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import { spawnServe, type ServeProcess } from '../support/serve.js';
import { startReceiver, type Received } from '../support/webhook-receiver.js';

// The three tests run side by side: what each creates and starts goes when it ends (last first).
const TOKEN = 'webhook-e2e-token';

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'railyard-test-'));
  t.onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function env(t: TestContext): Record<string, string> {
  const e = isolatedEnv({ RAILYARD_TOKEN: TOKEN });
  t.onTestFinished(() => rm(e.HOME, { recursive: true, force: true }));
  return e;
}

async function serve(t: TestContext, dir: string, extra: string[] = [], logLevel = 'warn'): Promise<ServeProcess> {
  const s = await spawnServe(
    ['--data-dir', dir, '--sandbox', '--sandbox-test-seconds', '0', '--webhook-allow-private', '--webhook-allow-http', '--log-level', logLevel, ...extra],
    { ...env(t), RAILYARD_SERVER_TOKEN: TOKEN },
  );
  t.onTestFinished(() => s.kill());
  return s;
}

async function api(url: string, op: string, body: unknown): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(`${url}/${op}`, { method: 'POST', headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`${op}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function until<T>(what: string, get: () => T | Promise<T>, timeoutMs = 60_000): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await get();
    if (value) return value as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const REPO = { host: 'github.com', owner: 'acme', name: 'web' };

describe.concurrent('railyard webhook', () => {
  it('creates an endpoint (id and secret printed once), lists, tests, shows the log, replays, disables and deletes it', { timeout: 180_000 }, async (t) => {
    const receiver = await startReceiver();
    t.onTestFinished(() => receiver.close());
    const s = await serve(t, await tempDir(t));
    const e = { ...env(t), RAILYARD_API_URL: s.url };

    const created = await railyard(['webhook', 'create', '--url', receiver.url, '--event', 'pull_request.merged', '--json'], e);
    expect(created.code, created.stderr).toBe(0);
    const { id, secret } = JSON.parse(created.stdout) as { id: string; secret: string };
    expect(id).toMatch(/^ep_[0-9a-f]{24}$/);
    expect(secret).toMatch(/^whsec_/);
    receiver.secrets.push(secret);

    const human = await railyard(['webhook', 'create', '--url', receiver.url, '--kind', 'slack'], e);
    expect(human.stdout).toMatch(/^Created webhook endpoint ep_\w+ \(slack\) for http:\/\/127\.0\.0\.1:\d+\/hook\nSigning secret \(shown only this once; keep it where your receiver reads it\):\n {2}whsec_\S+\n$/);

    const list = await railyard(['webhook', 'list'], e);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain(id);
    expect(list.stdout).toContain('pull_request.merged');
    expect(list.stdout).not.toContain(secret);

    const bad = await railyard(['webhook', 'create', '--url', receiver.url, '--event', 'pull_request.exploded'], e);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--event: unknown event "pull_request.exploded" (pull_request.*, ');

    const test = await railyard(['webhook', 'test', id], e);
    expect(test.code, test.stderr).toBe(0);
    expect(test.stdout).toMatch(/^Sent test event msg_[0-9a-f]{32} to ep_/);
    await until('the test event', () => receiver.delivered.find((d) => d.json.type === 'webhook.test'));
    expect(receiver.delivered[0].verified).toBe(true);

    const log = await until('a finished delivery in the log', async () => {
      const r = await railyard(['webhook', 'deliveries', id, '--json'], e);
      const parsed = JSON.parse(r.stdout) as { deliveries: { id: number; state: string; webhookId: string }[] };
      return parsed.deliveries[0]?.state === 'succeeded' ? parsed.deliveries : null;
    });
    const table = await railyard(['webhook', 'deliveries', id], e);
    expect(table.stdout).toMatch(/webhook\.test/);
    expect(table.stdout).toMatch(/succeeded/);

    const replay = await railyard(['webhook', 'replay', String(log[0].id)], e);
    expect(replay.code, replay.stderr).toBe(0);
    await until('the replayed event', () => receiver.delivered.length === 2);
    expect(receiver.delivered[1].headers['webhook-id']).toBe(log[0].webhookId);

    expect((await railyard(['webhook', 'disable', id], e)).stdout).toBe(`Disabled webhook endpoint ${id}\n`);
    expect((await railyard(['webhook', 'list', '--json'], e)).stdout).toContain('"state": "disabled"');
    expect((await railyard(['webhook', 'delete', id, '--yes'], e)).stdout).toBe(`Deleted webhook endpoint ${id}\n`);
    const gone = await railyard(['webhook', 'test', id], e);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain(`id: no webhook endpoint ${id}`);
  });
});

describe.concurrent('a server killed mid-delivery', () => {
  it('loses no event: after a restart every delivery reaches the receiver, a duplicate only with the same webhook-id', { timeout: 180_000 }, async (t) => {
    const receiver = await startReceiver();
    t.onTestFinished(() => receiver.close());
    receiver.delayMs = 30;
    const dir = await tempDir(t);
    let s = await serve(t, dir);
    const { secret, endpoint } = await api(s.url, 'createWebhook', { url: receiver.url });
    receiver.secrets.push(secret);
    await api(s.url, 'createQueue', { repo: REPO, targetBranch: 'main', concurrency: 5 });
    const PRS = 30;
    await Promise.all(Array.from({ length: PRS }, (_, i) => api(s.url, 'submitPullRequest', { repo: REPO, targetBranch: 'main', pr: { number: i + 1 } })));
    await until('deliveries under way', () => receiver.all.length >= 20);
    await s.kill();
    const before = receiver.all.length;
    s = await serve(t, dir);

    const deliveries = await until('every PR merged and every delivery finished', async () => {
      const { pullRequests } = await api(s.url, 'listPullRequests', { repo: REPO, targetBranch: 'main', state: 'merged', take: 100 });
      if (pullRequests.length < PRS) return null;
      const { deliveries } = await api(s.url, 'listWebhookDeliveries', { id: endpoint.id, limit: 500 });
      return deliveries.every((d: { state: string }) => d.state === 'succeeded') ? (deliveries as { webhookId: string }[]) : null;
    }, 120_000);
    expect(receiver.all.length).toBeGreaterThan(before);

    const got = new Map<string, Received[]>();
    for (const d of receiver.delivered) got.set(String(d.headers['webhook-id']), [...(got.get(String(d.headers['webhook-id'])) ?? []), d]);
    // Nothing lost: every event the server committed reached the receiver.
    for (const d of deliveries) expect(got.has(d.webhookId), d.webhookId).toBe(true);
    for (let pr = 1; pr <= PRS; pr++)
      expect(receiver.delivered.some((d) => d.json.type === 'pull_request.merged' && d.json.pr_number === pr), `merged #${pr}`).toBe(true);
    // A duplicate is the same event under the same id, never the same event under another id.
    for (const copies of got.values()) expect(new Set(copies.map((c) => c.body)).size).toBe(1);
    const events = receiver.delivered.map((d) => JSON.stringify([d.json.type, d.json.pr_number, d.json.timestamp, (d.json.railyard as { queue_entry_id?: string })?.queue_entry_id]));
    const idsPerEvent = new Map<string, Set<string>>();
    receiver.delivered.forEach((d, i) => idsPerEvent.set(events[i], (idsPerEvent.get(events[i]) ?? new Set()).add(String(d.headers['webhook-id']))));
    for (const [event, ids] of idsPerEvent) expect(ids.size, event).toBe(1);
    expect(receiver.delivered.every((d) => d.verified)).toBe(true);
  });
});

describe.concurrent('a server stopped mid-delivery', () => {
  it('finishes the attempt in flight on the deliverer thread and records it before it exits: nothing sent twice after a restart', { timeout: 120_000 }, async (t) => {
    const receiver = await startReceiver();
    t.onTestFinished(() => receiver.close());
    receiver.delayMs = 2000;
    const dir = await tempDir(t);
    let s = await serve(t, dir, [], 'info');
    const { secret, endpoint } = await api(s.url, 'createWebhook', { url: receiver.url });
    receiver.secrets.push(secret);
    await api(s.url, 'testWebhook', { id: endpoint.id });
    await until('the attempt in flight', () => receiver.all.length >= 1);
    // The thread starts with the first write to the outbox (none before: a server without webhooks never starts it).
    await until('the deliverer thread says it started', () =>
      s.output().stdout.includes('webhook deliverer: on its own thread with its own database connection'),
    );
    await s.stop(60_000);
    expect(await s.exit).toBe(0);
    expect(receiver.delivered).toHaveLength(1);
    s = await serve(t, dir);
    const { deliveries } = await api(s.url, 'listWebhookDeliveries', { id: endpoint.id });
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ state: 'succeeded', webhookId: receiver.all[0].headers['webhook-id'] });
    expect(deliveries[0].log).toHaveLength(1);
    expect(deliveries[0].log[0]).toMatchObject({ status: 200 });
  });
});
