/**
 * The server's wiring, apart from HTTP: composeServer builds the services over the store (queues,
 * flaky tests, outgoing webhooks, tokens, repository owners), the webhook deliverer, the report
 * readers and the sweeper announcing quarantine overrides that ended, hands the queue service to
 * the workers once, and says how to start and stop them in order. app.ts mounts the routes over
 * what it returns.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { ForgeDriver } from '../forge/types.js';
import type { Store } from '../store/index.js';
import { TokenAuth } from './access/auth.js';
import { builtWorkerFile, reportReaderPool } from './flaky/report-reader.js';
import { PageTokens } from './flaky/page-tokens.js';
import { DEFAULT_LAPSE_SWEEP_MS, LapseSweeper } from './flaky/lapses.js';
import { FlakyService } from './flaky/service.js';
import { DatabaseHealth, DEFAULT_HEALTH, type HealthOptions } from './health.js';
import { serverLinks, type Links } from './links.js';
import { RepoOwners, type OrgRepoPin } from './access/ownership.js';
import type { Replicas } from './queue/replicas.js';
import { DEFAULT_LIMITS, QueueService, type EffectHandler, type ServerLimits } from './queue/service.js';
import type { QueueWorkers } from './queue/workers.js';
import { Deliverer, type WebhookOptions } from './webhooks/deliverer.js';
import { DelivererThread, delivererWorkerFile, type DelivererHandle } from './webhooks/deliverer-thread.js';
import { queueEventBuilder } from './webhooks/events.js';
import { WebhookService } from './webhooks/service.js';

/** What the wiring takes: the parts of ServerDeps (app.ts) that are not about HTTP. */
export interface ComposeDeps {
  store: Store;
  /** The forge driver (src/forge/registry.ts): PR facts for the API; with `workers`, everything else. */
  driver: ForgeDriver;
  /** Where engine effects are carried out (test runs, merges); see QueueService. */
  onEffects?: EffectHandler;
  /** The queue workers driving `driver`: run tests, merge, tick; closed with the server. */
  workers?: QueueWorkers;
  /** The clock (tests and the simulator may pass their own). */
  now?: () => number;
  /**
   * The worker entry that reads flaky-test reports off the request thread: default the built one
   * (builtWorkerFile); `false`, or none found (running from sources), reads them on the request thread.
   */
  reportWorker?: string | false;
  /**
   * The webhook deliverer's worker entry, for an SQLite file (default: `deliverer-worker.js` next to
   * the built server, delivererWorkerFile); `false`, or none found (running from sources), delivers
   * on the request thread.
   */
  delivererWorker?: string | false;
  /** `serve --org-repos`: repositories pinned to organisations (decisions "Trust"). */
  orgRepos?: readonly OrgRepoPin[];
  /** Several replicas on one PostgreSQL database: leases and change notifications (see replicas.ts). */
  replicas?: Replicas;
  /** Limits per organisation and per queue; unset ones are DEFAULT_LIMITS. */
  limits?: Partial<ServerLimits>;
  /** How `/v1/status` probes the database; unset ones are DEFAULT_HEALTH. */
  health?: Partial<HealthOptions>;
  /** Outgoing webhooks: address rules, the dashboard's public URL, retry timing (default: https only, public addresses only). */
  webhooks?: Partial<WebhookOptions>;
  /** How often quarantine overrides whose end has come are looked for and announced (ms); default 30 s. */
  lapseSweepMs?: number;
}

/** Where the wiring logs, and the address the server listens on (the dashboard's URL in links). */
export interface ComposeHost {
  log: FastifyBaseLogger;
  address: () => AddressInfo | string | null;
}

/** The services a server's routes are mounted over, and the order they start and stop in. */
export interface ServerParts {
  now: () => number;
  service: QueueService;
  flaky: FlakyService;
  webhooks: WebhookService;
  auth: TokenAuth;
  health: DatabaseHealth;
  pageTokens: PageTokens;
  links: Links;
  /** Starts the deliverer, hands the service to the workers (they re-attach to what was in flight), then the replicas and the lapse sweeper. */
  start(): Promise<void>;
  /** Stops the lapse sweeper, hands the leases back (another replica takes the queues at once), then stops the workers, the writers, the deliverer and the readers. */
  close(): Promise<void>;
}

