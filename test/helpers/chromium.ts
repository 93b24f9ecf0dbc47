import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM_PATH } from './env.js';

/**
 * Debian's Chromium, headless, with everything that would reach off the machine switched off
 * (this machine has no network beyond the package registries). `extraArgs` adds to them.
 */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-quic',
      '--disable-sync',
      ...extraArgs,
    ],
  });
}
