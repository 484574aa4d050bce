export * from './branch-name.js';
export * from './common.js';
export * from './mq.js';
export * from './flaky.js';
export * from './routes.js';
export * from './errors.js';
export * from './queues.js';
export * from './json-depth.js';
