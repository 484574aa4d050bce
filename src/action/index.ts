/** The GitHub Action's entry point (bundled into dist/index.js): runs the Action. */
import { run } from './main.js';

// The runner starts this file; run() reports failures through core.setFailed.
void run();
