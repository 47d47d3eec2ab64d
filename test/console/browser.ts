import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import type { Page } from 'playwright-core'
import { AxeBuilder } from '@axe-core/playwright'
import { defaultConsoleDir } from '../../plugins/console.js'

/** What the console's browser tests share: Debian's Chromium, a built console, a poll for what the browser sent. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** The console is built by `npm ci` (prepare); a tree that skipped it is built here the same way. */
export async function ensureConsoleBuilt (): Promise<void> {
  if (!existsSync(join(defaultConsoleDir(), 'index.html'))) await promisify(execFile)('npm', ['run', 'build:console'])
}

/** Polls until `done` holds (what the browser just sent may still be on its way to the server). */
export async function waitUntil (done: () => Promise<boolean>): Promise<void> {
  for (let round = 0; round < 100; round++) {
    if (await done()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('the condition never held')
}

/** Nothing may leave loopback: every request's host is recorded (the set answered), and any other host is refused. */
export async function keepOnLoopback (page: Page): Promise<Set<string>> {
  const hosts = new Set<string>()
  await page.route('**/*', async (route) => {
    const { hostname } = new URL(route.request().url())
    hosts.add(hostname)
    if (hostname === '127.0.0.1') await route.continue()
    else await route.abort('blockedbyclient')
  })
  return hosts
}

/**
 * Each screen as a person meets it: its heading shown, a numbered screenshot
 * into `folder`, and no serious or critical axe-core violation on it.
 */
export function screenRecorder (page: Page, folder: string): { screen: (t: Test, name: string, heading: string | RegExp) => Promise<void>, readonly count: number } {
  let shot = 0
  return {
    get count () { return shot },
    async screen (t, name, heading) {
      await page.getByRole('heading', { level: 1, name: heading }).waitFor()
      await page.screenshot({ path: join(folder, `${String(++shot).padStart(2, '0')}-${name}.png`), fullPage: true })
      const { violations } = await new AxeBuilder({ page }).analyze()
      const grave = violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      t.same(grave.map((violation) => `${violation.id}: ${violation.help}`), [], `${name}: no serious or critical axe violation`)
    }
  }
}
