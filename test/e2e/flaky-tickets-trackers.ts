/**
 * The tracker emulators of the flaky-ticket tests behind one face (flaky-tickets-harness.ts):
 * GitHub Issues on the GitHub emulator, GitLab issues on the GitLab emulator, and Jira (Cloud REST
 * v3, Data Center REST v2) on the Jira emulator (test/support/jira/).
 */
import { startGitHubEmulator } from '../support/github/index.js';
import {
  closeIssueAs,
  issuesOf,
  refusedIssueRequests,
  setIssuesDown,
} from '../support/github/routes-issues.js';
import { startGitLabEmulator } from '../support/gitlab/index.js';
import * as glIssues from '../support/gitlab/routes-issues.js';
import { startJiraEmulator, textOf } from '../support/jira/index.js';
import type { TrackerUnderTest } from './flaky-tickets-harness.js';

export async function githubTracker(): Promise<TrackerUnderTest> {
  const gh = await startGitHubEmulator({ validate: true });
  gh.addToken('ghp_tickets', { login: 'railyard-bot' });
  gh.createRepo('acme', 'tracker', { files: { 'README.md': '# tracker\n' } });
  return {
    system: 'github',
    project: 'acme/tracker',
    apiUrl: gh.apiUrl,
    token: 'ghp_tickets',
    tickets: () =>
      issuesOf(gh.world, 'acme', 'tracker').map((i) => ({
        key: String(i.number),
        url: `${gh.world.urls.web}/acme/tracker/issues/${i.number}`,
        open: i.state === 'open',
        title: i.title,
        body: i.body ?? '',
        comments: i.comments.map((c) => c.body),
      })),
    closeAsPerson: (key) => closeIssueAs(gh.world, 'acme', 'tracker', Number(key), 'alice'),
    setDown: (on) => setIssuesDown(gh.world, on),
    refused: () => refusedIssueRequests(gh.world),
    schemaViolations: () => gh.schemaViolations,
    close: () => gh.close(),
  };
}

export async function gitlabTracker(): Promise<TrackerUnderTest> {
  const gl = await startGitLabEmulator();
  gl.addToken('glpat-tickets', { username: 'railyard-bot' });
  const alice = gl.addToken('glpat-alice', { username: 'alice' });
  const path = 'acme/platform/tracker';
  gl.createProject(path, { files: { 'README.md': '# tracker\n' } });
  return {
    system: 'gitlab',
    project: path,
    apiUrl: gl.url,
    token: 'glpat-tickets',
    tickets: () =>
      glIssues.issuesOf(gl.world, path).map((i) => ({
        key: String(i.iid),
        url: `${gl.url}/${path}/-/issues/${i.iid}`,
        open: i.state === 'opened',
        title: i.title,
        body: i.description,
        comments: i.notes.map((n) => n.body),
      })),
    closeAsPerson: (key) => glIssues.closeIssueAs(gl.world, path, Number(key), alice),
    setDown: (on) => glIssues.setIssuesDown(gl.world, on),
    refused: () => glIssues.refusedIssueRequests(gl.world),
    schemaViolations: () => gl.schemaViolations,
    close: () => gl.close(),
  };
}

/** Jira Cloud (v3: the address pins /rest/api/3, as a 127.0.0.1 address would otherwise mean Data Center) or Data Center (v2). */
export async function jiraTracker(version: 2 | 3): Promise<TrackerUnderTest> {
  const jira = await startJiraEmulator(version, 'WEB');
  return {
    system: 'jira',
    project: 'WEB',
    apiUrl: version === 3 ? `${jira.url}/rest/api/3` : jira.url,
    token: jira.token,
    tickets: () =>
      [...jira.issues.values()].map((i) => ({
        key: i.key,
        url: `${jira.url}/browse/${i.key}`,
        open: i.status !== 'done',
        title: i.summary,
        body: textOf(i.description),
        comments: i.comments.map((c) => textOf(c.body)),
      })),
    closeAsPerson: (key) => jira.closeAsPerson(key),
    setDown: (on) => jira.setDown(on),
    refused: () => jira.refused,
    schemaViolations: () => jira.schemaViolations,
    close: () => jira.close(),
  };
}
