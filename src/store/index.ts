export { openStore, hashToken, impactedTargetsKey, Store, SQLITE_FILE } from './store.js';
export type { Db, StoreOptions, StoredQueue, ImpactedTargetsWrite, PrTransition } from './store.js';
export type { SchemaTables } from './schema.js';
export { migrations } from './migrations/index.js';
