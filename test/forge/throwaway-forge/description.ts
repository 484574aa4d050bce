/**
 * The throwaway forge's description: what CONTRIBUTING "Adding a forge" asks of a new forge's
 * folder, written for test/forge/throwaway-forge.test.ts. Picked by `--throwaway NAME` (a value, like
 * `--git-root DIR`), one flag of its own, a settings parser refusing a bad value in one line, a
 * start-up line and web pages of its own shape. Like every description: no SDK, the driver
 * imported only when the forge is picked.
 */
import type { ForgeDescription } from '../../../src/forge/types.js';

export interface ThrowawaySettings {
  /** The instance's name, shown in the start-up line and in every page's address. */
  name: string;
  /** How long a test run takes (ms). */
  runMs: number;
}

export const throwaway: ForgeDescription<ThrowawaySettings> = {
  kind: 'throwaway',
  picker: 'throwaway',
  hint: '--throwaway NAME (a forge made up by a test)',
  flags: {
    throwaway: {
      type: 'string',
      description: 'Serve the pull requests of the throwaway forge NAME',
      helpValue: 'NAME',
    },
    'throwaway-run-ms': {
      type: 'integer',
      description: 'Throwaway forge: how long a test run takes',
      default: 200,
      min: 0,
    },
  },
  async settings(flags) {
    const name = String(flags.throwaway);
    if (!/^[a-z]+$/.test(name)) throw new Error(`--throwaway: "${name}" is not a name (a-z)`);
    return { name, runMs: flags['throwaway-run-ms'] as number };
  },
  startup: (settings, url) => [`Throwaway forge "${settings.name}": pull requests by number at ${url}/v1`],
  links: (settings) => ({
    repository: (repo) => `https://${settings.name}.forge.test/r/${repo.owner}/${repo.name}`,
    pr: (repo, n) => `https://${settings.name}.forge.test/r/${repo.owner}/${repo.name}/changes/${n}`,
    file: (repo, ref, path) =>
      `https://${settings.name}.forge.test/r/${repo.owner}/${repo.name}/tree/${ref}/${path}`,
  }),
  driver: async (settings) => (await import('./driver.js')).createThrowawayDriver(settings),
};
