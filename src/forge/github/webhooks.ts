/**
 * The GitHub driver's webhook route, `POST /webhooks/github` (declared as data; the server mounts
 * it): the body is JSON or form-encoded (`payload=`), the signature is checked on the raw body,
 * deliveries are recorded in the database (a redelivery, or a replay with the same id, even after a
 * restart, does nothing; a command comment acts once, whatever delivery brings it; PR facts older
 * than those known change nothing: events.ts), and the event is handled after the answer — PR changes, CI results (which poke the runs waiting on them), pushes
 * to a target, and `/railyard merge [--priority P]`, `/railyard cancel`, `/railyard restart`
 * comments from users with write access.
 */
import { verify } from '@octokit/webhooks-methods';
import { JSON_TOO_DEEP_MESSAGE, jsonTooDeep } from '../../contract/index.js';
import { findEntry, isTerminal } from '../../engine/index.js';
import { COMMAND_RE, runCommand, type CommandForge } from '../shared/commands.js';
import type { DriverQueue, DriverRoute } from '../types.js';
import { QUEUE_STATUS_CONTEXT } from './checks.js';
import type { GitHubCi } from './ci.js';
import type { GitHubPolling } from './events.js';
import { deliveryJson } from './deliveries.js';
import { repoKey, type GitHubRuntime } from './runtime.js';
import { WritePriority } from './writes.js';

type Answer = { status: number; text: string };

export class GitHubWebhooks {
  private readonly deliveries = new Set<string>();

  constructor(
    private readonly rt: GitHubRuntime,
    private readonly ci: GitHubCi,
    private readonly polling: GitHubPolling,
  ) {}

  readonly route: DriverRoute = {
    method: 'POST',
    path: '/webhooks/github',
    checkHeaders: (headers) => this.checkHeaders(headers),
    handle: (request) => this.receive(request.headers, request.body),
  };

  /** Before the body is read: webhooks on, and a signature of the form GitHub sends (`sha256=` and 64 hex digits). */
  private checkHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Answer | null {
    if (this.rt.options.webhookSecret === null)
      return {
        status: 404,
        text: 'webhooks are off: start the server with --github-webhook-secret-file or RAILYARD_GITHUB_WEBHOOK_SECRET',
      };
    const signature = headers['x-hub-signature-256'];
    if (typeof signature !== 'string' || !/^sha256=[0-9a-f]{64}$/i.test(signature))
      return { status: 401, text: 'x-hub-signature-256: missing or not of the form sha256=<64 hex digits>' };
    return null;
  }

  private async receive(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    body: string,
  ): Promise<Answer> {
    const secret = this.rt.options.webhookSecret;
    if (secret === null)
      return {
        status: 404,
        text: 'webhooks are off: start the server with --github-webhook-secret-file or RAILYARD_GITHUB_WEBHOOK_SECRET',
      };
    const signature = headers['x-hub-signature-256'];
    let valid = false;
    try {
      valid = typeof signature === 'string' && (await verify(secret, body, signature));
    } catch {
      valid = false;
    }
    if (!valid)
      return {
        status: 401,
        text: 'x-hub-signature-256: missing or does not match the body signed with the webhook secret',
      };
    const event = String(headers['x-github-event'] ?? '');
    const delivery = String(headers['x-github-delivery'] ?? '');
    if (delivery && this.deliveries.has(delivery))
      return { status: 200, text: `delivery ${delivery} was handled already` };
    const content = deliveryJson(String(headers['content-type'] ?? ''), body);
    if ('error' in content) return { status: 400, text: content.error };
    if (jsonTooDeep(content.json)) return { status: 400, text: JSON_TOO_DEEP_MESSAGE };
    let payload: unknown;
    try {
      payload = JSON.parse(content.json);
    } catch {
      return { status: 400, text: 'body: invalid JSON' };
    }
    // Recorded in the database (bounded per repository): once handled, a delivery id never acts again.
    const queues = this.queuesOf((payload as { repository?: never } | null)?.repository);
    if (
      delivery &&
      queues.length > 0 &&
      this.rt.host &&
      !(await this.rt.host.remember(queues[0].repo, 'delivery', delivery))
    )
      return { status: 200, text: `delivery ${delivery} was handled already` };
    if (delivery) {
      this.deliveries.add(delivery);
      if (this.deliveries.size > 10_000) this.deliveries.delete(this.deliveries.values().next().value!);
    }
    void this.rt.track(
      this.onEvent(event, payload as Record<string, never>).catch((error: unknown) =>
        this.rt.log(`webhook ${event} ${delivery} failed`, error),
      ),
    );
    return { status: 202, text: 'accepted' };
  }

