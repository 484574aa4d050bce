/** The store in one import: openStore, Store and the other stores, their types and migrations. */
export { openStore, hashToken, impactedTargetsKey, isPostgresUrl, LeaseLostError, QUEUE_CHANNEL, Store, SQLITE_FILE, TOKEN_ID_LENGTH } from './store.js';
export type { Db, Fence, QueueTransaction, StoreKind, StoreOptions, StoredQueue, ImpactedTargetsWrite, TokenInfo, PrTransition } from './store.js';
export type { SchemaTables } from './schema.js';
export { migrations } from './migrations/index.js';
export { isDatabaseBusy, isDatabaseUnavailable, openDatabase, redactUrl } from './database.js';
export { ForgeEventsStore } from './forge-events.js';
export { openDelivererStore, sharedWriteLock, type DelivererStore, type WriteLock } from './deliverer-store.js';
export type { ForgeEventKind } from './forge-events.js';
export { dueHeads, endpointWants, publicEndpoint, WebhookStore } from './webhooks.js';
export type {
  AttemptOutcome,
  AttemptResult,
  AttemptRecord,
  ClaimedDelivery,
  DeliveryRecord,
  DeliveryState,
  EndpointKind,
  EndpointSecrets,
  EndpointState,
  OutboxEvent,
  QueueEventBuilder,
  QueueIdentity,
  WebhookEndpoint,
} from './webhooks.js';
export { RiskStore, RISK_FAILURE_REASONS } from './risk.js';
export type { RiskOutcome, RiskSubmissionFacts } from './risk.js';
