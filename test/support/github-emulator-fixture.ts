// What the GitHub emulator's tests (github-emulator*.test.ts) share: a validating emulator per test
// (opened and checked by openEmulator / closeEmulator), git run against it without blocking the
// event loop, a webhook receiver on 127.0.0.1, and the token they authenticate with.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Octokit } from '@octokit/core';
import { expect } from 'vitest';
import { gitWithTokenAs } from './git-cli.js';
import { startGitHubEmulator, type GitHubEmulator } from './github/index.js';

/** git run against the emulator without blocking the event loop (it answers in this process). */
export const { git, gitFails } = gitWithTokenAs('x-access-token');

export interface Received {
  event: string;
  /** `X-GitHub-Delivery`; undefined when a replay sent none. */
  id: string | undefined;
  contentType: string;
  /** The raw body (what the signature covers). */
  body: string;
  signature: string;
  /** The JSON payload, also of a form-encoded delivery (its `payload` field). */
  payload: { action?: string } & Record<string, unknown>;
}

/** A webhook receiver on 127.0.0.1 that records what the emulator delivers, JSON or form-encoded. */
export async function startReceiver(): Promise<{ url: string; got: Received[]; server: Server }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const contentType = String(req.headers['content-type']);
      const json = contentType.startsWith('application/x-www-form-urlencoded')
        ? (new URLSearchParams(body).get('payload') ?? '')
        : body;
      got.push({
        event: String(req.headers['x-github-event']),
        id: req.headers['x-github-delivery'] as string | undefined,
        contentType,
        body,
        signature: String(req.headers['x-hub-signature-256']),
        payload: JSON.parse(json) as Received['payload'],
      });
      res.statusCode = 202;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, got, server };
}

export const TOKEN = 'ghp_emulatortesttoken';

/**
 * A test's emulator: validating every answer, the bot's token, `acme/app` with `files`, an Octokit
 * on it and a scratch directory (`work`).
 */
export async function openEmulator(
  files: Record<string, string> = { 'README.md': '# app\n', 'src/a.txt': 'one\n' },
): Promise<{ gh: GitHubEmulator; ok: Octokit; work: string }> {
  const gh = await startGitHubEmulator({ validate: true });
  gh.addToken(TOKEN, { login: 'railyard-bot' });
  gh.createRepo('acme', 'app', { files });
  const ok = new Octokit({ auth: TOKEN, baseUrl: gh.apiUrl });
  const work = await mkdtemp(join(tmpdir(), 'gh-emu-test-'));
  return { gh, ok, work };
}

/** After a test: every REST answer and webhook payload was valid against GitHub's descriptions; then closes and removes. */
export async function closeEmulator(gh: GitHubEmulator, work: string): Promise<void> {
  try {
    await gh.idle();
    expect(gh.schemaViolations).toEqual([]);
  } finally {
    await gh.close();
    await rm(work, { recursive: true, force: true });
  }
}
