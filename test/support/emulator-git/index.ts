// Git primitives shared by the forge emulators (test/support/github/, test/support/gitlab/): the
// tracked git runner with ref, commit and merge primitives (runner.ts), new bare repositories and
// their first commit (init.ts), and git over smart HTTP via git http-backend (http-backend.ts).
export {
  branchChanges,
  GitRunner,
  ZERO,
  type BranchChange,
  type CommitInfo,
  type GitIdentity,
} from './runner.js';
export { fetchBranches, initBareRepo, initialCommit, type BareRepoOptions } from './init.js';
export { basicCredentials, HTTP_BACKEND, serveHttpBackend, type HttpBackendRequest } from './http-backend.js';
