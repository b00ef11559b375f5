import fs from 'node:fs';

/**
 * Headless Chromium for browser tests: Debian's `chromium` package driven by
 * playwright-core (no browser download). Without the binary the tests are
 * skipped with the reason, unless FLOWGATE_REQUIRE_BROWSER=1 makes its
 * absence a failure (CI machines that must run them).
 */

export const CHROMIUM_PATH = process.env.FLOWGATE_CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why browser tests cannot run here, or undefined when they can. Throws when a browser is required and absent. */
export function browserUnavailable(): string | undefined {
  if (fs.existsSync(CHROMIUM_PATH)) return undefined;
  const reason = `no Chromium at ${CHROMIUM_PATH} (install Debian's chromium package, or set FLOWGATE_CHROMIUM_PATH)`;
  if (process.env.FLOWGATE_REQUIRE_BROWSER === '1') throw new Error(`FLOWGATE_REQUIRE_BROWSER=1 but ${reason}`);
  return reason;
}

export async function launchChromium() {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--no-sandbox'], headless: true });
}
