/**
 * Outgoing webhooks reach a public address without `--webhook-allow-private`. The address check
 * once refused every IPv4 address (a BlockList holding `::ffff:0:0/96` matches them all), so no
 * webhook was ever delivered in production. A receiver on 203.0.113.7 (a documentation range) is
 * run with the real `railyard serve` inside a network namespace this test makes itself
 * (`unshare -n`): nothing is ever sent to that address from the machine's own namespace.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../support/cli.js';
import { tempDir } from '../support/tmp.js';

const PUBLIC = '203.0.113.7';

/** Whether this machine lets the test make a network namespace (root, or user namespaces). */
const canUnshare =
  spawnSync('unshare', ['-n', 'sh', '-c', `ip link set lo up && ip addr add ${PUBLIC}/32 dev lo`], {
    stdio: 'ignore',
  }).status === 0;

/** Runs inside the namespace: a receiver on PUBLIC, `railyard serve` on 127.0.0.1, one test event; prints what arrived. */
const SCENARIO = `
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
const [bin, dataDir] = process.argv.slice(2);
const TOKEN = 'public-address-token';
const got = [];
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => { got.push({ path: req.url, body }); res.end('ok'); });
});
await new Promise((r) => receiver.listen(0, '${PUBLIC}', r));
const port = receiver.address().port;
const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--data-dir', dataDir, '--sandbox', '--webhook-allow-http', '--log-level', 'warn'], {
  env: { ...process.env, RAILYARD_SERVER_TOKEN: TOKEN },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const out = [];
const finish = (result) => { child.kill('SIGKILL'); receiver.close(); console.log(JSON.stringify(result)); process.exit(0); };
setTimeout(() => finish({ error: 'timed out', got }), 60000).unref();
let stdout = '';
const api = await new Promise((resolve) => child.stdout.on('data', (c) => {
  stdout += c;
  const m = /listening on (http:\\/\\/127\\.0\\.0\\.1:\\d+\\/v1)/.exec(stdout);
  if (m) resolve(m[1]);
}));
const call = async (op, body) => {
  const res = await fetch(api + '/' + op, { method: 'POST', headers: { 'x-api-token': TOKEN, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: await res.json().catch(() => null) };
};
const created = await call('createWebhook', { url: 'http://${PUBLIC}:' + port + '/hook' });
out.push(created);
if (created.status !== 200) finish({ created, got });
const tested = await call('testWebhook', { id: created.json.endpoint.id });
if (tested.status !== 200) finish({ created, tested, got });
while (got.length === 0) await new Promise((r) => setTimeout(r, 50));
finish({ created, tested, got });
`;

describe('outgoing webhooks to a public address', () => {
  it.skipIf(!canUnshare)(
    `are delivered to ${PUBLIC} without --webhook-allow-private`,
    { timeout: 90_000 },
    async () => {
      const dir = await tempDir('railyard-public-hook-');
      const script = join(dir, 'scenario.mjs');
      await writeFile(script, SCENARIO);
      const child = spawn(
        'unshare',
        [
          '-n',
          'sh',
          '-c',
          `ip link set lo up && ip addr add ${PUBLIC}/32 dev lo && exec "$0" "$@"`,
          process.execPath,
          script,
          BIN,
          join(dir, 'data'),
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code, stderr).toBe(0);
      const result = JSON.parse(stdout.trim().split('\n').pop()!) as {
        created: { status: number; json: unknown };
        got: Array<{ path: string; body: string }>;
      };
      expect(result.created.status, JSON.stringify(result.created.json)).toBe(200);
      expect(result.got.length).toBeGreaterThan(0);
      expect(result.got[0].path).toBe('/hook');
      expect(JSON.parse(result.got[0].body)).toMatchObject({ type: 'webhook.test' });
    },
  );
});
