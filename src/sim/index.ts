/** `railyard sim` in one import: the simulation, its options and the report. */
export * from './bounds.js';
export * from './simulate.js';
