/** Errors of the git forge's repository operations; the start failures every forge shares live in ../errors.ts. */
export { ChecksConfigError, MergeConflictError } from '../errors.js';

/** casUpdateBranch was asked to move a branch to a commit that does not contain its current head. */
export class NotFastForwardError extends Error {
  constructor(
    readonly branch: string,
    readonly oldSha: string,
    readonly newSha: string,
  ) {
    super(`branch ${branch}: ${newSha.slice(0, 12)} does not contain ${oldSha.slice(0, 12)}, refusing a non-fast-forward update`);
    this.name = 'NotFastForwardError';
  }
}
