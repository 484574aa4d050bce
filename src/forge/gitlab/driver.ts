/**
 * The GitLab forge driver (`serve --gitlab`): projects on gitlab.com or a self-managed GitLab
 * through REST v4 (@gitbeaker) and git over smart HTTP. Roles: source (source.ts: MR facts),
 * builder (../shared/builder.ts: test commits pushed as `railyard-merge/…` branches for the project's own
 * GitLab CI), ci (ci.ts: the commit statuses of the test commit), lander (lander.ts: a push with
 * the expected old value), events (events.ts polling, webhooks.ts `POST /webhooks/gitlab`),
 * reporter (reporter.ts: status and one note) and doctor (doctor.ts: what its token may do). They
 * share one GitLabRuntime (runtime.ts).
 */
import { resolve } from 'node:path';
import type { ForgeDriver } from '../types.js';
import { RemoteBuilder } from '../shared/builder.js';
import { GitLabCi } from './ci.js';
import { GitLabClient } from './client.js';
import { GitLabDoctor } from './doctor.js';
import { GitLabPolling } from './events.js';
import { pushRefs } from './git.js';
import { GitLabLander } from './lander.js';
import { GitLabReporter } from './reporter.js';
import { GitLabRuntime } from './runtime.js';
import { GitLabSource } from './source.js';
import { GitLabWebhooks } from './webhooks.js';
import { ConflictNames } from '../shared/conflicts.js';

export interface GitLabSettings {
  /** Base URL of the instance, e.g. https://gitlab.com. */
  url: string;
  /** The `repo.host` served. */
  host: string;
  token: string;
  webhookSecret: string | null;
  pollMs: number;
  ciStartMs: number;
}

export function createGitLabDriver(
  gl: GitLabSettings,
  common: { dataDir: string; log?: (message: string, error?: unknown) => void },
): ForgeDriver {
  const dataDir = resolve(common.dataDir);
  const log =
    common.log ?? ((m: string, e?: unknown) => console.error(m, e instanceof Error ? e.message : (e ?? '')));
  const client = new GitLabClient({ url: gl.url, token: gl.token, log: (m) => log(m) });
  // Hooks keep MR facts current; without them, a read is as fresh as the last poll.
  const source = new GitLabSource(client, {
    url: gl.url,
    host: gl.host,
    dataDir,
    freshMs: gl.webhookSecret !== null ? 10_000 : gl.pollMs,
  });
  const rt = new GitLabRuntime(source, {
    dataDir,
    pollMs: gl.pollMs,
    ciStartMs: gl.ciStartMs,
    webhookSecret: gl.webhookSecret,
    token: gl.token,
    log,
  });
  const conflicts = new ConflictNames(rt);
  source.nameConflict = (repo, iid, facts) => conflicts.name(repo, iid, facts);
  const ci = new GitLabCi(rt);
  const polling = new GitLabPolling(rt, ci);
  const webhooks = new GitLabWebhooks(rt, ci, polling);
  const reporter = new GitLabReporter(rt);
  return {
    kind: 'gitlab',
    source,
    builder: new RemoteBuilder(rt, ci, pushRefs),
    ci,
    lander: new GitLabLander(rt, (q, n) => polling.refreshMr(q, n)),
    events: { start: (host) => polling.start(host), routes: [webhooks.route] },
    reporter,
    doctor: new GitLabDoctor(client),
    async close() {
      rt.closed = true;
      ci.close();
      reporter.close();
      await polling.close();
      await rt.settle();
    },
  };
}
