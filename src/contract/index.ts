/** The wire contract in one import: schemas, the route table, constants, error codes. */
export * from './branch-name.js';
export * from './common.js';
export * from './mq.js';
export * from './mq-extensions.js';
export * from './mq-reads.js';
export * from './flaky.js';
export * from './routes.js';
export * from './errors.js';
export * from './queues.js';
export * from './doctor.js';
export * from './json-depth.js';
export * from './webhooks.js';
export * from './permissions.js';
export { ROUTE_PATHS, type RoutedOperation } from './paths.js';
