/**
 * The GitHub forge driver (`serve --github`): repositories on GitHub (or GitHub Enterprise)
 * through the REST API and git over smart HTTP. Roles: source (source.ts: PR facts, ETag-cached),
 * builder (../shared/builder.ts: test commits built in a bare cache and pushed as `railyard-merge/…`
 * branches), ci (ci.ts: the repository's own CI read back), lander (lander.ts: a fast-forward-only
 * ref update), events (events.ts polling, webhooks.ts `POST /webhooks/github`) and reporter
 * (reporter.ts: status, comment, draft PRs), doctor (doctor.ts: what its token may do). They share one GitHubRuntime (runtime.ts).
 */
import { resolve } from 'node:path';
import type { ForgeDriver } from '../types.js';
import { RemoteBuilder } from '../shared/builder.js';
import { GitHubCi } from './ci.js';
import { GitHubClient, type GitHubAuth } from './client.js';
import { GitHubDoctor } from './doctor.js';
import { GitHubPolling } from './events.js';
import { pushRefs } from './git.js';
import { GitHubForge } from './source.js';
import { GitHubLander } from './lander.js';
import { GitHubReporter } from './reporter.js';
import { GitHubRuntime } from './runtime.js';
import { GitHubWebhooks } from './webhooks.js';
import { ConflictNames } from '../shared/conflicts.js';

export interface GitHubSettings {
  apiUrl: string;
  host: string;
  auth: GitHubAuth;
  webhookSecret: string | null;
  pollMs: number;
  ciStartMs: number;
  writeIntervalMs: number;
  /** `--github-merge-api`: squash/rebase PRs land through the merge API when that is safe (lander.ts). */
  mergeApi?: boolean;
}

export function createGitHubDriver(
  gh: GitHubSettings,
  common: { dataDir: string; log?: (message: string, error?: unknown) => void },
): ForgeDriver {
  const dataDir = resolve(common.dataDir);
  const log =
    common.log ??
    ((message: string, error?: unknown) =>
      console.error(message, error instanceof Error ? error.message : (error ?? '')));
  const client = new GitHubClient({
    apiUrl: gh.apiUrl,
    auth: gh.auth,
    writeIntervalMs: gh.writeIntervalMs,
    log: (m) => log(m),
  });
  // Webhooks keep PR facts current; without them, a read is as fresh as the last poll.
  const forge = new GitHubForge(client, {
    host: gh.host,
    dataDir,
    freshMs: gh.webhookSecret !== null ? 10_000 : gh.pollMs,
  });
  const rt = new GitHubRuntime(forge, {
    dataDir,
    pollMs: gh.pollMs,
    ciStartMs: gh.ciStartMs,
    webhookSecret: gh.webhookSecret,
    log,
  });
  forge.targetHeads = rt.targetHeads;
  const conflicts = new ConflictNames(rt);
  forge.nameConflict = (repo, n, facts) => conflicts.name(repo, n, facts);
  const ci = new GitHubCi(rt);
  const polling = new GitHubPolling(rt, ci);
  const webhooks = new GitHubWebhooks(rt, ci, polling);
  const reporter = new GitHubReporter(rt);
  return {
    kind: 'github',
    source: forge,
    builder: new RemoteBuilder(rt, ci, pushRefs),
    ci,
    lander: new GitHubLander(rt, (q, n, pull) => polling.refreshPr(q, n, pull), gh.mergeApi ?? false),
    events: { start: (host) => polling.start(host), routes: [webhooks.route] },
    reporter,
    doctor: new GitHubDoctor(client),
    async close() {
      rt.closed = true;
      ci.close();
      reporter.close();
      await polling.close();
      await rt.settle();
    },
  };
}
