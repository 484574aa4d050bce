/**
 * The forge driver interface: what the server asks of the place where code and pull requests
 * live. Each forge is one folder under src/forge/ (one per forge: see the list in registry.ts)
 * exporting one `ForgeDriver`, made of roles, each in the file of the same name in every folder:
 *
 * - source   — the facts of a pull request and whether it already landed;
 * - builder  — the test commit of a run, built on what the engine named (TestBasis);
 * - ci       — the checks of a test commit: run them (git), read the forge's CI (github), or
 *              simulate them (sandbox);
 * - lander   — the compare-and-swap that moves the target branch to a tested commit;
 * - events   — changes made outside the queue (webhooks, polling) turned into engine events, and
 *              the HTTP routes the driver needs (declared as data; the server mounts them);
 * - reporter — what the forge shows of the queue: statuses, comments, draft pull requests.
 *
 * A driver never imports Fastify or the queue service: the server hands it a `DriverHost`.
 * Besides its driver, a forge's folder holds its description (description.ts: flags, settings,
 * start-up line, web addresses; ForgeDescription below), which src/forge/registry.ts lists.
 */
import type { PriorityInput, Repo } from '../contract/index.js';
import type { EngineEvent, FailedTest, PrFacts, QueueModel, TestBasis, TestRun } from '../engine/types.js';

/**
 * Where an open pull request stands against the branch it would land in: `open` (there is
 * something to land), `merged` (the forge says so, or its changes are already in the target)
 * or `closed` (closed without merging).
 */
export type PrLandingState = { state: 'open' } | { state: 'merged' | 'closed'; detail: string };

/** A queue as a driver sees it. `model` is the committed model: read it again after an await. */
export interface DriverQueue {
  readonly id: string;
  readonly org: string;
  readonly repo: Repo;
  readonly model: QueueModel;
}

/** What the server offers a driver. */
export interface DriverHost {
  /** The queues this server drives (with several replicas: those whose lease it holds). */
  queues(): DriverQueue[];
  /** Feeds an event to a queue's engine through its single writer; failures are logged, not thrown. */
  dispatch(queue: DriverQueue, event: EngineEvent): Promise<void>;
  /**
   * A command from the forge (e.g. a `/railyard merge` comment), with the same checks as the API.
   * Throws an error whose message is for people when it is refused.
   */
  command(queue: DriverQueue, prNumber: number, command: ForgeCommand): Promise<void>;
  /**
   * Records that the driver acted on a forge event (a webhook delivery id, a command comment id)
   * in the database, bounded per repository: true the first time, false ever after — also after a
   * restart and on another replica. A replayed delivery does nothing.
   */
  remember(repo: Repo, kind: 'delivery' | 'comment', key: string): Promise<boolean>;
}

export type ForgeCommand =
  | { type: 'submit'; priority?: PriorityInput }
  | { type: 'cancel' }
  | { type: 'restart' };

/** How a pull request that is no longer open ended, as the forge says. */
export type ClosedAs = 'merged' | 'closed';

/** A pull request's facts as a forge reads them: the engine's facts, and how it ended when it is closed. */
export interface ForgePrFacts extends PrFacts {
  /** Set when `open` is false and the forge records it (GitHub, GitLab); unset: `closed`. */
  closedAs?: ClosedAs;
}

