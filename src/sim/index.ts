export * from './bounds.js';
export * from './simulate.js';
