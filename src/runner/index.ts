/**
 * The check runner: runs the required checks of `railyard.json` against a test commit, each in a
 * directory of its own outside the data dir, as a uid of its own when the server runs as root,
 * optionally inside bubblewrap, with an allowlisted environment, time and output limits, and logs
 * on disk. See run.ts for the contract and isolation.ts for the isolation.
 */
export { runChecks, resolveRequiredChecks, logFileNames } from './run.js';
export type { CheckOutcome, CheckResult, RunChecksOptions, RunChecksResult } from './run.js';
export {
  CHECKS_SANDBOXES,
  DEFAULT_CHECK_OUTPUT_BYTES,
  DEFAULT_CHECK_TIMEOUT_MS,
  DEFAULT_CHECK_UID_BASE,
  checksDirProblem,
  gitRootExposure,
  isolationProblem,
  prepareChecksRoot,
  checksRootPath,
  reservedEnvName,
} from './isolation.js';
export type { CheckIsolationOptions, ChecksSandbox } from './isolation.js';
export { DEFAULT_CHECK_LIMITS, describeLimits, limitDetail } from './limits.js';
export type { CheckLimits } from './limits.js';
export { collectReports, type CheckReport } from './reports.js';
export { ChecksConfigError } from '../checks/config.js';