/** The facts of pull requests. */
export interface Source {
  /**
   * The longest `repo.owner` this forge has on `host` (docs/decisions.md): unset means
   * REPO_OWNER_MAX (39, GitHub's); GitLab widens it to REPO_NAMESPACE_MAX (a namespace path).
   */
  ownerMaxLength?(host: string): number;
  /**
   * What names `repo` across renames and moves (GitLab: the project's id), or null when unknown:
   * two queues of repositories with the same identity would drive one branch, so the second is
   * refused. Optional: without it a repository is its name.
   */
  repoIdentity?(repo: Repo): Promise<string | null>;
  /** The facts of PR `prNumber` of `repo` as seen by the queue of `queueBranch`; null when it does not exist. */
  getPullRequest(repo: Repo, prNumber: number, queueBranch: string): Promise<ForgePrFacts | null>;
  /**
   * Whether the PR (whose current facts are `facts`) was merged or closed, as the forge knows it:
   * a forge that records merges (GitHub) reports `merged`/`closed`; the git forge reports `merged`
   * when the PR's head or its changes are already contained in `targetBranch`. Optional: without
   * it the server relies on `facts.open` and on the merges it made itself. The server refuses to
   * submit a PR that is not `open` (400 naming the state).
   */
  landingState?(repo: Repo, prNumber: number, facts: PrFacts, targetBranch: string): Promise<PrLandingState>;
  /**
   * What the PR changes against `targetBranch` (the server's riskEstimate): the paths it
   * touches and its size (lines added plus removed). Optional: without it the risk model uses the
   * PR's impacted targets as its paths and a size of 0; null when it cannot be told.
   */
  changes?(repo: Repo, facts: PrFacts, targetBranch: string): Promise<PrChanges | null>;
}

/** The paths a PR touches and its size in lines (added + removed). */
export interface PrChanges {
  paths: string[];
  size: number;
}

/** A test commit, built and where the forge's CI can see it. */
export interface BuiltRun {
  branch: string;
  sha: string;
}

/**
 * Builds test commits. May throw MergeConflictError (a PR conflicts) or ChecksConfigError (the
 * repository cannot be tested): the server reports them as the run's start failure.
 */
export interface Builder {
  /** Builds (and publishes) the test commit of `run` on `basis`; null when `signal` aborted it. */
  build(queue: DriverQueue, run: TestRun, basis: TestBasis, signal: AbortSignal): Promise<BuiltRun | null>;
  /** One line naming what a conflicting PR conflicts with (default: the error's message). */
  describeFailure?(queue: DriverQueue, run: TestRun, error: unknown): Promise<string | undefined>;
  /**
   * The files the PRs of a built test commit change against the target (the flake-aware verdict
   * never ignores a failing test whose file a PR changes); null when it cannot be told.
   * Without it every failing test counts as changed by the PR (nothing is ignored or retried).
   */
  changedFiles?(queue: DriverQueue, run: TestRun, sha: string): Promise<string[] | null>;
}

/** The verdict of a run's checks. */
export interface CiVerdict {
  passed: boolean;
  checks: Record<string, 'success' | 'failure' | 'pending'>;
  reason?: 'TEST_RUN_REQUIRED_STATUS_FAILED' | 'TEST_RUN_TIMEOUT' | 'TEST_RUN_NO_CHECKS_REPORTED';
  /** One line for people when it did not pass. */
  detail?: string;
  /** The failing tests of every failed check, from their reports (the flake-aware verdict, engine/rules/flaky-verdict.ts). */
  failures?: FailedTest[];
}

/**
 * Where a driver that runs checks itself sends their test reports (stored as an upload for the
 * test commit), and what comes back: the failing tests, with what the flaky-test data says of each.
 */
export type TestResultsSink = (
  org: string,
  input: { repo: Repo; branch: string; sha: string; reports: { name: string; content: string }[] },
) => Promise<
  {
    id: string;
    name: string;
    file: string | null;
    classname: string | null;
    quarantined: boolean;
    flaky: boolean;
  }[]
>;

