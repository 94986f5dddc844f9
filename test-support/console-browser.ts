/**
 * The operator console in a browser, for the end-to-end tests and the console bench: Debian's
 * Chromium (`/usr/bin/chromium`, installed by scripts/setup.sh) driven by playwright-core — never
 * a downloaded browser. Screenshots go to `.tmp/console-screenshots/` for a person to look at.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

export const CONSOLE_SHOTS = join(process.cwd(), ".tmp", "console-screenshots");
const CHROMIUM = "/usr/bin/chromium";

/** Headless Chromium with the options every console test uses. */
export async function launchChromium(): Promise<Browser> {
  mkdirSync(CONSOLE_SHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
  });
}

/** Open `/console` at `url` and log in with `token`; resolves once the live view shows. */
export async function loginConsole(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/console`);
  await page.fill('input[name="token"]', token);
  await page.click('button[type="submit"]');
  await page.waitForSelector('[data-testid="live"]');
}

/** A short hash of the bytes of the image an `<img>` shows now ("" when there is none). */
export async function shownImage(page: Page, selector: string): Promise<string> {
  return page.evaluate(async (sel) => {
    // runs in the page
    const img = (
      globalThis as unknown as { document: { querySelector(s: string): { src?: string } | null } }
    ).document.querySelector(sel);
    if (!img?.src) return "";
    const buf = await (await fetch(img.src)).arrayBuffer();
    let hash = 0;
    for (const b of new Uint8Array(buf)) hash = (hash * 31 + b) >>> 0;
    return `${buf.byteLength}:${hash}`;
  }, selector);
}

/** The text of an element ("" when absent). */
export async function textOf(page: Page, selector: string): Promise<string> {
  return (
    (await page
      .locator(selector)
      .first()
      .textContent({ timeout: 1000 })
      .catch(() => null)) ?? ""
  );
}

/** Save a screenshot of the whole page as `.tmp/console-screenshots/<name>.png`. */
export async function shot(page: Page, name: string): Promise<string> {
  const path = join(CONSOLE_SHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
