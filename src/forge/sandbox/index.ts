/**
 * The sandbox forge (`serve --sandbox`, the default without a repository): simulated pull
 * requests (source.ts) and simulated test runs (ci.ts). A product feature for trying the API and
 * for demos, never a stand-in for tests of the git path.
 */
import type { ForgeDriver } from '../types.js';
import { DEFAULT_SANDBOX, SandboxRuns, type SandboxOutcomes } from './ci.js';
import { SandboxSource } from './source.js';

export { DEFAULT_SANDBOX, SANDBOX_CHECKS, SandboxRuns, type SandboxOutcomes } from './ci.js';
export { SandboxSource, sandboxHeadSha } from './source.js';

/** The sandbox driver; `outcomes` default to DEFAULT_SANDBOX (5 s runs that pass). */
export function createSandboxDriver(outcomes: Partial<SandboxOutcomes> = {}, now?: () => number): ForgeDriver {
  const runs = new SandboxRuns({ ...DEFAULT_SANDBOX, ...outcomes }, now);
  return { kind: 'sandbox', source: new SandboxSource(), builder: runs, ci: runs, lander: runs, close: async () => undefined };
}