/** Runs or reads the checks of a test commit. */
export interface Ci {
  /**
   * The verdict on `sha` (the test commit of `run`); null when `signal` aborted it. `reattached`:
   * the commit was built before this server started (a restart, or another replica built it).
   */
  verdict(
    queue: DriverQueue,
    run: TestRun,
    sha: string,
    signal: AbortSignal,
    reattached: boolean,
  ): Promise<CiVerdict | null>;
  /** Where the output of a check of a run is kept (null: the run has no such check); drivers without logs leave it out. */
  logPath?(queue: DriverQueue, run: TestRun, check: string): string | null;
  /**
   * The checks seen so far of a run still waiting for its verdict (null: not waiting here, or
   * nothing read yet): what `getMergeQueueTestingDetails` shows while it tests.
   */
  progress?(queue: DriverQueue, run: TestRun): Record<string, 'success' | 'failure' | 'pending'> | null;
  /** A driver that runs checks and reads their test reports gets the flaky-test data here. */
  useTestResults?(sink: TestResultsSink): void;
}

/**
 * `refused`: a rule of the forge refused the landing while the target stayed where it was — the
 * run's PRs fail quoting `detail` (the forge's words), or with `pauseQueue` (the queue may not
 * push at all) the queue pauses and they land once it runs again. Never retried by itself.
 */
export type MergeOutcome =
  | 'merged'
  | 'target_moved'
  | 'error'
  | { refused: true; detail: string; pauseQueue: boolean };

/**
 * Lands tested commits. Must be idempotent: a merge that already landed is `merged` — also when
 * the attempt before threw after the forge had carried it out (it answered 502, or the connection
 * dropped after the push reached it): `land` is called again after a blip, and must then find that
 * out (and never land twice) before it moves anything.
 */
export interface Lander {
  land(queue: DriverQueue, run: TestRun, prNumbers: readonly number[]): Promise<MergeOutcome>;
  /**
   * Whether an error `land` threw is a blip worth trying again (the network, a 5xx, a rate limit):
   * what the forge answered, in a few words for people ("GitHub answered 502"); null when it is
   * not (a refusal, bad credentials, a bug): the run's PRs fail at once. Without it nothing is retried.
   */
  blip?(error: unknown): string | null;
}

/** An HTTP route of a driver, mounted by the server as is (e.g. `POST /webhooks/github`). */
export interface DriverRoute {
  method: 'POST';
  /** Outside /v1, e.g. `/webhooks/github`. */
  path: string;
  /**
   * Looks at the headers before any of the body is read: a refusal (a missing or malformed
   * signature, a wrong token, webhooks off) is answered at once and the body is never read.
   */
  checkHeaders?(
    headers: Readonly<Record<string, string | string[] | undefined>>,
  ): { status: number; text: string } | null;
  /** Gets the raw body (any content type, for signatures) and answers in plain text. */
  handle(request: {
    headers: Readonly<Record<string, string | string[] | undefined>>;
    body: string;
  }): Promise<{ status: number; text: string }>;
}

/** Changes made outside the queue. */
export interface Events {
  /** Starts watching (polling, webhook handling) for the queues the host drives. */
  start(host: DriverHost): void;
  routes?: readonly DriverRoute[];
}

/** What the forge shows of the queue. */
export interface Reporter {
  /** An entry changed state. */
  stateChanged(queue: DriverQueue, prNumber: number): void;
  /** A run's test commit was published as `branch`. */
  runStarted?(queue: DriverQueue, run: TestRun, branch: string): void;
  /**
   * The landing of `run` failed on a blip of the forge: `note` says, in one sentence, what the forge
   * answered and when it is tried again — shown on the run's PRs while they wait; or (`final`) that
   * it was given up: then shown with their failure.
   */
  landingNote?(queue: DriverQueue, run: TestRun, note: string, final: boolean): void;
}

/** One forge: its roles, and close() to stop timers and wait for work in flight. */
export interface ForgeDriver {
  /** Short name for logs, e.g. `sandbox`, `git`, `github`. */
  readonly kind: string;
  readonly source: Source;
  readonly builder: Builder;
  readonly ci: Ci;
  readonly lander: Lander;
  readonly events?: Events;
  readonly reporter?: Reporter;
  /** The forge's web pages (its description's `links`); absent: it has none, the server links to its dashboard. */
  readonly links?: ForgeLinks;
  /** What the server's credentials may not do in a repository, for `mq doctor` (optional: a forge that cannot tell). */
  readonly doctor?: ForgeDoctor;
  close(): Promise<void>;
}

