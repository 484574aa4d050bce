export { openStore, hashToken, impactedTargetsKey, Store, SQLITE_FILE, TOKEN_ID_LENGTH } from './store.js';
export type { Db, StoreOptions, StoredQueue, ImpactedTargetsWrite, TokenInfo } from './store.js';
export type { SchemaTables } from './schema.js';
export { migrations } from './migrations/index.js';
