import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
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
