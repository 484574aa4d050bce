import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedEnv, railyard } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tempDirSync } from '../support/tmp.js';

let server: TestServer;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer({ tokens: { 'acme-token': 'acme', 'globex-token': 'globex' } });
  env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: 'acme-token' });
  for (const name of ['web', 'api', 'local']) {
    const created = await railyard(['mq', 'queue', 'create', '--repo', `github.com/acme/${name}`], env);
    expect(created.code, created.stderr).toBe(0);
  }
});
afterAll(async () => {
  await server?.close();
});

/** A git checkout whose `origin` is `url`. */
function checkout(url: string): string {
  const dir = tempDirSync('railyard-checkout-');
  execFileSync('git', ['init', '-q', dir]);
  execFileSync('git', ['-C', dir, 'remote', 'add', 'origin', url]);
  return dir;
}

describe('which repository a command is about', () => {
  it("the checkout's origin wins over a saved repo (with a note saying so); --repo wins over both", async () => {
    const home = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: 'acme-token' });
    expect((await railyard(['config', 'set', 'repo', 'github.com/acme/web'], home)).code).toBe(0);
    const dir = checkout('git@github.com:acme/api.git');

    const submitted = await railyard(['mq', 'submit', '31'], home, undefined, dir);
    expect(submitted.code, submitted.stderr).toBe(0);
    expect(submitted.stdout).toBe('Submitted #31 to the main queue of github.com/acme/api\n');
    expect(submitted.stderr.trim()).toBe(
      'railyard: using github.com/acme/api from the origin remote of this checkout, not the saved repo github.com/acme/web (pass --repo to choose)',
    );
    const inApi = await railyard(['mq', 'status', '31', '--repo', 'acme/api', '--json'], home);
    expect(JSON.parse(inApi.stdout).prNumber).toBe(31);
    const inWeb = await railyard(['mq', 'status', '31', '--repo', 'acme/web'], home);
    expect(inWeb.stderr).toContain('#31 was never submitted');

    // An explicit --repo wins, silently.
    const explicit = await railyard(['mq', 'submit', '32', '--repo', 'acme/web'], home, undefined, dir);
    expect(explicit.stdout).toBe('Submitted #32 to the main queue of github.com/acme/web\n');
    expect(explicit.stderr).toBe('');
    // Outside any checkout, the saved repo is the default.
    const outside = await railyard(['mq', 'status', '32', '--json'], home);
    expect(outside.code, outside.stderr).toBe(0);
    expect(JSON.parse(outside.stdout).prNumber).toBe(32);
    expect(outside.stderr).toBe('');
  });

  it('no note when the saved repo is the checkout’s own', async () => {
    const home = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: 'acme-token' });
    expect((await railyard(['config', 'set', 'repo', 'acme/api'], home)).code).toBe(0);
    const result = await railyard(['mq', 'queue', 'get', '--json'], home, undefined, checkout('https://github.com/acme/api.git'));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
  });

  it('a local-path origin under a Railyard git root (DIR/<host>/<owner>/<name>.git) is understood, as a path and as file://', async () => {
    const root = tempDirSync('railyard-gitroot-');
    const bare = join(root, 'github.com', 'acme', 'local.git');
    mkdirSync(bare, { recursive: true });
    execFileSync('git', ['init', '-q', '--bare', bare]);
    for (const [i, url] of [bare, pathToFileURL(bare).href, bare.replace(/\.git$/, '')].entries()) {
      const result = await railyard(['mq', 'submit', `${41 + i}`], env, undefined, checkout(url));
      expect(result.code, `${url}: ${result.stderr}`).toBe(0);
      expect(result.stdout, url).toBe(`Submitted #${41 + i} to the main queue of github.com/acme/local\n`);
    }
    // A path that is no git-root repository is not guessed at: --repo is asked for.
    const plain = await railyard(['mq', 'submit', '41'], env, undefined, checkout(join(root, 'elsewhere', 'clone')));
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain('--repo: required');
  });
});

describe('a wrong --api-url says what is likely wrong', () => {
  it('https:// against the plain-HTTP server: one line naming the fix, no retries, no OpenSSL text', async () => {
    const https = server.url.replace(/^http:/, 'https:');
    const result = await railyard(['mq', 'queue', 'get', '--repo', 'acme/web', '--api-url', https], env);
    expect(result.code).toBe(1);
    const hostPort = new URL(server.url).host;
    expect(result.stderr).toBe(`Error: getQueue: could not speak TLS to ${hostPort}: is it plain HTTP? Try --api-url ${server.url}\n`);
    // --wait gives up at once too: the handshake fails the same way every time.
    const waited = await railyard(['mq', 'status', '1', '--repo', 'acme/web', '--wait', '--timeout', '30s', '--api-url', https], env);
    expect(waited.code).toBe(1);
    expect(waited.stderr).toContain('could not speak TLS');
    expect(waited.stderr).not.toMatch(/SSL|retrying|still waiting/);
  });

  it('an --api-url without /v1 that answers 404 gets a hint; a 404 under /v1 does not', async () => {
    const origin = new URL(server.url).origin;
    for (const url of [origin, `${origin}/`, `${origin}/v2`]) {
      const result = await railyard(['mq', 'queue', 'get', '--repo', 'acme/web', '--api-url', url], env);
      expect(result.code, url).toBe(1);
      expect(result.stderr, url).toBe(`Error: getQueue: not found (404): no such endpoint: POST ${new URL(url).pathname.replace(/\/$/, '')}/getQueue (did you mean --api-url ${server.url}?)\n`);
    }
    const missing = await railyard(['mq', 'queue', 'get', '--repo', 'acme/nothing'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).not.toContain('did you mean');
  });
});

describe("a token of the wrong organisation is named in the error", () => {
  const globex = () => ({ ...env, RAILYARD_TOKEN: 'globex-token' });

  it("queues of another organisation's repository: 404 naming the token's organisation, never the owner", async () => {
    const get = await railyard(['mq', 'queue', 'get', '--repo', 'acme/web'], globex());
    expect(get.code).toBe(1);
    expect(get.stderr).toBe(
      'Error: getQueue: not found (404): no merge queue for branch "main" in acme/web for the token\'s organisation "globex"\n',
    );
    const create = await railyard(['mq', 'queue', 'create', '--repo', 'acme/web'], globex());
    expect(create.code).toBe(1);
    expect(create.stderr).toBe('Error: createQueue: not found (404): repo: no repository acme/web for the token\'s organisation "globex"\n');
    const metrics = await railyard(['mq', 'metrics', '--repo', 'github.com/acme/web'], globex());
    expect(metrics.stderr).toContain('repo: no merge queue in github.com/acme/web for the token\'s organisation "globex"');
    // The owner ("acme") is never named as an organisation.
    for (const r of [get, create, metrics]) expect(r.stderr).not.toContain('"acme"');
  });

  it('flaky commands: an --org that is not the token\'s says whose the token is', async () => {
    const result = await railyard(['flaky', 'list-unhealthy', '--repo', 'acme/web', '--org', 'acme'], globex());
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'Error: listUnhealthyTests: not found (404): org_url_slug: "acme" is not the token\'s organisation "globex"\n',
    );
  });
});