  private queuesOf(repository: { name?: string; owner?: { login?: string } } | undefined): DriverQueue[] {
    const owner = repository?.owner?.login?.toLowerCase();
    const name = repository?.name?.toLowerCase();
    if (!owner || !name) return [];
    return this.rt
      .queues()
      .filter((q) => this.rt.forge.serves(q.repo) && q.repo.owner === owner && q.repo.name === name);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private async onEvent(event: string, p: any): Promise<void> {
    if (this.rt.closed || !this.rt.host) return;
    const queues = this.queuesOf(p.repository);
    if (queues.length === 0) return;
    // `running`: the payload says the check, suite or status is still queued or running.
    const shaEvent = (sha: string | undefined, running: boolean) => {
      this.ci.changed(sha, running);
      // A check on a PR head may lift (or bring) a branch-protection block.
      void this.rt.track(this.polling.checksChanged(sha));
    };
    switch (event) {
      case 'pull_request': {
        const n = p.pull_request?.number ?? p.number;
        for (const q of queues) {
          const e = findEntry(q.model, n);
          // The payload holds the whole pull request: used as it is when newer than what is known.
          if (e && !isTerminal(e.state)) await this.polling.refreshPr(q, n, p.pull_request);
        }
        break;
      }
      case 'pull_request_review': {
        // A review may lift (or bring) a branch-protection block: GitHub's answer decides.
        const n = p.pull_request?.number;
        for (const q of queues) {
          const e = findEntry(q.model, n);
          if (e && !isTerminal(e.state)) await this.polling.refreshPr(q, n);
        }
        break;
      }
      case 'check_run':
        shaEvent(
          p.check_run?.head_sha,
          typeof p.check_run?.status === 'string' && p.check_run.status !== 'completed',
        );
        break;
      case 'check_suite':
        shaEvent(
          p.check_suite?.head_sha,
          typeof p.check_suite?.status === 'string' && p.check_suite.status !== 'completed',
        );
        break;
      case 'status':
        if (p.context !== QUEUE_STATUS_CONTEXT) shaEvent(p.sha, p.state === 'pending');
        break;
      case 'push':
        if (
          typeof p.ref === 'string' &&
          p.ref.startsWith('refs/heads/') &&
          queues.some((q) => `refs/heads/${q.model.branch}` === p.ref)
        ) {
          const branch = p.ref.slice('refs/heads/'.length);
          const mine = queues.filter((q) => q.model.branch === branch);
          const key = `${repoKey(mine[0].repo)} ${branch}`;
          const before = this.rt.targetHeads.get(key);
          const after: string | undefined = p.after;
          if (!after || after === before || /^0+$/.test(after) || this.rt.own(mine[0].repo).has(after)) break;
          // A late or replayed push names an old head: only the branch as git reads it now counts.
          const c = await this.rt.ctx(mine[0].repo);
          const now = await this.rt.fetch(c, branch, []);
          if (!now || now === before || this.rt.own(mine[0].repo).has(now)) break;
          this.rt.targetHeads.set(key, now);
          for (const q of mine) await this.rt.dispatch(q, { type: 'targetMoved' });
        }
        break;
      case 'issue_comment':
        if (
          p.action === 'created' &&
          p.issue?.pull_request &&
          COMMAND_RE.test(String(p.comment?.body ?? ''))
        ) {
          // A command comment acts once, ever: whatever delivery (a new id, none) brings it again.
          const id = p.comment?.id;
          if (
            id === undefined ||
            id === null ||
            !this.rt.host ||
            !(await this.rt.host.remember(queues[0].repo, 'comment', String(id)))
          ) {
            this.rt.log(
              `/railyard command in comment ${String(id)} on #${p.issue.number} ignored: it was handled already`,
            );
            break;
          }
          await this.command(queues, p.issue.number, p.comment?.user?.login, String(p.comment?.body ?? ''));
        }
        break;
    }
  }

  /** `/railyard merge [--priority P]`, `/railyard cancel`, `/railyard restart` from a user with write access. */
  private readonly commands: CommandForge<string> = {
    ref: (n) => `#${n}`,
    nameOf: (user) => user,
    baseBranch: async (repo, n, queueBranch) =>
      (await this.rt.forge.getPullRequest(repo, n, queueBranch))?.baseBranch ?? null,
    allowed: async (repo, user) => {
      const perm = await this.rt.forge.client.request<{ permission: string; role_name?: string }>(
        repo.owner,
        repo.name,
        'GET /repos/{owner}/{repo}/collaborators/{username}/permission',
        { username: user },
      );
      return (
        ['admin', 'write', 'maintain'].includes(perm.data.role_name ?? perm.data.permission) ||
        ['admin', 'write'].includes(perm.data.permission)
      );
    },
    denied: 'no write permission',
    reply: async (repo, n, body) => {
      // An answer someone waits for: with the comments of decided PRs, ahead of progress updates.
      await this.rt.forge.client.write(
        repo.owner,
        repo.name,
        'POST /repos/{owner}/{repo}/issues/{issue_number}/comments',
        { issue_number: n, body },
        { priority: WritePriority.finalComment },
      );
    },
  };

  private async command(
    queues: DriverQueue[],
    prNumber: number,
    user: string | undefined,
    body: string,
  ): Promise<void> {
    if (!user || !this.rt.host) return;
    await runCommand(this.rt.host, (m) => this.rt.log(m), this.commands, queues, prNumber, user, body);
  }
}
