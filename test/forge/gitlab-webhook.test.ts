// Hook deliveries as the GitLab forge receives them: the token compared in constant time, refusals
// in one line, repeats (same event UUID or idempotency key) recognised. Deliveries come from the
// GitLab emulator, so the headers are the ones GitLab sends.
import { createServer } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readHookHeaders, RecentDeliveries, tokenMatches } from '../../src/forge/gitlab/index.js';
import { startGitLabEmulator, type GitLabEmulator } from '../support/gitlab/index.js';

describe('GitLab hook deliveries', () => {
  let gl: GitLabEmulator;
  beforeEach(async () => {
    gl = await startGitLabEmulator();
    gl.addToken('glpat-x');
    gl.createProject('acme/platform/web');
  });
  afterEach(() => gl.close());

  it('compares the token in full, whatever its length', () => {
    expect(tokenMatches('s3cret', 's3cret')).toBe(true);
    expect(tokenMatches('s3cret', 's3cres')).toBe(false);
    expect(tokenMatches('s3cret', 's3cret-and-more')).toBe(false);
    expect(tokenMatches('s3cret', '')).toBe(false);
    expect(tokenMatches('s3cret', undefined)).toBe(false);
    expect(tokenMatches('', '')).toBe(false);
  });

  it('accepts GitLab’s deliveries with the secret, refuses others, and knows a redelivery', async () => {
    const seen: Array<{ status: number; first: boolean | null }> = [];
    const recent = new RecentDeliveries();
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const r = readHookHeaders(req.headers, 'hook-secret');
        seen.push({ status: r.ok ? 200 : r.status, first: r.ok ? recent.firstTime(r.delivery) : null });
        res.writeHead(r.ok ? 200 : r.status).end(r.ok ? 'ok' : r.text);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/webhooks/gitlab`;
      gl.setWebhook(url, 'hook-secret');
      await gl.pushCommit('acme/platform/web', 'feature', { 'a.txt': 'a\n' });
      await gl.idle();
      expect(seen[0]).toEqual({ status: 200, first: true });
      await gl.redeliver(gl.deliveries[0]!.uuid);
      expect(seen.at(-1)).toEqual({ status: 200, first: false });
      gl.setWebhook(url, 'wrong');
      await gl.pushCommit('acme/platform/web', 'feature', { 'a.txt': 'b\n' });
      await gl.idle();
      expect(seen.at(-1)).toEqual({ status: 401, first: null });
      expect(gl.deliveries.at(-1)!.status).toBe(401);
    } finally {
      server.close();
    }
  });

  it('forgets the oldest deliveries beyond its capacity', () => {
    const recent = new RecentDeliveries(2);
    const d = (id: string) => ({ id, idempotencyKey: null });
    expect([recent.firstTime(d('a')), recent.firstTime(d('b')), recent.firstTime(d('a'))]).toEqual([
      true,
      true,
      false,
    ]);
    recent.firstTime(d('c'));
    expect(recent.firstTime(d('a'))).toBe(true);
    expect(recent.firstTime({ id: 'x', idempotencyKey: 'b' })).toBe(true);
    expect(recent.firstTime({ id: 'y', idempotencyKey: 'x' })).toBe(false);
  });
});
