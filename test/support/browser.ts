/** Tests' browser: Chromium driven by playwright-core for the dashboard tests. */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium (apt-get install chromium); RAILYARD_CHROMIUM names another binary. */
export const CHROMIUM = process.env.RAILYARD_CHROMIUM ?? '/usr/bin/chromium';

/** Why browser tests cannot run here, or null when they can. */
export function browserMissing(): string | null {
  return existsSync(CHROMIUM)
    ? null
    : `${CHROMIUM} is missing (apt-get install chromium, or set RAILYARD_CHROMIUM)`;
}

/** Headless Chromium as CI runs it: no sandbox (containers), no GPU, no network of its own. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}
