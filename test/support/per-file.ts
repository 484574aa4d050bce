/** Vitest setup file, run before every test file: what each file must get whether or not files share a worker. */
import { afterAll } from 'vitest';
import { removeTempDirs } from './tmp.js';

// The temp dirs a file made with test/support/tmp.ts go when the file's tests are done. Registered
// here and not in tmp.ts: test files share a worker's modules (vitest.config.ts, `isolate: false`),
// so tmp.ts runs once per worker, while a setup file runs again for every file.
afterAll(removeTempDirs);
