/**
 * `railyard mq doctor` against the GitLab emulator, end to end: the real built server process
 * (`serve --gitlab`) over real HTTP, and the real `railyard` binary. It names what the server's
 * token may not do in a project — a Reporter role, a target branch only Maintainers may push and
 * merge to, a token without the `api` scope, a protection rule covering the test branches — and a
 * token that expires within 14 days; a read GitLab
 * refuses is named as not checked; a Maintainer token with `api` gets no forge notice. One emulator and one server: each case has its own
 * project (the doctor reads each queue's forge once); the token's scopes and expiry are the
 * server's one token, so those cases change it and put it back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCESS, type GitLabEmulator } from '../support/gitlab/index.js';
import { isolatedEnv, railyard } from '../support/cli.js';
import { sharedResources } from '../support/forge-e2e.js';
import { ok } from '../server/helpers.js';
import {
  API_TOKEN,
  emulator,
  GL_TOKEN,
  startRailyard,
  tempDir,
  type RailyardProcess,
} from './gitlab-harness.js';

interface Notice {
  kind: string;
  text: string;
  permission?: string;
}

let gl: GitLabEmulator;
let server: RailyardProcess;
let close: () => Promise<void>;

const repoOf = (path: string) => {
  const at = path.lastIndexOf('/');
  return { host: gl.host, owner: path.slice(0, at), name: path.slice(at + 1) };
};

/** A project with a queue for `main`. */
async function project(path: string): Promise<void> {
  gl.createProject(path, { files: { 'README.md': 'app\n' } });
  await ok(server, 'createQueue', { repo: repoOf(path), targetBranch: 'main' });
}

async function doctor(path: string): Promise<Notice[]> {
  const r = (await ok(server, 'getMergeQueueDoctor', { repo: repoOf(path), targetBranch: 'main' })) as {
    notices: Notice[];
  };
  return r.notices.filter((n) => n.kind === 'forge_permission');
}

/** The server's token, with other scopes or expiry for the length of `fn`. */
async function withToken<T>(
  opts: { scopes?: string[]; expiresAt?: string },
  fn: () => Promise<T>,
): Promise<T> {
  gl.addToken(GL_TOKEN, { username: 'railyard-bot', ...opts });
  try {
    return await fn();
  } finally {
    gl.addToken(GL_TOKEN, { username: 'railyard-bot' });
  }
}

const dayIn = (days: number) => new Date(Date.now() + days * 24 * 3600_000).toISOString().slice(0, 10);

beforeAll(async () => {
  const shared = await sharedResources('the GitLab shapes', async () => {
    const g = await emulator();
    // Polls would only repeat what hooks say: every 60 s keeps the token's REST use to the doctor's.
    const s = await startRailyard(g, { webhooks: false, dataDir: tempDir('railyard-gl-'), pollSeconds: 60 });
    return { g, s };
  });
  gl = shared.value.g;
  server = shared.value.s;
  close = shared.close;
}, 60_000);
afterAll(() => close?.());

