/**
 * Which failures of a landing are blips worth trying again (src/forge/shared/blips.ts and the
 * GitHub driver's gitHubBlip), judged on real errors: Octokit and git against a server on
 * 127.0.0.1 that answers 502, 422 or a secondary rate limit, or drops the connection, and git
 * against a port nobody listens on. A refusal is never a blip.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Octokit } from '@octokit/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, GitError } from '../../src/git/exec.js';
import { gitHubBlip } from '../../src/forge/github/client.js';
import { gitNetworkFailure, transientStatus } from '../../src/forge/shared/blips.js';
import { tempDir } from '../support/tmp.js';

let server: Server;
let base: string;
let repo: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (path.startsWith('/drop')) return void req.socket.destroy();
    const json = (status: number, message: string) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message }));
    };
    if (path.startsWith('/refused')) return json(422, 'Update is not a fast forward');
    if (path.startsWith('/secondary')) return json(403, 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.');
    if (path.startsWith('/forbidden')) return json(403, 'Resource not accessible by integration');
    res.writeHead(502, { 'content-type': 'text/html' });
    res.end('<html><body><h1>502 Bad Gateway</h1></body></html>\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  repo = await tempDir('railyard-blips-');
  await git(repo, ['init', '--bare', '--quiet']);
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** What Octokit throws for `GET <base>/<path>`. */
async function octokitError(path: string): Promise<unknown> {
  const octokit = new Octokit({ baseUrl: `${base}/${path}` });
  return octokit.request('GET /x').then(
    () => {
      throw new Error('expected the request to fail');
    },
    (error: unknown) => error,
  );
}

/** What git throws for `ls-remote <url>`. */
async function gitError(url: string): Promise<unknown> {
  return git(repo, ['ls-remote', url]).then(
    () => {
      throw new Error('expected git to fail');
    },
    (error: unknown) => error,
  );
}

describe('landing blips', () => {
  it('GitHub: a 5xx, a secondary rate limit and a dropped connection are blips; a 422 or another 403 is an answer', async () => {
    expect(gitHubBlip(await octokitError('gateway'))).toBe('GitHub answered 502');
    expect(gitHubBlip(await octokitError('secondary'))).toBe("GitHub's rate limit (403)");
    expect(gitHubBlip(await octokitError('drop'))).toMatch(/^the connection to GitHub failed \(.+\)$/);
    expect(gitHubBlip(await octokitError('refused'))).toBeNull();
    expect(gitHubBlip(await octokitError('forbidden'))).toBeNull();
    expect(gitHubBlip(new Error('something else'))).toBeNull();
  });

  it('git: an HTTP 502 or a refused connection is a blip; a push refused by a rule is not', async () => {
    const bad = await gitError(`${base}/app.git`);
    expect(bad).toBeInstanceOf(GitError);
    expect(gitNetworkFailure(bad)).toMatch(/502/);
    expect(gitHubBlip(bad)).toMatch(/^git could not reach GitHub \(.*502.*\)$/);
    // A port nobody listens on (the server closed after its address was taken).
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(gitNetworkFailure(await gitError(`http://127.0.0.1:${port}/app.git`))).not.toBeNull();
    const rule = new GitError(
      ['push'],
      1,
      'remote: GitLab: You are not allowed to push code to protected branches on this project.\n' +
        ' ! [remote rejected] abc -> main (pre-receive hook declined)\nerror: failed to push some refs to the remote\n',
    );
    expect(gitNetworkFailure(rule)).toBeNull();
  });

  it('statuses that say "not now": 408, 429 and 5xx', () => {
    expect([408, 429, 500, 502, 503, 504].every(transientStatus)).toBe(true);
    expect([400, 401, 403, 404, 405, 409, 422, undefined].some(transientStatus)).toBe(false);
  });
});
