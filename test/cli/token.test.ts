import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, type TestContext } from 'vitest';
import { SQLITE_FILE } from '../../src/store/index.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { spawnServe, type ServeProcess } from '../support/serve.js';

// The tests run side by side: what each creates and starts goes when it ends (last first).

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'railyard-test-'));
  t.onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function env(t: TestContext): Record<string, string> {
  const e = isolatedEnv();
  t.onTestFinished(() => rm(e.HOME, { recursive: true, force: true }));
  return e;
}

async function serve(t: TestContext, args: string[], extraEnv: Record<string, string> = {}): Promise<ServeProcess> {
  const s = await spawnServe(args, { ...env(t), ...extraEnv });
  t.onTestFinished(() => s.kill());
  return s;
}

const status = async (url: string, token: string) =>
  (await fetch(`${url}/getMergeQueueMetrics`, { headers: { 'x-api-token': token } })).status;

describe.concurrent('railyard token', () => {
  it('creates a token printed once and stored hashed; lists it with its last use; a revoked token gets 401 from a running server at once', async (t) => {
    const dir = await tempDir(t);
    const e = env(t);
    const created = await railyard(
      ['token', 'create', '--data-dir', dir, '--org', 'team-a', '--label', 'CI of web', '--create-database'],
      e,
    );
    expect(created.code).toBe(0);
    expect(created.stderr).toContain(`in ${join(dir, SQLITE_FILE)}`);
    const token = created.stdout.trim();
    expect(token).toMatch(/^ry_[A-Za-z0-9_-]{43,}$/); // ≥ 32 random bytes
    expect(created.stderr).toMatch(/shown only this once/);
    const id = /Created token ([0-9a-f]{12})/.exec(created.stderr)![1];

    // Only the hash is in the database.
    const db = new Database(join(dir, SQLITE_FILE), { readonly: true });
    const dump = JSON.stringify(db.prepare('SELECT * FROM api_tokens').all());
    db.close();
    expect(dump).not.toContain(token);
    expect(dump).toContain(id);

    const before = await railyard(['token', 'list', '--data-dir', dir], e);
    expect(before.code).toBe(0);
    expect(before.stdout).toMatch(
      new RegExp(`^Id\\s+Organisation\\s+Created\\s+Last used\\s+Permissions\\s+Label\\n${id}\\s+team-a\\s+\\d+ (?:seconds?|minutes?) ago\\s+never\\s+all\\s+CI of web\\n$`),
    );
    expect(before.stdout).not.toContain(token);

    const server = await serve(t, ['--data-dir', dir, '--sandbox', '--org', 'team-a']);
    expect(await status(server.url, token)).toBe(200);
    // A second token, created while the server runs, works from its next request.
    const second = (
      await railyard(['token', 'create', '--data-dir', dir, '--org', 'team-b'], e)
    ).stdout.trim();
    expect(await status(server.url, second)).toBe(200);

    const listed = JSON.parse(
      (await railyard(['token', 'list', '--data-dir', dir, '--org', 'team-a', '--json'], e)).stdout,
    );
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id, org: 'team-a', label: 'CI of web' });
    expect(listed[0].lastUsedAt).toBeGreaterThan(Date.now() - 60_000);

    const revoked = await railyard(['token', 'revoke', id, '--data-dir', dir], e);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`Revoked token ${id}`);
    expect(await status(server.url, token)).toBe(401);
    expect(await status(server.url, second)).toBe(200);
    // The token itself also names it; revoking again says there is none.
    const again = await railyard(['token', 'revoke', token, '--data-dir', dir], e);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/no token/);
  });

  it('creates tokens with --permission (repeatable; none: read only), lists them, and a running server refuses what each may not do', async (t) => {
    const dir = await tempDir(t);
    const e = env(t);
    const create = (...args: string[]) => railyard(['token', 'create', '--data-dir', dir, '--org', 'team-a', ...args], e);
    const full = (await create('--create-database', '--label', 'admin')).stdout.trim();
    const made = await create('--permission', 'merge', '--permission', 'priority', '--label', 'CI', '--json');
    expect(made.code).toBe(0);
    const ci = JSON.parse(made.stdout);
    expect(ci.permissions).toEqual(['merge', 'priority']);
    const viewer = await create('--permission', 'none', '--label', 'wallboard');
    expect(viewer.code).toBe(0);
    expect(viewer.stderr).toContain('(permissions: read only)');
    const readOnly = viewer.stdout.trim();

    // A mistyped name: a usage error naming the one meant and the valid ones; nothing is created.
    const typo = await create('--permission', 'skip-batching');
    expect(typo.code).toBe(2);
    expect(typo.stdout).toBe('');
    expect(typo.stderr).toContain('--permission: unknown permission "skip-batching" (did you mean "skip_batching"?)');
    expect(typo.stderr).toContain('merge, priority, skip_batching, direct, settings');
    const mixed = await create('--permission', 'none', '--permission', 'merge');
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain('none (a read-only token) cannot be combined');

    const table = (await railyard(['token', 'list', '--data-dir', dir], e)).stdout;
    expect(table).toMatch(/ all\s+admin\n/);
    expect(table).toMatch(new RegExp(`^${ci.id} .* merge priority\\s+CI$`, 'm'));
    expect(table).toMatch(/ read only\s+wallboard\n/);
    expect(table.trimEnd().split('\n')).toHaveLength(4);
    const listed = JSON.parse((await railyard(['token', 'list', '--data-dir', dir, '--json'], e)).stdout);
    expect(listed.map((t: { label: string; permissions: string[] }) => [t.label, t.permissions])).toEqual([
      ['admin', ['merge', 'priority', 'skip_batching', 'direct', 'settings']],
      ['CI', ['merge', 'priority']],
      ['wallboard', []],
    ]);

    const server = await serve(t, ['--data-dir', dir, '--sandbox', '--org', 'team-a']);
    const post = async (token: string, op: string, body: unknown) => {
      const res = await fetch(`${server.url}/${op}`, {
        method: 'POST',
        headers: { 'x-api-token': token, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, code: res.headers.get('x-railyard-error-code'), text: await res.text() };
    };
    const queue = { repo: { host: 'github.com', owner: 'acme', name: 'web' }, targetBranch: 'main' };
    for (const token of [readOnly, ci.token]) {
      const refused = await post(token, 'createQueue', queue);
      expect(refused).toMatchObject({ status: 403, code: 'insufficient_permissions' });
      expect(refused.text).toMatch(/^INSUFFICIENT_PERMISSIONS: createQueue needs the "settings" permission/);
    }
    expect((await post(readOnly, 'getQueue', queue)).status).toBe(404); // reads are allowed: no queue yet
    expect((await post(full, 'createQueue', queue)).status).toBe(200);
    expect((await post(readOnly, 'submitPullRequest', { ...queue, pr: { number: 1 } })).status).toBe(403);
    expect((await post(ci.token, 'submitPullRequest', { ...queue, pr: { number: 1 }, priority: 'high' })).status).toBe(200);
    const noBatch = await post(ci.token, 'submitPullRequest', { ...queue, pr: { number: 2 }, noBatch: true });
    expect(noBatch.status).toBe(403);
    expect(noBatch.text).toContain('"skip_batching"');
    expect((await post(readOnly, 'getQueue', queue)).text).toContain('"prNumber":1');
    expect((await post(readOnly, 'getQueue', queue)).text).not.toContain('"prNumber":2');
  });

  it('refuses to list, create or revoke tokens of a database that does not exist, and creates none', async (t) => {
    const dir = await tempDir(t);
    const e = env(t);
    const file = join(dir, 'typo', SQLITE_FILE);
    for (const args of [['list'], ['create', '--org', 'team-a'], ['revoke', 'abcdef012345']]) {
      const r = await railyard(['token', ...args, '--data-dir', join(dir, 'typo')], e);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`--data-dir: no database at ${file}`);
      expect(r.stderr).toContain('--create-database');
    }
    expect(existsSync(join(dir, 'typo'))).toBe(false);
    // --json prints what a script needs, the token included.
    const made = await railyard(['token', 'create', '--data-dir', dir, '--create-database', '--json'], e);
    expect(made.code).toBe(0);
    const doc = JSON.parse(made.stdout);
    expect(doc).toMatchObject({ org: 'local', label: null, database: join(dir, SQLITE_FILE) });
    expect(doc.token).toMatch(/^ry_/);
    expect(doc.id).toMatch(/^[0-9a-f]{12}$/);
  });

  it('token list and token create take --format like the other commands; the token goes to stdout only, once', async (t) => {
    const dir = await tempDir(t);
    const e = env(t);
    const tsv = await railyard(['token', 'create', '--data-dir', dir, '--create-database', '--org', 'team-a', '--label', 'CI', '--format', 'tsv'], e);
    expect(tsv.code).toBe(0);
    expect(tsv.stderr).toBe('');
    const lines = tsv.stdout.trimEnd().split('\n').map((l) => l.split('\t'));
    expect(lines.map((l) => l[0])).toEqual(['field', 'id', 'org', 'label', 'permissions', 'token', 'database']);
    const record = Object.fromEntries(lines.slice(1));
    expect(record).toMatchObject({ org: 'team-a', label: 'CI', database: join(dir, SQLITE_FILE) });
    expect(record.token).toMatch(/^ry_[\w-]{43}$/);
    expect(tsv.stdout.split(record.token)).toHaveLength(2); // printed once

    const md = await railyard(['token', 'create', '--data-dir', dir, '--org', 'team-b', '--format', 'markdown'], e);
    expect(md.stdout).toMatch(/^\| field \| value \|\n\| --- \| --- \|\n\| id \| [0-9a-f]{12} \|/);
    expect(md.stderr).not.toMatch(/ry_/);
    const asJson = JSON.parse((await railyard(['token', 'create', '--data-dir', dir, '--org', 'team-c', '--format', 'json'], e)).stdout);
    expect(asJson).toMatchObject({ org: 'team-c', label: null });
    expect(asJson.token).toMatch(/^ry_/);

    const csv = await railyard(['token', 'list', '--data-dir', dir, '--format', 'csv'], e);
    expect(csv.code).toBe(0);
    const rows = csv.stdout.trimEnd().split('\r\n');
    expect(rows[0]).toBe('Id,Organisation,Created,Last used,Permissions,Label');
    expect(rows).toHaveLength(4);
    expect(rows[1]).toMatch(new RegExp(`^${record.id},team-a,\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z,,all,CI$`));
    expect(csv.stdout).not.toMatch(/ry_/);
    const listed = JSON.parse((await railyard(['token', 'list', '--data-dir', dir, '--org', 'team-b', '--format', 'json'], e)).stdout);
    expect(listed).toEqual(JSON.parse((await railyard(['token', 'list', '--data-dir', dir, '--org', 'team-b', '--json'], e)).stdout));
    expect(listed).toHaveLength(1);
    const bad = await railyard(['token', 'list', '--data-dir', dir, '--format', 'xml'], e);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--format/);
  });

  it('serve reads tokens from --token-file and RAILYARD_SERVER_TOKEN, and warns about --token on the command line', async (t) => {
    const dir = await tempDir(t);
    const file = join(dir, 'token');
    await writeFile(file, '# the CI token\nry_from_the_file_0123456789abcdef0123456789abcdef\n', {
      mode: 0o600,
    });
    const server = await serve(t, ['--data-dir', join(dir, 'data'), '--sandbox', '--token-file', file], {
      RAILYARD_SERVER_TOKEN: 'ry_from_the_environment_0123456789abcdef012345',
    });
    expect(await status(server.url, 'ry_from_the_file_0123456789abcdef0123456789abcdef')).toBe(200);
    expect(await status(server.url, 'ry_from_the_environment_0123456789abcdef012345')).toBe(200);
    expect(server.output().stdout).not.toContain('only this once'); // tokens were given
    expect(server.output().stderr).not.toMatch(/warning/);
    await server.kill();

    const loud = await serve(t, [
      '--data-dir',
      join(dir, 'data'),
      '--sandbox',
      '--token',
      'ry_on_the_command_line_000000000000000000000000',
    ]);
    expect(loud.output().stderr).toMatch(/warning: a token on the command line can be read by every user/);
    expect(await status(loud.url, 'ry_on_the_command_line_000000000000000000000000')).toBe(200);

    const missing = await railyard(
      [
        'serve',
        '--data-dir',
        join(dir, 'data'),
        '--sandbox',
        '--port',
        '0',
        '--token-file',
        join(dir, 'nope'),
      ],
      env(t),
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--token-file: cannot read\s[\s\S]*nope \(ENOENT\)/);
  });
});

describe.concurrent('railyard serve', () => {
  it('on a port in use says so in one line before it creates anything (no data dir, no token)', async (t) => {
    const dir = await tempDir(t);
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    t.onTestFinished(() => new Promise<void>((r) => holder.close(() => r())));
    const port = (holder.address() as AddressInfo).port;
    const r = await railyard(
      ['serve', '--sandbox', '--port', String(port), '--data-dir', join(dir, 'data')],
      env(t),
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim()).toBe(
      `railyard serve: port ${port} is in use: stop the other server or use --port 0`,
    );
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });
});
