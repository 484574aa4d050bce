import { run } from './main.js';

// The runner starts this file; run() reports failures through core.setFailed.
void run();