/** One thing the forge's credentials may not do that the queue needs: its name (`push`, `statuses`, `rules`) and a sentence saying what to do. */
export interface ForgePermissionNotice {
  permission: string;
  text: string;
}

/** The doctor role: asks the forge what its credentials may do in a repository. */
export interface ForgeDoctor {
  permissions(repo: Repo, targetBranch: string): Promise<ForgePermissionNotice[]>;
}

/**
 * The web pages of a forge (src/server/links.ts builds every link from these). Null: the forge
 * has no page for it (the server links to its dashboard's page instead).
 */
export interface ForgeLinks {
  /** A repository's page. */
  repository(repo: Repo): string | null;
  /** A pull request's page. */
  pr(repo: Repo, prNumber: number): string | null;
  /** The page of `path` (relative to the repository's root, `/`-separated) at `ref` (a commit, or `HEAD`). */
  file(repo: Repo, ref: string, path: string): string | null;
}

/** What every driver may use. */
export interface DriverCommon {
  /** The server's data directory (caches, check logs, driver state). */
  dataDir: string;
  /** How often repositories are polled (ms), for drivers that poll and have no setting of their own. */
  pollMs?: number;
  log?: (message: string, error?: unknown) => void;
}

/**
 * One `railyard serve` flag of a forge: what oclif's `Flags.boolean/string/integer` take, with the
 * type. `serve` makes the oclif flag; the flag that picks a forge excludes every other forge's.
 */
export type ForgeFlag = { description: string; helpValue?: string } & (
  | { type: 'boolean'; default?: boolean }
  | { type: 'string'; default?: string; options?: string[] }
  | { type: 'integer'; default?: number; min?: number; max?: number }
);

/** What a forge's settings parser may use besides its flags. */
export interface SettingsContext {
  /** The environment (secrets are taken out of it once read). */
  env: NodeJS.ProcessEnv;
  /** The server's data directory. */
  dataDir: string;
  /** Files of `serve`'s own secrets (token files): never shown to code that runs on the server's behalf. */
  secretFiles: string[];
  /** Prints a warning line on stderr. */
  warn(line: string): void;
}

/**
 * A forge as `railyard serve` and the server know it, from its folder (`description.ts`, which
 * imports no SDK and none of its folder's modules at start; src/forge/registry.ts lists them).
 */
export interface ForgeDescription<Settings = unknown> {
  /** The driver's kind (`ForgeDriver.kind`, the folder's name), e.g. `github`. */
  readonly kind: string;
  /** The flag that picks this forge, one of `flags` (a boolean, or a value such as `--git-root DIR`). */
  readonly picker: string;
  /** How `serve` names it when no forge is picked, e.g. `--github (repositories on GitHub)`. */
  readonly hint: string;
  /** Its `serve` flags, by name. */
  readonly flags: Readonly<Record<string, ForgeFlag>>;
  /** Examples of `serve` with it, for `serve --help` (`<%= config.bin %>` is the binary's name). */
  readonly examples?: readonly { description: string; command: string }[];
  /** Its settings from `serve`'s parsed flags; throws an Error whose message is one line naming the flag. */
  settings(flags: Readonly<Record<string, unknown>>, context: SettingsContext): Promise<Settings>;
  /** The lines `serve` prints once listening at `url` (`http://host:port`), after its own. */
  startup?(settings: Settings, url: string): string[];
  /** Its web pages; absent: it has none (the server links to its dashboard). */
  links?(settings: Settings): ForgeLinks;
  /** The driver (its modules imported only now). */
  driver(settings: Settings, common: DriverCommon): Promise<ForgeDriver>;
}
