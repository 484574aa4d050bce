/**
 * What the outgoing-webhook tests of this folder share (webhooks-events.test.ts and
 * webhooks-delivery.test.ts): the servers and receivers a test starts, undone when it ends; an
 * endpoint for a receiver; waiting for a condition; the event types a receiver got for a PR.
 */
import { expect, type TestContext } from 'vitest';
import { onCleanup, ownCleanups, until as waitUntil } from '../support/forge-e2e.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { startTestServer, type TestServer, type TestServerOptions } from '../support/server.js';
import { ok } from './helpers.js';

/*
 * The tests run side by side (`it.concurrent`): most of their time is waiting on deliveries, retry
 * schedules and sandbox runs. What a test starts (`server`, `receiver`, `cleanup`) is its own and
 * undone when it finishes (`mine`), and on PostgreSQL each test has a database of its own.
 */
export const mine = <C extends TestContext>(fn: (ctx: C) => Promise<void>) =>
  ownCleanups<C>('the webhook tests', fn);
export const cleanup = onCleanup;
export async function server(opts?: TestServerOptions): Promise<TestServer> {
  const s = await startTestServer(opts);
  cleanup(() => s.close());
  return s;
}
/** Tests deliver to 127.0.0.1 over plain HTTP; retries come quickly. */
export const LOCAL = {
  allowPrivate: true,
  allowHttp: true,
  retrySchedule: [200, 300, 400, 500, 600],
  timeoutMs: 1000,
  pollMs: 50,
};

/** Answers what `get` answers once it is truthy, looking every 50 ms; fails after `timeoutMs`. */
export const until = <T>(what: string, get: () => T | Promise<T>, timeoutMs = 20_000) =>
  waitUntil(what, get, timeoutMs, 50);

/** A receiver on 127.0.0.1 (test/support/webhook-receiver.ts), closed when the test ends. */
export async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  cleanup(() => r.close());
  return r;
}

/** Creates an endpoint for `r` on `s` (the secret goes to `r`'s verification); answers its id. */
export async function endpoint(
  s: TestServer,
  r: Receiver,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const created = await ok(s, 'createWebhook', { url: r.url, ...extra });
  expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
  r.secrets.push(created.secret);
  return created.endpoint.id as string;
}

/** The types of the events `r` was delivered for PR `pr`, in arrival order. */
export const typesOf = (r: Receiver, pr: number) =>
  r.delivered.filter((d) => d.json.pr_number === pr).map((d) => String(d.json.type));

/** PR `pr`'s lifecycle reached `r` whole and in order: submitted, queued, testing, merged. */
export function expectLifecycleInOrder(r: Receiver, pr: number): void {
  const seen = typesOf(r, pr);
  const order = [
    'pull_request.submitted',
    'pull_request.queued',
    'pull_request.testing',
    'pull_request.merged',
  ].map((t) => seen.indexOf(t));
  expect(
    order.every((i) => i >= 0),
    `#${pr}: ${seen.join(' ')}`,
  ).toBe(true);
  expect(
    [...order].sort((x, y) => x - y),
    `#${pr}`,
  ).toEqual(order);
}