export async function composeServer(deps: ComposeDeps, host: ComposeHost): Promise<ServerParts> {
  const now = deps.now ?? Date.now;
  const { log } = host;
  const health = new DatabaseHealth(() => deps.store.ping(), Date.now, { ...DEFAULT_HEALTH, ...deps.health });
  const auth = new TokenAuth(deps.store, now, (error) =>
    log.error({ err: error }, 'could not record when a token was last used'),
  );
  await auth.reload();
  const owners = await RepoOwners.load(deps.store, deps.orgRepos);
  const pageTokens = await PageTokens.load(deps.store);
  // Outgoing webhooks: queue steps write their events to the outbox; the deliverer sends them.
  const webhookOptions: WebhookOptions = { allowPrivate: false, allowHttp: false, ...deps.webhooks };
  const dashboardUrl = () => {
    if (webhookOptions.publicUrl) return webhookOptions.publicUrl;
    const address = host.address();
    if (!address || typeof address === 'string') return 'http://127.0.0.1';
    const ip = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${ip}:${address.port}`;
  };
  // Every link to a PR, repository or test: the forge's page, else the dashboard's (src/server/links.ts).
  const links = serverLinks(deps.driver.links, dashboardUrl);
  const service = await QueueService.load({
    store: deps.store,
    // Outgoing webhooks: each committed queue step writes its events to the outbox with it.
    queueEvents: queueEventBuilder(dashboardUrl, links.forgePr),
    forge: deps.driver,
    owners,
    onEffects: deps.onEffects ?? deps.workers?.handle,
    now,
    log: (message, error) => log.error({ err: error }, message),
    replicas: deps.replicas,
    limits: { ...DEFAULT_LIMITS, ...deps.limits },
    events: log,
  });
  // On an SQLite file the deliverer runs on its own thread and connection (deliverer-thread.ts).
  const delivererFile =
    deps.store.sqliteFile && deps.delivererWorker !== false
      ? (deps.delivererWorker ?? delivererWorkerFile())
      : undefined;
  const deliverer: DelivererHandle =
    delivererFile && deps.store.sqliteFile
      ? new DelivererThread(delivererFile, deps.store.sqliteFile, deps.store.webhooks, webhookOptions, log)
      : new Deliverer(deps.store.webhooks, webhookOptions, log);
  const webhooks = new WebhookService(deps.store, webhookOptions, now);
  const workerFile = deps.reportWorker ?? builtWorkerFile();
  const reports = workerFile
    ? reportReaderPool(workerFile, {
        onBroken: (error) =>
          log.error(
            { err: error },
            'flaky-test report workers failed; reading reports on the request thread',
          ),
      })
    : undefined;
  const flaky = new FlakyService(deps.store, now, reports?.read, links, webhookOptions.tickets);
  // Quarantine overrides that end are announced by an outgoing webhook event when they end.
  const lapses = new LapseSweeper(
    deps.store.flaky,
    now,
    links,
    deps.lapseSweepMs ?? DEFAULT_LAPSE_SWEEP_MS,
    (error) =>
      log.warn(
        { err: error },
        'could not announce quarantine overrides that ended; trying again at the next sweep',
      ),
  );

  return {
    now,
    service,
    flaky,
    webhooks,
    auth,
    health,
    pageTokens,
    links,
    async start() {
      await deliverer.start();
      // The one hand-over to the workers: the service, and the flaky-test data that gives a run's failing tests.
      deps.workers?.attach(service, flaky);
      await deps.replicas?.start(service, deps.workers);
      lapses.start();
    },
    async close() {
      await lapses.close();
      await deps.replicas?.close();
      await deps.workers?.close();
      await service.writer.drain();
      await deliverer.close();
      await reports?.close();
    },
  };
}