describe('railyard mq doctor (GitLab)', () => {
  it('names nothing of the forge for a Maintainer token with the api scope', async () => {
    await project('acme/fine/app');
    expect(await doctor('acme/fine/app')).toEqual([]);
  });

  it('names push and statuses for a token whose user has the Reporter role, in mq doctor', async () => {
    await project('acme/reporter/app');
    gl.setMember('acme/reporter/app', 'railyard-bot', ACCESS.reporter);
    const env = isolatedEnv({ RAILYARD_API_URL: server.url, RAILYARD_TOKEN: API_TOKEN });
    const r = await railyard(['mq', 'doctor', '--repo', `${gl.host}/acme/reporter/app`, '--json'], env);
    expect(r.code, r.stderr).toBe(1);
    const notices = (JSON.parse(r.stdout) as { notices: Notice[] }).notices;
    expect(notices.map((n) => [n.kind, n.permission])).toEqual([
      ['forge_permission', 'push'],
      ['forge_permission', 'statuses'],
    ]);
    expect(notices[0]!.text).toBe(
      "The GitLab token cannot push to acme/reporter/app (its user has the Reporter role): the queue can neither push test branches nor land; give it the Developer role at least in the project's Manage → Members (for a project or group access token, its bot user; or create a new token with that role).",
    );
    expect(notices[1]!.text).toMatch(
      /^The GitLab token cannot set commit statuses in acme\/reporter\/app \(that needs the Developer role; its user has Reporter\): merge requests never show the queue's railyard\/merge-queue status; /,
    );
  });

  it('names push for a Developer token on a target branch only Maintainers may push and merge to', async () => {
    await project('acme/developer/app');
    gl.setMember('acme/developer/app', 'railyard-bot', ACCESS.developer);
    gl.protectBranch('acme/developer/app', 'main', {
      pushAccessLevel: ACCESS.maintainer,
      mergeAccessLevel: ACCESS.maintainer,
    });
    const notices = await doctor('acme/developer/app');
    expect(notices.map((n) => n.permission)).toEqual(['push']);
    expect(notices[0]!.text).toMatch(
      /^The GitLab token may not push to main in acme\/developer\/app, a protected branch \(Developers may not push and may not merge to it; its user has the Developer role\): the queue lands by pushing the tested commit, so every landing is refused; allow Developers to push and merge to main \(Settings → Repository → Protected branches/,
    );
  });

  it('names who may push for a Maintainer token on a branch no one may push to', async () => {
    await project('acme/locked/app');
    gl.protectBranch('acme/locked/app', 'main', { pushAccessLevel: ACCESS.none });
    const notices = await doctor('acme/locked/app');
    expect(notices.map((n) => n.permission)).toEqual(['push']);
    expect(notices[0]!.text).toContain(
      'a protected branch ("Allowed to push and merge": No one; "Allowed to merge": Maintainers; its user has the Maintainer role)',
    );
  });

  it("names a protection rule covering the test branches: one nobody may push to stops every run, one the token may push to keeps every ended run's branch", async () => {
    await project('acme/tests-locked/app');
    gl.protectBranch('acme/tests-locked/app', 'railyard-*', { pushAccessLevel: ACCESS.none });
    let notices = await doctor('acme/tests-locked/app');
    expect(notices.map((n) => n.permission)).toEqual(['push']);
    expect(notices[0]!.text).toMatch(
      /^The protected branch rule `railyard-\*` in acme\/tests-locked\/app covers the queue's test branches \(railyard-merge\/…\), and the token's user \(the Maintainer role\) may not push to it: no test run can start; /,
    );

    await project('acme/tests-kept/app');
    gl.protectBranch('acme/tests-kept/app', 'railyard-merge/*', { pushAccessLevel: ACCESS.maintainer });
    gl.protectBranch('acme/tests-kept/app', 'release-*'); // covers no test branch
    notices = await doctor('acme/tests-kept/app');
    expect(notices.map((n) => n.permission)).toEqual(['rules']);
    expect(notices[0]!.text).toMatch(
      /^The protected branch rule `railyard-merge\/\*` in acme\/tests-kept\/app covers the queue's test branches \(railyard-merge\/…\): GitLab refuses to delete a protected branch by git push, so the branch of every ended test run stays; /,
    );
  });

  it('names the scope of a read_api token', async () => {
    await project('acme/scope/app');
    const notices = await withToken({ scopes: ['read_api'] }, () => doctor('acme/scope/app'));
    expect(notices.map((n) => n.permission)).toEqual(['scope']);
    expect(notices[0]!.text).toMatch(
      /^The GitLab token lacks the api scope \(its scopes: read_api\): the queue can read merge requests but cannot set the railyard\/merge-queue status or post its note, nor fetch or push test branches or land .*; create a token with the api scope/,
    );
  });

  it('names a token with git scopes only, whose API reads GitLab refuses, without claiming anything else', async () => {
    await project('acme/gitonly/app');
    const notices = await withToken({ scopes: ['read_repository', 'write_repository'] }, () =>
      doctor('acme/gitonly/app'),
    );
    expect(notices.map((n) => n.permission)).toEqual(['scope']);
    expect(notices[0]!.text).toMatch(
      /^The GitLab token's scopes do not let it use GitLab's API \(GET \/projects\/:id: GitLab answered 403 insufficient_scope\), so nothing else could be checked: .*create a token with the api scope/,
    );
  });

  it('names a token GitLab refuses (expired yesterday), without claiming anything else', async () => {
    await project('acme/expired/app');
    const notices = await withToken({ expiresAt: dayIn(-1) }, () => doctor('acme/expired/app'));
    expect(notices.map((n) => n.permission)).toEqual(['token']);
    expect(notices[0]!.text).toMatch(
      /^GitLab refuses the server's token \(GET \/projects\/:id: GitLab answered 401 invalid_token\), so nothing else could be checked: it is revoked, expired or not a token of this GitLab/,
    );
  });

  it('says what it could not check when the target branch cannot be read', async () => {
    gl.createProject('acme/nobranch/app', { files: { 'README.md': 'app\n' } });
    await ok(server, 'createQueue', { repo: repoOf('acme/nobranch/app'), targetBranch: 'release' });
    const r = (await ok(server, 'getMergeQueueDoctor', {
      repo: repoOf('acme/nobranch/app'),
      targetBranch: 'release',
    })) as { notices: Notice[] };
    expect(r.notices.map((n) => [n.kind, n.permission])).toEqual([['forge_permission', 'rules']]);
    expect(r.notices[0]!.text).toMatch(
      /^Could not check whether the GitLab token may push to release in acme\/nobranch\/app \(GitLab answered 404 Branch Not Found\): the target branch must exist/,
    );
  });

  it('names a token that expires in 3 days', async () => {
    await project('acme/expiry/app');
    const day = dayIn(3);
    const notices = await withToken({ expiresAt: day }, () => doctor('acme/expiry/app'));
    expect(notices.map((n) => n.permission)).toEqual(['expiry']);
    expect(notices[0]!.text).toMatch(
      new RegExp(`^The GitLab token expires on ${day} \\(in 3 days\\): from then on GitLab refuses it`),
    );
  });
});
