/**
 * The forge side of a server: the driver of the forge chosen (src/forge/registry.ts) and the queue
 * workers that hand the engine's effects to it.
 */
import { createDriver, type ForgeChoice } from '../forge/registry.js';
import type { ForgeDriver } from '../forge/types.js';
import { QueueWorkers } from './queue/workers.js';

export interface BackendOptions {
  dataDir: string;
  /** The forge and its settings; default: the sandbox with its defaults. */
  forge?: ForgeChoice;
  /** Clock ticks and repository polls (ms); default 1000 / 500. */
  tickMs?: number;
  pollMs?: number;
  /** How long a landing that failed on a blip of the forge is tried again (ms; default 10 minutes, 0: never). */
  landingRetryMs?: number;
  log?: (message: string, error?: unknown) => void;
}

/** Where PRs come from and who runs tests and merges: the driver, and the workers driving it. */
export async function createBackend(options: BackendOptions): Promise<{ driver: ForgeDriver; workers: QueueWorkers }> {
  const driver = await createDriver(options.forge, { dataDir: options.dataDir, pollMs: options.pollMs, log: options.log });
  return { driver, workers: new QueueWorkers(driver, { tickMs: options.tickMs, log: options.log, landingRetryMs: options.landingRetryMs }) };
}
