/**
 * Bounds on what one request may hold (issue 26, "No single request stalls the server"): JSON
 * nesting, integers far past their field's bound, string lengths of the contract, long test names
 * in reports. Attacks are sent the way the issue sent them, over real HTTP to a real server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/contract/index.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { call, ok, Q, seedValidRequests } from './helpers.js';

const MiB = 1024 * 1024;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ sandbox: { testSeconds: 3600 } });
  await seedValidRequests(server);
});
afterAll(async () => {
  await server?.close();
});

describe('JSON nesting', () => {
  it(`refuses a 20 MiB body of nested arrays at once, naming the bound of ${MAX_JSON_DEPTH}`, async () => {
    const body = '['.repeat(20 * MiB - 1024);
    const t0 = performance.now();
    const answer = await call(server, 'submitPullRequest', body);
    const ms = performance.now() - t0;
    expect(answer.status).toBe(400);
    expect(answer.text).toBe(
      `body: JSON nested deeper than ${MAX_JSON_DEPTH} levels (arrays and objects); no request needs that many`,
    );
    // Main took 7.8 s in JSON.parse (fuzz.test.ts holds the 200 ms bound under a status probe).
    expect(ms).toBeLessThan(2_000);
  });

  it('refuses nested objects hidden after a long string, and counts no bracket inside a string', async () => {
    const deep = '{"a":'.repeat(MAX_JSON_DEPTH + 1) + '1' + '}'.repeat(MAX_JSON_DEPTH + 1);
    const answer = await call(server, 'getQueue', `{"x":"${'[\\"'.repeat(100_000)}","y":${deep}}`);
    expect(answer.status).toBe(400);
    expect(answer.text).toMatch(/nested deeper than 64/);
    // Brackets in strings are text: a valid request full of them is served.
    const ok200 = await call(server, 'getQueue', { ...Q, note: '[[[[{{{{'.repeat(1000) });
    expect(ok200.status).toBe(200);
  });

  it(`takes ${MAX_JSON_DEPTH} levels: the bound is not off by one`, async () => {
    // 64 levels (the body's object is one): the answer is about the fields, not the depth.
    const inner = '['.repeat(MAX_JSON_DEPTH - 2) + ']'.repeat(MAX_JSON_DEPTH - 2);
    const at = await call(server, 'getQueue', `{"repo":{"host":"github.com","owner":"acme","name":"web"},"targetBranch":"main","x":[${inner}]}`);
    expect(at.status).toBe(200);
    const over = await call(server, 'getQueue', `{"repo":{"host":"github.com","owner":"acme","name":"web"},"targetBranch":"main","x":[[${inner}]]}`);
    expect(over.status).toBe(400);
    expect(over.text).toMatch(/nested deeper than 64/);
  });
});

describe('integers past every bound', () => {
  it('names the field’s own bound for pr.number 1e300, not 2^53 - 1', async () => {
    for (const number of [1e300, '99999999999999999999', 2 ** 53]) {
      const answer = await call(server, 'submitPullRequest', { ...Q, pr: { number } });
      expect(answer.status).toBe(400);
      expect(answer.text).toBe('pr.number: must be at most 4294967295');
    }
    const negative = await call(server, 'submitPullRequest', { ...Q, pr: { number: -1e300 } });
    expect(negative.text).toBe('pr.number: must be at least 0');
    const fraction = await call(server, 'submitPullRequest', { ...Q, pr: { number: 1.5 } });
    expect(fraction.text).toBe('pr.number: must be an integer, got a fraction');
    expect(await ok(server, 'getSubmittedPullRequest', { ...Q, pr: { number: 1 } })).toHaveProperty('state');
  });
});
