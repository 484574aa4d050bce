/**
 * What the GitLab emulator's tests (gitlab-emulator*.test.ts) share: an emulator per test with the
 * token they authenticate with and PROJECT, a @gitbeaker/rest client on it and a scratch directory
 * (openEmulator), checked against GitLab's schemas when it closes (closeEmulator); raw requests to
 * its REST API; git run against it without blocking the event loop.
 */
import { rm } from 'node:fs/promises';
import { Gitlab } from '@gitbeaker/rest';
import { expect } from 'vitest';
import { gitWithTokenAs } from './git-cli.js';
import { startGitLabEmulator, type GitLabEmulator } from './gitlab/index.js';
import { tempDir } from './tmp.js';

export const TOKEN = 'glpat-test-0000000000';
export const PROJECT = 'acme/platform/app';

/** git against the emulator with a token as HTTP Basic (user oauth2), no user or system config. */
export const { git, gitFails } = gitWithTokenAs('oauth2');

export type GitLabApi = InstanceType<typeof Gitlab>;

/** A test's emulator: TOKEN, PROJECT (owned by acme-admin) with `files`, a client on it and a scratch directory. */
export async function openEmulator(
  files: Record<string, string>,
): Promise<{ gl: GitLabEmulator; api: GitLabApi; work: string }> {
  const gl = await startGitLabEmulator();
  gl.addToken(TOKEN);
  gl.createProject(PROJECT, { owner: 'acme-admin', files });
  const api = new Gitlab({ host: gl.url, token: TOKEN });
  const work = await tempDir('gl-emu-');
  return { gl, api, work };
}

/** After a test: closes the emulator, removes the scratch directory, then fails on any answer GitLab's schemas refuse. */
export async function closeEmulator(gl: GitLabEmulator, work: string): Promise<void> {
  const violations = [...gl.schemaViolations];
  await gl.close();
  await rm(work, { recursive: true, force: true });
  expect(violations).toEqual([]);
}

/** A request to the emulator's REST API with TOKEN, another `token`, or none (`token: null`). */
export function rawRequest(
  gl: GitLabEmulator,
  path: string,
  init: RequestInit & { token?: string | null } = {},
): Promise<Response> {
  return fetch(`${gl.apiUrl}${path}`, {
    ...init,
    headers: {
      'content-type': 'application/json',
      ...(init.token === null ? {} : { 'private-token': init.token ?? TOKEN }),
    },
  });
}
