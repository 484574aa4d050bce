export * from './types.js';
export * from './step.js';
