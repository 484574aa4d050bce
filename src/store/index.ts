/** The store in one import: openStore, Store and its parts, their types and migrations. */
export { openStore, Store, type StoreExtras } from './store.js';
export { isPostgresUrl, SQLITE_FILE, type Db, type StoreKind, type StoreOptions } from './connect.js';
export { AccountStore, hashToken, TOKEN_ID_LENGTH, type StoredToken, type TokenInfo } from './accounts.js';
export { QueueStore, type QueueTransaction } from './queues.js';
export { impactedTargetsKey, LeaseLostError, QUEUE_CHANNEL } from './queue-rows.js';
export type { Fence, ImpactedTargetsWrite, PrTransition, StoredQueue } from './queue-rows.js';
export type { SchemaTables } from './schema.js';
export { migrations } from './migrations/index.js';
export { isDatabaseBusy, isDatabaseUnavailable, openDatabase, redactUrl } from './database.js';
export { ForgeEventsStore } from './forge-events.js';
export {
  openDelivererStore,
  sharedWriteLock,
  type DelivererStore,
  type WriteLock,
} from './deliverer-store.js';
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
export { TICKET_EVENT, ticketLineId, TicketStore } from './tickets.js';
export type { LastFailure, TicketRow, TicketState } from './tickets.js';
