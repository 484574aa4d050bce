/**
 * The sandbox forge as `railyard serve` knows it (`serve --sandbox`): its flags (how long runs take,
 * which fail); its settings from them, errors one line naming the flag; its web pages, named like
 * GitHub's. The driver is imported only when picked.
 */
import { GITHUB_PAGES, hostedLinks } from '../shared/web-links.js';
import type { ForgeDescription } from '../types.js';
import type { SandboxOutcomes } from './ci.js';

export const sandbox: ForgeDescription<Partial<SandboxOutcomes>> = {
  kind: 'sandbox',
  picker: 'sandbox',
  hint: '--sandbox (simulated)',
  examples: [
    {
      description: 'Try the API with simulated pull requests on a free port',
      command: '<%= config.bin %> serve --sandbox --port 0',
    },
  ],
  flags: {
    sandbox: {
      type: 'boolean',
      description: 'Pull requests come from the sandbox forge (simulated PRs and CI)',
      default: false,
    },
    'sandbox-test-seconds': {
      type: 'integer',
      description: 'Sandbox: how long a test run takes',
      default: 5,
      min: 0,
    },
    'sandbox-fail': {
      type: 'string',
      description: 'Sandbox: runs containing any of these PR numbers fail (comma-separated, e.g. 3,7)',
      helpValue: 'N,M',
    },
    'sandbox-failure-rate': {
      type: 'string',
      description: 'Sandbox: probability (0..1) that a run fails for no reason',
      default: '0',
    },
    seed: {
      type: 'integer',
      description: 'Sandbox: seed of the random failures (same seed, same outcomes)',
      default: 1,
    },
  },
  async settings(flags) {
    const failPrs = new Set<number>();
    for (const part of String(flags['sandbox-fail'] ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)) {
      if (!/^\d+$/.test(part) || Number(part) < 1)
        throw new Error(`--sandbox-fail: "${part}" is not a pull request number`);
      failPrs.add(Number(part));
    }
    const failureRate = Number(flags['sandbox-failure-rate']);
    if (!Number.isFinite(failureRate) || failureRate < 0 || failureRate > 1) {
      throw new Error(
        `--sandbox-failure-rate: expected a probability between 0 and 1, got "${String(flags['sandbox-failure-rate'])}"`,
      );
    }
    return {
      testSeconds: flags['sandbox-test-seconds'] as number,
      failPrs,
      failureRate,
      seed: flags.seed as number,
    };
  },
  links: () => hostedLinks(GITHUB_PAGES),
  driver: async (settings) => (await import('./index.js')).createSandboxDriver(settings),
};
