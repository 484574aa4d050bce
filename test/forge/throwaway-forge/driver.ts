/**
 * The throwaway forge's driver (test/forge/throwaway-forge.test.ts): every pull request exists,
 * open and mergeable; a run's test commit is named after its run, its checks pass after
 * `runMs`, and a landing always lands. The smallest driver the server accepts.
 */
import { createHash } from 'node:crypto';
import type { ForgeDriver } from '../../../src/forge/types.js';
import type { ThrowawaySettings } from './description.js';

const sha = (text: string) => createHash('sha1').update(text).digest('hex');

export function createThrowawayDriver(settings: ThrowawaySettings): ForgeDriver {
  return {
    kind: 'throwaway',
    source: {
      getPullRequest: async (repo, n, queueBranch) => ({
        headSha: sha(`${repo.owner}/${repo.name}#${n}`),
        headBranch: `change-${n}`,
        title: `Change ${n} of ${settings.name}`,
        author: 'someone',
        baseBranch: queueBranch,
        mergeability: 'mergeable',
        open: true,
      }),
    },
    builder: { build: async (_queue, run) => ({ branch: `throwaway/${run.id}`, sha: sha(run.id) }) },
    ci: {
      verdict: (_queue, _run, _sha, signal) =>
        new Promise((resolve) => {
          const timer = setTimeout(
            () => resolve({ passed: true, checks: { test: 'success' } }),
            settings.runMs,
          );
          signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve(null);
          });
        }),
    },
    lander: { land: async () => 'merged' },
    close: async () => undefined,
  };
}
