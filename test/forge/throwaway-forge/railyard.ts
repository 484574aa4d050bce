/**
 * `railyard` with the throwaway forge registered: the one line a forge of this build has in
 * src/forge/registry.ts, made here (the built registry, the one the built `serve` reads), then the
 * real binary. Run with `node --import tsx test/forge/throwaway-forge/railyard.ts serve …`.
 */
import { throwaway } from './description.js';

const registry = new URL('../../../build/forge/registry.js', import.meta.url).href;
const { registerForge } = (await import(registry)) as typeof import('../../../src/forge/registry.js');
registerForge(throwaway);
await import(new URL('../../../bin/run.js', import.meta.url).href);
